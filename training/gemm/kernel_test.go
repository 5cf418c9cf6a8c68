package gemm

import (
	"math/rand/v2"
	"testing"
)

func TestKernels32(t *testing.T) {
	for _, lv := range levels32() {
		t.Run(lv.kern.name, func(t *testing.T) {
			if !lv.ok {
				t.Skipf("CPU lacks %s", lv.kern.name)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for _, cs := range cases(lv.kern, testing.Short()) {
				o := cs.operands(rng).rounded()
				check(t, cs, o, call32(lv.kern, nil, cs, o), 24)
			}
		})
	}
}

func TestKernel64(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, cs := range cases(goKernel64, true) {
		o := cs.operands(rng)
		check(t, cs, o, call64(goKernel64, nil, cs, o), 53)
	}
}

// TestCheckDetectsErrors makes sure the tolerance is tight enough to catch a kernel that
// drops one term of the inner sum, and that writes to the padding of C are caught.
func TestCheckDetectsErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, mant := range []int{24, 53} {
		cs := gemmCase{m: 20, n: 40, k: 300, alpha: 1, beta: 0.5, padC: 1}
		o := cs.operands(rng)
		if mant == 24 {
			o = o.rounded()
		}
		got := append([]float64(nil), o.c...)
		Naive(false, false, cs.m, cs.n, cs.k-1, cs.alpha, o.a, o.lda, o.b, o.ldb, cs.beta, got, o.ldc)
		if len(mismatches(cs, o, got, mant)) == 0 {
			t.Errorf("mantissa %d: a result missing one term of each sum passes", mant)
		}
		got = append(got[:0], o.c...)
		Naive(false, false, cs.m, cs.n, cs.k, cs.alpha, o.a, o.lda, o.b, o.ldb, cs.beta, got, o.ldc)
		if msgs := mismatches(cs, o, got, mant); len(msgs) != 0 {
			t.Errorf("mantissa %d: the reference itself fails: %v", mant, msgs)
		}
		got[o.ldc-1] = 0
		if len(mismatches(cs, o, got, mant)) == 0 {
			t.Errorf("mantissa %d: a write to the padding of C passes", mant)
		}
	}
}
