package checkpoint

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training/checkpoint/safetensors"
	"github.com/sfsweep/sfsweep/training/model"
)

// special32 are float32 bit patterns a checkpoint must keep exactly: signed zeros,
// infinities, quiet and signalling NaNs with payloads, subnormals, the extremes.
var special32 = []uint32{
	0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffc00123,
	0x00000001, 0x007fffff, 0x80000001, 0x00800000, 0x7f7fffff, 0xff7fffff, 0x3f800000,
}

// special64 are float64 bit patterns the optimizer scalars must keep exactly.
var special64 = []uint64{
	0x0000000000000000, 0x8000000000000000, 0x7ff0000000000000, 0xfff0000000000000,
	0x7ff8000000000000, 0x7ff0000000000001, 0xfff8000000000abc, 0x0000000000000001,
	0x000fffffffffffff, 0x8000000000000001, 0x0010000000000000, 0x7fefffffffffffff,
	0x3fb999999999999a, // 0.1
	0x3ff0000000000001, // 1 + ulp
}

// nano and nanoGPT2 are models of a few dozen parameters, for small files to fuzz.
var (
	nano     = model.Config{Arch: model.LLaMA, Vocab: 4, Dim: 2, Layers: 1, Heads: 1, Context: 2, Hidden: 2, Batch: 1}.WithDefaults()
	nanoGPT2 = model.Config{Arch: model.GPT2, Vocab: 4, Dim: 2, Layers: 1, Heads: 1, Context: 2, Hidden: 8, Batch: 1}.WithDefaults()
)

func mustPreset(t testing.TB, name string) model.Config {
	t.Helper()
	switch name {
	case "nano":
		return nano
	case "nano-gpt2":
		return nanoGPT2
	}
	c, err := model.Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// filled returns n float32s: the special values first, then a deterministic sequence.
func filled(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]float32, n)
	for i := range out {
		if i < len(special32) {
			out[i] = math.Float32frombits(special32[(i+int(seed))%len(special32)])
		} else {
			out[i] = float32(r.NormFloat64())
		}
	}
	return out
}

// sample returns a checkpoint of preset at step with every kind of content: parameters,
// an SF-AdamW state with special scalars, an EWA state, a plain and an empty vector, and
// a JSON state.
func sample(t testing.TB, preset string, step int64) *Checkpoint {
	t.Helper()
	cfg := mustPreset(t, preset)
	n := cfg.NumParams()
	c := &Checkpoint{
		Step:   step,
		Model:  cfg,
		Params: filled(n, uint64(step)+1),
		State:  json.RawMessage(`{"data":{"epoch":1,"offset":123456789012},"rng":[1,2,3],"hash":"abc"}`),
	}
	opt := sfadamw.State[float32]{
		Algorithm: "sfadamw", Step: step,
		SumLR2: math.Float64frombits(special64[5]), MaxLR: 2e-3,
		LastLR: math.Float64frombits(special64[8]), LastC: math.Copysign(0, -1),
		Vectors: []sfadamw.Vector[float32]{{Name: "z", Data: filled(n, 11)}, {Name: "v", Data: filled(n, 12)}},
	}
	if err := c.PutOptimizer("opt", opt); err != nil {
		t.Fatal(err)
	}
	ewa := sfadamw.State[float32]{Algorithm: "ewa", Step: 3, Vectors: []sfadamw.Vector[float32]{{Name: "ewa", Data: filled(n, 13)}}}
	if err := c.PutOptimizer("ewa-x", ewa); err != nil {
		t.Fatal(err)
	}
	c.Vectors = append(c.Vectors, Vector{Name: "probe", Data: filled(17, 14)}, Vector{Name: "empty", Data: []float32{}})
	return c
}

func sameBits32(a, b []float32) error {
	if len(a) != len(b) {
		return fmt.Errorf("length %d, want %d", len(a), len(b))
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return fmt.Errorf("[%d] = %#08x, want %#08x", i, math.Float32bits(a[i]), math.Float32bits(b[i]))
		}
	}
	return nil
}

