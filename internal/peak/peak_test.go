package peak

import (
	"math"
	"testing"
)

// Each loop does the multiply-adds its FLOP count says: after n iterations of acc += a·b
// from zero, every one of its fmas·lanes accumulators holds n·a·b exactly (no lane skipped,
// none added twice), so an iteration is fmas·lanes multiply-adds, 2·fmas·lanes FLOPs.
func TestLoopFLOPs(t *testing.T) {
	ls := loops()
	if len(ls) == 0 {
		t.Skip("no FMA loop on this CPU or build")
	}
	for _, l := range ls {
		for _, n := range []int{0, 1, 1000} {
			acc := make([]float32, l.fmas*l.lanes)
			for i := range acc {
				acc[i] = float32(math.NaN())
			}
			ab := [2]float32{2, 3}
			l.run(n, &ab, acc)
			for i, v := range acc {
				if v != float32(6*n) {
					t.Fatalf("%s, n = %d: accumulator lane %d = %g, want %d", l.isa, n, i, v, 6*n)
				}
			}
		}
		if got, want := l.flopsPerIter(), float64(2*l.fmas*l.lanes); got != want {
			t.Errorf("%s: %g FLOPs per iteration, want %g", l.isa, got, want)
		}
	}
	if w := map[string]int{"avx512": 768, "avx2": 192}[ls[0].isa]; ls[0].flopsPerIter() != float64(w) {
		t.Errorf("%s: %g FLOPs per iteration, want %d", ls[0].isa, ls[0].flopsPerIter(), w)
	}
}

// Measure reports a positive peak of the widest loop on the threads asked for.
func TestMeasure(t *testing.T) {
	ls := loops()
	p, ok := Measure(1)
	if ok != (len(ls) > 0) {
		t.Fatalf("Measure: ok = %v with %d loops", ok, len(ls))
	}
	if !ok {
		return
	}
	t.Logf("peak of one thread: %.1f GFLOP/s (%s)", p.GFLOPS, p.ISA)
	if !(p.GFLOPS > 0) || p.ISA != ls[0].isa || p.Threads != 1 {
		t.Errorf("Measure(1) = %+v", p)
	}
	if _, ok := Measure(0); ok {
		t.Error("Measure(0) measured")
	}
}
