package backend

import (
	"slices"
	"testing"
)

// A backend's provenance is the catalog's arithmetic, each backend its own: two catalog
// entries of one family and precision (cuda-bf16 and cuda-bf16-flash) differ in their
// arithmetic, which their names fix.
func TestProvenanceOf(t *testing.T) {
	for name, want := range map[string]string{"cpu": "cpu-fp32/2", "cuda-tf32": "cuda-tf32/1", "cuda-bf16": "cuda-bf16/1", "cuda-bf16-flash": "cuda-bf16-flash/1"} {
		if p := ProvenanceOf(name); p.Arithmetic != want || p.Backend != name {
			t.Errorf("%s: provenance %+v, want arithmetic %s", name, p, want)
		}
	}
	if SameArithmetic("cuda-bf16/1", "cuda-bf16-flash/1") {
		t.Error("cuda-bf16 and cuda-bf16-flash are the same arithmetic")
	}
}

// A backend added to a family workers already serve by device has a route of its own, so
// that an older build's workers, which lack it, never take its trials; the family's first
// backends route by their device.
func TestRoutes(t *testing.T) {
	for name, want := range map[string]string{"cpu": "cpu", "cuda": "cuda", "cuda-tf32": "cuda", "cuda-bf16": "cuda", "cuda-bf16-flash": "cuda-bf16-flash"} {
		b, _ := Lookup(name)
		if got := RouteOf(b); got != want {
			t.Errorf("RouteOf(%s) = %q, want %q", name, got, want)
		}
	}
	// this package's test binary registers no engine of its own beyond what its tests do
	if r := Routes([]string{DeviceCPU}); !slices.Contains(Names(), "cpu") && len(r) != 0 {
		t.Errorf("Routes(cpu) = %v without a cpu backend", r)
	}
}