// sameCheckpoint compares two checkpoints field by field, bit for bit.
func sameCheckpoint(got, want *Checkpoint) error {
	if got.Step != want.Step {
		return fmt.Errorf("step %d, want %d", got.Step, want.Step)
	}
	if got.Model != want.Model {
		return fmt.Errorf("model %+v, want %+v", got.Model, want.Model)
	}
	if err := sameBits32(got.Params, want.Params); err != nil {
		return fmt.Errorf("params: %v", err)
	}
	if len(got.Vectors) != len(want.Vectors) {
		return fmt.Errorf("%d vectors, want %d", len(got.Vectors), len(want.Vectors))
	}
	for _, w := range want.Vectors {
		g, ok := got.vector(w.Name)
		if !ok {
			return fmt.Errorf("no vector %q", w.Name)
		}
		if err := sameBits32(g, w.Data); err != nil {
			return fmt.Errorf("vector %q: %v", w.Name, err)
		}
	}
	if !bytes.Equal(got.State, want.State) {
		return fmt.Errorf("state %s, want %s", got.State, want.State)
	}
	if !slices.Equal(got.OptimizerNames(), want.OptimizerNames()) {
		return fmt.Errorf("optimizers %v, want %v", got.OptimizerNames(), want.OptimizerNames())
	}
	for _, name := range want.OptimizerNames() {
		g, err1 := got.Optimizer(name)
		w, err2 := want.Optimizer(name)
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		if err := sameState(g, w); err != nil {
			return fmt.Errorf("optimizer %q: %v", name, err)
		}
	}
	return nil
}

func sameState(g, w sfadamw.State[float32]) error {
	if g.Algorithm != w.Algorithm || g.Step != w.Step {
		return fmt.Errorf("%s step %d, want %s step %d", g.Algorithm, g.Step, w.Algorithm, w.Step)
	}
	for _, s := range []struct {
		name string
		g, w float64
	}{{"SumLR2", g.SumLR2, w.SumLR2}, {"MaxLR", g.MaxLR, w.MaxLR}, {"LastLR", g.LastLR, w.LastLR}, {"LastC", g.LastC, w.LastC}} {
		if math.Float64bits(s.g) != math.Float64bits(s.w) {
			return fmt.Errorf("%s = %#016x, want %#016x", s.name, math.Float64bits(s.g), math.Float64bits(s.w))
		}
	}
	if len(g.Vectors) != len(w.Vectors) {
		return fmt.Errorf("%d vectors, want %d", len(g.Vectors), len(w.Vectors))
	}
	for i := range w.Vectors {
		if g.Vectors[i].Name != w.Vectors[i].Name {
			return fmt.Errorf("vector %d is %q, want %q", i, g.Vectors[i].Name, w.Vectors[i].Name)
		}
		if err := sameBits32(g.Vectors[i].Data, w.Vectors[i].Data); err != nil {
			return fmt.Errorf("vector %q: %v", w.Vectors[i].Name, err)
		}
	}
	return nil
}

// TestRoundTrip encodes and decodes checkpoints of both architectures and checks that
// everything comes back bit for bit, through the memmove path and the portable loops
// alike, and that both paths write the same bytes.
func TestRoundTrip(t *testing.T) {
	for _, preset := range []string{"micro-llama", "micro-gpt2"} {
		t.Run(preset, func(t *testing.T) {
			c := sample(t, preset, 1234)
			enc, err := c.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if size, err := c.EncodedSize(); err != nil || size != len(enc) {
				t.Errorf("EncodedSize = %d, %v; Encode wrote %d bytes", size, err, len(enc))
			}
			for _, native := range []bool{true, false} {
				old := littleEndian
				littleEndian = native && old
				got, err := Decode(enc)
				var alias *Checkpoint
				if err == nil {
					alias, err = decode(slices.Clone(enc), true)
				}
				var again []byte
				if err == nil {
					again, err = c.Encode()
				}
				littleEndian = old
				if err != nil {
					t.Fatal(err)
				}
				if err := sameCheckpoint(got, c); err != nil {
					t.Errorf("memmove path %v: Decode: %v", native, err)
				}
				if err := sameCheckpoint(alias, c); err != nil {
					t.Errorf("memmove path %v: decode with alias: %v", native, err)
				}
				if !bytes.Equal(again, enc) {
					t.Errorf("memmove path %v: Encode wrote different bytes", native)
				}
			}
		})
	}
}

