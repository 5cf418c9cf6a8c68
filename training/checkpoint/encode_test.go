package checkpoint

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

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
