package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sfsweep/sfsweep/sfadamw"
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