// TestDecodeCopies checks that Decode does not keep the bytes it was given, and that the
// aliasing decode used by Load does share them (so a 1.5 GB checkpoint is not copied).
func TestDecodeCopies(t *testing.T) {
	enc, err := sample(t, "micro-llama", 1).Encode()
	if err != nil {
		t.Fatal(err)
	}
	c, err := Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	a, err := decode(enc, true)
	if err != nil {
		t.Fatal(err)
	}
	before := math.Float32bits(c.Params[100])
	clear(enc)
	if math.Float32bits(c.Params[100]) != before {
		t.Error("Decode's parameters change with the bytes it decoded")
	}
	if littleEndian && a.Params[100] != 0 {
		t.Error("the aliasing decode copied the parameters")
	}
}

// specTensor is a header entry, read by the test's own reading of the format.
type specTensor struct {
	DType       string   `json:"dtype"`
	Shape       []int    `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// TestFileFollowsSpec reads an encoded checkpoint with a reading of the safetensors spec
// written here, independently of the package: the 8-byte length, the space-padded JSON
// header, one F32 tensor per Layout entry with its name and shape, offsets tiling the
// buffer, and little-endian data equal to the parameters.
func TestFileFollowsSpec(t *testing.T) {
	for _, preset := range []string{"micro-llama", "micro-gpt2", "tiny-llama"} {
		t.Run(preset, func(t *testing.T) {
			c := sample(t, preset, 5)
			file, err := c.Encode()
			if err != nil {
				t.Fatal(err)
			}
			n := int64(binary.LittleEndian.Uint64(file[:8]))
			if n%8 != 0 || 8+n > int64(len(file)) {
				t.Fatalf("header length %d: not a multiple of 8 or past the file (%d bytes)", n, len(file))
			}
			header := file[8 : 8+n]
			trimmed := bytes.TrimRight(header, " ")
			if len(header)-len(trimmed) >= 8 || trimmed[len(trimmed)-1] != '}' || header[0] != '{' {
				t.Fatalf("header is not a JSON object padded with fewer than 8 spaces: %q…%q", header[:10], header[len(header)-10:])
			}
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(header, &raw); err != nil {
				t.Fatal(err)
			}
			var meta map[string]string
			if err := json.Unmarshal(raw["__metadata__"], &meta); err != nil {
				t.Fatal(err)
			}
			if meta["format"] != "pt" || meta["sfsweep.step"] != "5" || meta["sfsweep.version"] != "1" {
				t.Errorf("metadata = %v", meta)
			}
			delete(raw, "__metadata__")
			buf := file[8+n:]
			tensors := map[string]specTensor{}
			var spans [][2]int64
			for name, r := range raw {
				var st specTensor
				if err := json.Unmarshal(r, &st); err != nil {
					t.Fatalf("tensor %q: %v", name, err)
				}
				tensors[name] = st
				elems := int64(1)
				for _, d := range st.Shape {
					elems *= int64(d)
				}
				if st.DType != "F32" || st.DataOffsets[1]-st.DataOffsets[0] != 4*elems {
					t.Errorf("tensor %q: %s %v at %v", name, st.DType, st.Shape, st.DataOffsets)
				}
				spans = append(spans, st.DataOffsets)
			}
			slices.SortFunc(spans, func(a, b [2]int64) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
			end := int64(0)
			for _, s := range spans {
				if s[0] != end {
					t.Fatalf("span %v does not start where the previous ended (%d)", s, end)
				}
				end = s[1]
			}
			if end != int64(len(buf)) {
				t.Fatalf("spans end at %d, the buffer has %d bytes", end, len(buf))
			}
			l := cfgLayout(c.Model)
			for _, lt := range l.Tensors {
				st, ok := tensors[lt.Name]
				if !ok {
					t.Fatalf("no tensor %q", lt.Name)
				}
				if !slices.Equal(st.Shape, lt.Shape) {
					t.Errorf("tensor %q: shape %v, Layout has %v", lt.Name, st.Shape, lt.Shape)
				}
				for i := 0; i < lt.Size; i += 1 + lt.Size/5 {
					bits := binary.LittleEndian.Uint32(buf[st.DataOffsets[0]+4*int64(i):])
					if want := math.Float32bits(c.Params[lt.Offset+i]); bits != want {
						t.Fatalf("tensor %q element %d = %#08x, want %#08x", lt.Name, i, bits, want)
					}
				}
				delete(tensors, lt.Name)
			}
			want := []string{"state.empty", "state.ewa-x.ewa", "state.opt.v", "state.opt.z", "state.probe"}
			var rest []string
			for name, st := range tensors {
				rest = append(rest, name)
				if len(st.Shape) != 1 {
					t.Errorf("vector %q: shape %v, want 1-D", name, st.Shape)
				}
			}
			slices.Sort(rest)
			if !slices.Equal(rest, want) {
				t.Errorf("other tensors = %v, want %v", rest, want)
			}
			z := tensors["state.opt.z"]
			for i, v := range c.Vector("opt.z") {
				if bits := binary.LittleEndian.Uint32(buf[z.DataOffsets[0]+4*int64(i):]); bits != math.Float32bits(v) {
					t.Fatalf("state.opt.z[%d] = %#08x, want %#08x", i, bits, math.Float32bits(v))
				}
			}
		})
	}
}

func cfgLayout(c model.Config) model.Layout { return c.Layout() }

// TestDeterministic checks that equal checkpoints encode to equal bytes, also after a
// decode, and that the encoding does not depend on map iteration order.
func TestDeterministic(t *testing.T) {
	a, err := sample(t, "micro-gpt2", 9).Encode()
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		b, err := sample(t, "micro-gpt2", 9).Encode()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatal("two encodings of the same checkpoint differ")
		}
	}
	d, err := Decode(a)
	if err != nil {
		t.Fatal(err)
	}
	again, err := d.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, again) {
		t.Fatal("a decoded checkpoint encodes to different bytes")
	}
}

// TestExactFloat checks the JSON form of the optimizer scalars on every special value and
// on random bit patterns: the bits must come back, and finite values must be plain JSON
// numbers that any reader parses to the same float64.
func TestExactFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	vals := slices.Clone(special64)
	for range 2000 {
		vals = append(vals, r.Uint64())
	}
	for _, bits := range vals {
		f := exactFloat(math.Float64frombits(bits))
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		var back exactFloat
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%#016x: %s: %v", bits, b, err)
		}
		if got := math.Float64bits(float64(back)); got != bits {
			t.Fatalf("%#016x → %s → %#016x", bits, b, got)
		}
		v := float64(f)
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			var plain float64
			if err := json.Unmarshal(b, &plain); err != nil || math.Float64bits(plain) != bits {
				t.Fatalf("%#016x: %s is not a JSON number of the same value (%v, %v)", bits, b, plain, err)
			}
		}
	}
	for _, bad := range []string{`"0x1"`, `"0xzzzzzzzzzzzzzzzz"`, `"nan"`, `true`, `"0x7ff00000000000000"`} {
		var f exactFloat
		if err := json.Unmarshal([]byte(bad), &f); err == nil {
			t.Errorf("Unmarshal(%s) succeeded", bad)
		}
	}
}

// TestEncodeRejects checks that a checkpoint that could not be read back is refused, with
// an error naming the field.
func TestEncodeRejects(t *testing.T) {
	tests := []struct {
		name   string
		modify func(c *Checkpoint)
		want   string
	}{
		{"negative step", func(c *Checkpoint) { c.Step = -1 }, "step = -1"},
		{"short params", func(c *Checkpoint) { c.Params = c.Params[1:] }, "params: length"},
		{"invalid model", func(c *Checkpoint) { c.Model.Heads = 3 }, "heads = 3"},
		{"duplicate vector", func(c *Checkpoint) { c.Vectors = append(c.Vectors, Vector{Name: "probe"}) }, `vector "probe": duplicate`},
		{"bad vector name", func(c *Checkpoint) { c.Vectors = append(c.Vectors, Vector{Name: "a b"}) }, `name "a b"`},
		{"empty vector name", func(c *Checkpoint) { c.Vectors = append(c.Vectors, Vector{Name: ""}) }, `name ""`},
		{"optimizer vector removed", func(c *Checkpoint) {
			c.Vectors = slices.DeleteFunc(c.Vectors, func(v Vector) bool { return v.Name == "opt.v" })
		}, `optimizer "opt": vector "v"`},
		{"state not JSON", func(c *Checkpoint) { c.State = json.RawMessage(`{"a":`) }, "state: not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := sample(t, "micro-llama", 3)
			tt.modify(c)
			_, err := c.Encode()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Encode error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestPutOptimizerRejects(t *testing.T) {
	c := sample(t, "micro-llama", 3)
	st := sfadamw.State[float32]{Algorithm: "sfadamw", Vectors: []sfadamw.Vector[float32]{{Name: "z", Data: []float32{1}}}}
	if err := c.PutOptimizer("opt", st); err == nil {
		t.Error("a second optimizer \"opt\" was accepted")
	}
	if err := c.PutOptimizer("a/b", st); err == nil {
		t.Error("optimizer name a/b was accepted")
	}
	c.Vectors = append(c.Vectors, Vector{Name: "o2.z"})
	if err := c.PutOptimizer("o2", st); err == nil || !strings.Contains(err.Error(), `"o2.z": already`) {
		t.Errorf("PutOptimizer over an existing vector: %v", err)
	}
	if _, err := c.Optimizer("missing"); err == nil || !strings.Contains(err.Error(), "[ewa-x opt]") {
		t.Errorf("Optimizer(missing) = %v, want an error listing the optimizers", err)
	}
}

// TestDecodeRejects builds files that are valid safetensors but not valid checkpoints and
// checks each is refused with ErrInvalid and a reason naming the problem.
func TestDecodeRejects(t *testing.T) {
	enc, err := sample(t, "micro-llama", 3).Encode()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		modify func(f *safetensors.File)
		want   string
	}{
		{"no version", func(f *safetensors.File) { delete(f.Metadata, metaVersion) }, `"sfsweep.version": missing`},
		{"future version", func(f *safetensors.File) { f.Metadata[metaVersion] = "2" }, `reads versions 1 to 1`},
		{"no step", func(f *safetensors.File) { delete(f.Metadata, metaStep) }, `"sfsweep.step": missing`},
		{"bad step", func(f *safetensors.File) { f.Metadata[metaStep] = "-4" }, `"sfsweep.step" = "-4"`},
		{"no model", func(f *safetensors.File) { delete(f.Metadata, metaModel) }, `"sfsweep.model": missing`},
		{"model unknown field", func(f *safetensors.File) { f.Metadata[metaModel] = `{"arch":"llama","extra":1}` }, `unknown field "extra"`},
		{"model invalid", func(f *safetensors.File) {
			f.Metadata[metaModel] = strings.Replace(f.Metadata[metaModel], `"heads":2`, `"heads":0`, 1)
		}, "heads = 0"},
		{"other model", func(f *safetensors.File) {
			f.Metadata[metaModel] = strings.Replace(f.Metadata[metaModel], `"vocab":32`, `"vocab":33`, 1)
		}, `tensor "emb.weight": shape [32 16], the model's is [33 16]`},
		{"forged layer count", func(f *safetensors.File) {
			f.Metadata[metaModel] = strings.Replace(f.Metadata[metaModel], `"layers":2`, `"layers":999999999`, 1)
		}, "layers = 999999999: the file has only"},
		{"more layers", func(f *safetensors.File) {
			f.Metadata[metaModel] = strings.Replace(f.Metadata[metaModel], `"layers":2`, `"layers":3`, 1)
		}, `tensor "blocks.2.n1.weight": missing`},
		{"state not JSON", func(f *safetensors.File) { f.Metadata[metaState] = "{" }, `"sfsweep.state": not valid JSON`},
		{"optimizers not JSON", func(f *safetensors.File) { f.Metadata[metaOptimizers] = "[" }, `"sfsweep.optimizers"`},
		{"optimizer scalar", func(f *safetensors.File) {
			f.Metadata[metaOptimizers] = strings.Replace(f.Metadata[metaOptimizers], `"max_lr":0.002`, `"max_lr":"0x12"`, 1)
		}, `float "0x12"`},
		{"missing parameter", func(f *safetensors.File) { dropTensor(f, "norm.weight") }, `tensor "norm.weight": missing`},
		{"missing optimizer vector", func(f *safetensors.File) { dropTensor(f, "state.opt.z") }, `optimizer "opt": vector "z"`},
		{"unknown tensor", func(f *safetensors.File) {
			f.Tensors = append(f.Tensors, safetensors.Tensor{Info: safetensors.Info{Name: "lm_head.bias", DType: safetensors.F32, Shape: []int{1}}, Data: make([]byte, 4)})
		}, `tensor "lm_head.bias": neither`},
		{"F64 tensor", func(f *safetensors.File) {
			f.Tensors = append(f.Tensors, safetensors.Tensor{Info: safetensors.Info{Name: "state.x", DType: safetensors.F64, Shape: []int{1}}, Data: make([]byte, 8)})
		}, `tensor "state.x": dtype F64, want F32`},
		{"2-D vector", func(f *safetensors.File) {
			f.Tensors = append(f.Tensors, safetensors.Tensor{Info: safetensors.Info{Name: "state.x", DType: safetensors.F32, Shape: []int{1, 1}}, Data: make([]byte, 4)})
		}, `shape [1 1]: a state vector is 1-D`},
		{"bad vector name", func(f *safetensors.File) {
			f.Tensors = append(f.Tensors, safetensors.Tensor{Info: safetensors.Info{Name: "state.a b", DType: safetensors.F32, Shape: []int{0}}})
		}, `vector name "a b"`},
		{"parameter shape", func(f *safetensors.File) {
			for i := range f.Tensors {
				if f.Tensors[i].Name == "norm.weight" {
					f.Tensors[i].Shape = []int{4, 4}
				}
			}
		}, `tensor "norm.weight": shape [4 4], the model's is [16]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := safetensors.Decode(slices.Clone(enc))
			if err != nil {
				t.Fatal(err)
			}
			tt.modify(f)
			b, err := safetensors.Encode(f.Tensors, f.Metadata)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Decode(b)
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Decode error = %v, want ErrInvalid and %q", err, tt.want)
			}
		})
	}
	if _, err := Decode(enc[:len(enc)-1]); !errors.Is(err, ErrInvalid) || !errors.Is(err, safetensors.ErrInvalid) {
		t.Errorf("Decode of a truncated file: %v, want ErrInvalid wrapping safetensors.ErrInvalid", err)
	}
}

func dropTensor(f *safetensors.File, name string) {
	f.Tensors = slices.DeleteFunc(f.Tensors, func(x safetensors.Tensor) bool { return x.Name == name })
}

// TestDecodeForeignOrder checks that a file whose tensors are stored in another order (as
// the reference writer orders them: by dtype, then name) decodes to the same checkpoint.
func TestDecodeForeignOrder(t *testing.T) {
	c := sample(t, "micro-gpt2", 8)
	enc, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(f.Tensors, func(a, b safetensors.Tensor) int { return strings.Compare(a.Name, b.Name) })
	b, err := safetensors.Encode(f.Tensors, f.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameCheckpoint(got, c); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Model, c.Model) {
		t.Fatal("model differs")
	}
}
