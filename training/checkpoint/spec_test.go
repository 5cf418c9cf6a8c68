package checkpoint

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"math"
	"slices"
	"testing"

	"github.com/sfsweep/sfsweep/training/model"
)

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
