package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sfsweep/sfsweep/internal/par"
)

// tune sets the driver's thresholds for the rest of the test.
func tune(t *testing.T, parallel, task, share int) {
	old := [3]int{parallelMNK, taskMNK, shareMax}
	parallelMNK, taskMNK, shareMax = parallel, task, share
	t.Cleanup(func() { parallelMNK, taskMNK, shareMax = old[0], old[1], old[2] })
}

// TestDeterminism checks that results are bitwise identical with pools of 1, 2 and 3
// workers, cutting the rows and the columns of C, with and without the workers keeping
// the shared operand packed, and that they are right.
func TestDeterminism(t *testing.T) {
	pools := []*par.Pool{par.NewPool(1), par.NewPool(2), par.NewPool(3)}
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	rng := rand.New(rand.NewPCG(13, 14))
	shapes := []gemmCase{
		{m: 301, n: 95, k: 300, alpha: 1, beta: 0.5},
		{transB: true, m: 97, n: 333, k: 270, alpha: -1, beta: 0},
		{transA: true, m: 250, n: 250, k: 530, alpha: 0.5, beta: 1, padA: 3},
		{transA: true, transB: true, m: 140, n: 600, k: 100, alpha: 1, beta: 0},
	}
	for _, share := range []int{1 << 30, 0} {
		tune(t, 1, 20_000, share)
		for _, lv := range levels32() {
			if !lv.ok {
				continue
			}
			for _, cs := range shapes {
				o := cs.operands(rng).rounded()
				var first []float64
				for _, p := range pools {
					got := call32(lv.kern, p, cs, o)
					if first == nil {
						first = got
						check(t, cs, o, got, 24)
						continue
					}
					for i := range got {
						if math.Float64bits(got[i]) != math.Float64bits(first[i]) && !(math.IsNaN(got[i]) && math.IsNaN(first[i])) {
							t.Fatalf("%s %v share %d: %d workers give C[%d] = %g, 1 worker %g", lv.kern.name, cs, share, p.Workers(), i, got[i], first[i])
						}
					}
				}
			}
		}
	}
	// The public entry point with the pool hook, at the default thresholds.
	defer func(f func() *par.Pool) { pool = f }(pool)
	cs := gemmCase{transB: true, m: 700, n: 130, k: 200, alpha: 1}
	o := cs.operands(rng).rounded()
	var first []float32
	for _, p := range pools {
		pool = func() *par.Pool { return p }
		c := to32(o.c)
		Gemm(cs.transA, cs.transB, cs.m, cs.n, cs.k, 1, to32(o.a), o.lda, to32(o.b), o.ldb, 0, c, o.ldc)
		if first == nil {
			first = c
			continue
		}
		for i := range c {
			if math.Float32bits(c[i]) != math.Float32bits(first[i]) {
				t.Fatalf("Gemm %v: %d workers give C[%d] = %g, 1 worker %g", cs, p.Workers(), i, c[i], first[i])
			}
		}
	}
}

// TestConcurrentCalls runs Gemm from several goroutines at once and from inside tasks of
// par.Default (which must not deadlock): every result must equal, bit for bit, that of a
// call on one goroutine.
func TestConcurrentCalls(t *testing.T) {
	tune(t, 1<<16, 1<<14, 1<<21)
	cs := gemmCase{transB: true, m: 150, n: 130, k: 120, alpha: 1}
	o := cs.operands(rand.New(rand.NewPCG(15, 16))).rounded()
	a, b := to32(o.a), to32(o.b)
	want := to32(call32(kernel32, nil, cs, o))
	run := func() error {
		c := to32(o.c)
		Gemm(cs.transA, cs.transB, cs.m, cs.n, cs.k, 1, a, o.lda, b, o.ldb, 0, c, o.ldc)
		for i := range c {
			if math.Float32bits(c[i]) != math.Float32bits(want[i]) {
				return fmt.Errorf("C[%d] = %g, want %g", i, c[i], want[i])
			}
		}
		return nil
	}
	errs := make(chan error, 8)
	for range 4 {
		go func() {
			for range 5 {
				if err := run(); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error("concurrent call:", err)
		}
	}
	par.Default().For(4*par.Align, 1, func(lo, hi int) {
		if err := run(); err != nil {
			errs <- err
		}
	})
	close(errs)
	for err := range errs {
		t.Error("call inside par.Default:", err)
	}
}

func TestZeroAllocs(t *testing.T) {
	p := par.NewPool(2)
	defer p.Close()
	defer func(f func() *par.Pool) { pool = f }(pool)
	pool = func() *par.Pool { return p }
	tune(t, 1<<20, 1<<16, 1<<21)
	for _, cs := range []gemmCase{
		{transB: true, m: 300, n: 200, k: 150, alpha: 1},      // parallel
		{m: 128, n: 128, k: 32, alpha: 1, beta: 1},            // one goroutine
		{transA: true, m: 5, n: 6, k: 7, alpha: 1, beta: 0.5}, // plain loop
	} {
		o := cs.operands(rand.New(rand.NewPCG(1, 1)))
		a, b, c := to32(o.a), to32(o.b), to32(o.c)
		f := func() {
			Gemm(cs.transA, cs.transB, cs.m, cs.n, cs.k, 1, a, o.lda, b, o.ldb, float32(cs.beta), c, o.ldc)
		}
		if n := testing.AllocsPerRun(20, f); n != 0 {
			t.Errorf("%v: %v allocations per call", cs, n)
		}
		a64, b64, c64 := o.a, o.b, o.c
		f64 := func() {
			Gemm(cs.transA, cs.transB, cs.m, cs.n, cs.k, 1, a64, o.lda, b64, o.ldb, cs.beta, c64, o.ldc)
		}
		if n := testing.AllocsPerRun(5, f64); n != 0 {
			t.Errorf("float64 %v: %v allocations per call", cs, n)
		}
	}
}
