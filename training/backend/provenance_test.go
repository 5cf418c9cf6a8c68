package backend

import "testing"

// TestVariant: a backend's registered variant is in its engines' provenance, so a result
// or checkpoint of a path not yet signed off never passes for the catalog arithmetic's.
func TestVariant(t *testing.T) {
	suffix := ""
	RegisterVariant("cuda-tf32", func() string { return suffix })
	if p := ProvenanceOf("cuda-tf32"); p.Arithmetic != "cuda-tf32/1" {
		t.Errorf("no variant: %q", p.Arithmetic)
	}
	suffix = "+fast"
	p := ProvenanceOf("cuda-tf32")
	if p.Arithmetic != "cuda-tf32/1+fast" || SameArithmetic(p.Arithmetic, "cuda-tf32/1") {
		t.Errorf("a variant: %q", p.Arithmetic)
	}
	if q := ProvenanceOf("cuda"); q.Arithmetic != "cuda-fp32/1" {
		t.Errorf("another backend took the variant: %q", q.Arithmetic)
	}
	defer func() {
		if recover() == nil {
			t.Error("a second variant of a backend: no panic")
		}
	}()
	RegisterVariant("cuda-tf32", func() string { return "" })
}
