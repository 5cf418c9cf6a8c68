package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/internal/par"
)

// A gemmCase is one call of Gemm: shapes, scalars and the padding of each leading
// dimension past its row length.
type gemmCase struct {
	transA, transB   bool
	m, n, k          int
	alpha, beta      float64
	padA, padB, padC int
	nanC             bool // fill C with NaN (with beta = 0 it must be overwritten)
}

func (c gemmCase) String() string {
	t := func(b bool) string {
		if b {
			return "T"
		}
		return "N"
	}
	s := fmt.Sprintf("%s%s/%dx%dx%d/a%g/b%g", t(c.transA), t(c.transB), c.m, c.n, c.k, c.alpha, c.beta)
	if c.padA|c.padB|c.padC != 0 {
		s += fmt.Sprintf("/ld+%d,%d,%d", c.padA, c.padB, c.padC)
	}
	if c.nanC {
		s += "/nanC"
	}
	return s
}

// operands are the buffers of a case in float64; padding is NaN, so a read of it shows
// in the result and a write to it shows in the padding check.
type operands struct {
	a, b, c       []float64
	lda, ldb, ldc int
}

func (cs gemmCase) operands(rng *rand.Rand) operands {
	rowsA, colsA := cs.m, cs.k
	if cs.transA {
		rowsA, colsA = cs.k, cs.m
	}
	rowsB, colsB := cs.k, cs.n
	if cs.transB {
		rowsB, colsB = cs.n, cs.k
	}
	fill := func(rows, cols, pad int, nan bool) ([]float64, int) {
		ld := max(cols+pad, 1)
		x := make([]float64, rows*ld)
		for i := range x {
			if i%ld >= cols || nan {
				x[i] = math.NaN()
			} else {
				x[i] = 2*rng.Float64() - 1
			}
		}
		return x, ld
	}
	var o operands
	o.a, o.lda = fill(rowsA, colsA, cs.padA, false)
	o.b, o.ldb = fill(rowsB, colsB, cs.padB, false)
	o.c, o.ldc = fill(cs.m, cs.n, cs.padC, cs.nanC)
	return o
}

func to32(x []float64) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float32(v)
	}
	return y
}

func to64(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

// check fails t with the findings of mismatches.
func check(t *testing.T, cs gemmCase, o operands, got []float64, mant int) {
	t.Helper()
	for _, msg := range mismatches(cs, o, got, mant) {
		t.Errorf("%v: %s", cs, msg)
	}
}

// mismatches compares got with the float64 reference computed from the same inputs and
// describes the differences (at most a few). The error of a k-term dot product accumulated
// with unit roundoff u = 2^-mant is at most about k·u·Σ|a||b|, and scaling by alpha and
// adding beta·C add a few roundings more: the bound used is
// (k+3)·2u·(|alpha|·Σ|a||b| + |beta·c|). got must also leave the padding of C (NaN) alone.
func mismatches(cs gemmCase, o operands, got []float64, mant int) []string {
	ref := append([]float64(nil), o.c...)
	Naive(cs.transA, cs.transB, cs.m, cs.n, cs.k, cs.alpha, o.a, o.lda, o.b, o.ldb, cs.beta, ref, o.ldc)
	abs := func(x []float64) []float64 {
		y := make([]float64, len(x))
		for i, v := range x {
			y[i] = math.Abs(v)
		}
		return y
	}
	mag := make([]float64, len(o.c))
	Naive(cs.transA, cs.transB, cs.m, cs.n, cs.k, 1, abs(o.a), o.lda, abs(o.b), o.ldb, 0, mag, o.ldc)
	u := math.Ldexp(1, -mant)
	var msgs []string
	bad := 0
	for i := range cs.m {
		for j := range o.ldc {
			idx := i*o.ldc + j
			if j >= cs.n {
				if !math.IsNaN(got[idx]) {
					return append(msgs, fmt.Sprintf("padding C[%d][%d] overwritten with %g", i, j, got[idx]))
				}
				continue
			}
			c0 := 0.0
			if cs.beta != 0 {
				c0 = math.Abs(cs.beta * o.c[idx])
			}
			tol := float64(cs.k+3) * 2 * u * (math.Abs(cs.alpha)*mag[idx] + c0)
			if d := math.Abs(got[idx] - ref[idx]); !(d <= tol) {
				if bad++; bad <= 3 {
					msgs = append(msgs, fmt.Sprintf("C[%d][%d] = %g, want %g ± %.3g", i, j, got[idx], ref[idx], tol))
				}
			}
		}
	}
	if bad > 3 {
		msgs = append(msgs, fmt.Sprintf("%d elements out of tolerance", bad))
	}
	return msgs
}

// call32 runs case cs in float32 through kernel kern on pool p (nil: one goroutine),
// bypassing the plain loop for tiny sizes so that the kernel itself is exercised.
func call32(kern *kernel[float32], p *par.Pool, cs gemmCase, o operands) []float64 {
	a, b, c := to32(o.a), to32(o.b), to32(o.c)
	if cs.m == 0 || cs.n == 0 || cs.k == 0 {
		gemmWith(kern, p, cs.transA, cs.transB, cs.m, cs.n, cs.k, float32(cs.alpha), a, o.lda, b, o.ldb, float32(cs.beta), c, o.ldc)
	} else {
		blocked(kern, p, cs.transA, cs.transB, cs.m, cs.n, cs.k, float32(cs.alpha), a, o.lda, b, o.ldb, float32(cs.beta), c, o.ldc)
	}
	return to64(c)
}

// call64 is call32 for float64.
func call64(kern *kernel[float64], p *par.Pool, cs gemmCase, o operands) []float64 {
	c := append([]float64(nil), o.c...)
	if cs.m == 0 || cs.n == 0 || cs.k == 0 {
		gemmWith(kern, p, cs.transA, cs.transB, cs.m, cs.n, cs.k, cs.alpha, o.a, o.lda, o.b, o.ldb, cs.beta, c, o.ldc)
	} else {
		blocked(kern, p, cs.transA, cs.transB, cs.m, cs.n, cs.k, cs.alpha, o.a, o.lda, o.b, o.ldb, cs.beta, c, o.ldc)
	}
	return c
}

// rounded returns the operands rounded to float32, so that the float64 reference sees
// exactly the inputs of the float32 call.
func (o operands) rounded() operands {
	r := func(x []float64) []float64 { return to64(to32(x)) }
	return operands{r(o.a), r(o.b), r(o.c), o.lda, o.ldb, o.ldc}
}

// transposes lists the four combinations of (transA, transB).
var transposes = [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}}

// cases returns the test cases for a kernel's blocking: every transpose combination with
// sizes at and around its tile and block boundaries, primes, degenerate sizes, the scalar
// variants and padded leading dimensions.
func cases[T Float](kern *kernel[T], short bool) []gemmCase {
	mr, nr, kc, mc, nc := kern.mr, kern.nr, kern.kc, kern.mc, kern.nc
	type shape struct{ m, n, k int }
	shapes := []shape{
		{1, 1, 1}, {1, 7, 3}, {5, 1, 9}, {2, 3, 1},
		{mr - 1, nr - 1, 7}, {mr, nr, 16}, {mr + 1, nr + 1, 17},
		{2*mr + 1, 3*nr - 1, 31}, {13, 37, 97}, {31, 29, 15},
		{mr, nr, kc - 1}, {mr + 3, nr, kc}, {3, nr + 5, kc + 1}, {mr, 2, 2*kc + 5},
		{mc - 1, nr + 3, 19}, {mc + 1, 5, 33}, {2*mc + mr + 1, nr - 3, 20},
		{3, nc - 1, 9}, {mr + 2, nc + 1, 11}, {2, 2*nc + nr + 3, 5},
		{97, 101, 103},
	}
	type scalars struct{ alpha, beta float64 }
	scal := []scalars{{1, 0}, {1, 1}, {-0.75, 0.5}, {2, -1}}
	var out []gemmCase
	for si, s := range shapes {
		for ti, tr := range transposes {
			sc := scal[(si+ti)%len(scal)]
			cs := gemmCase{transA: tr[0], transB: tr[1], m: s.m, n: s.n, k: s.k, alpha: sc.alpha, beta: sc.beta}
			if (si+ti)%3 == 1 {
				cs.padA, cs.padB, cs.padC = 3, 17, 5
			}
			if cs.beta == 0 && (si+ti)%2 == 0 {
				cs.nanC = true
			}
			if short && s.m*s.n*s.k > 200_000 && ti > 0 {
				continue
			}
			out = append(out, cs)
		}
	}
	// Degenerate shapes: empty C, and k = 0 (C = beta·C).
	for _, tr := range transposes {
		for _, s := range []shape{{0, 5, 3}, {4, 0, 3}, {0, 0, 0}, {4, 5, 0}} {
			out = append(out, gemmCase{transA: tr[0], transB: tr[1], m: s.m, n: s.n, k: s.k, alpha: 1.5, beta: 0.5})
			out = append(out, gemmCase{transA: tr[0], transB: tr[1], m: s.m, n: s.n, k: s.k, alpha: 1, beta: 0, nanC: true, padC: 2})
		}
	}
	return out
}

// level is one float32 micro-kernel and whether this CPU can run it.
type level struct {
	kern *kernel[float32]
	ok   bool
}

// levels32 lists every float32 kernel built into the package, the portable one first.
func levels32() []level {
	return append([]level{{goKernel32, true}}, simdLevels()...)
}

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

// modelCases are shapes of the training engine: linear layers of the tiny and small LLaMA
// models (forward X·Wᵀ, input gradient dY·W, weight gradient dW += dYᵀ·X) and attention
// heads. The biggest are left out of -short runs.
func modelCases(short bool) []gemmCase {
	cs := []gemmCase{
		{transB: true, m: 2048, n: 344, k: 128, alpha: 1},                        // tiny SwiGLU up
		{m: 2048, n: 128, k: 344, alpha: 1},                                      // tiny SwiGLU down, dX
		{transA: true, m: 344, n: 128, k: 2048, alpha: 1, beta: 1},               // tiny dW
		{transB: true, m: 128, n: 128, k: 32, alpha: 0.125},                      // tiny attention scores
		{m: 128, n: 32, k: 128, alpha: 1},                                        // tiny attention P·V
		{transA: true, m: 256, n: 64, k: 256, alpha: 1, beta: 1},                 // small attention dV
		{transB: true, m: 256, n: 256, k: 64, alpha: 0.125, nanC: true},          // small attention scores
		{transB: true, m: 2048, n: 512, k: 128, alpha: 1, padA: 128},             // tiny LM head
		{transB: true, m: 512, n: 1024, k: 384, alpha: 1},                        // small SwiGLU up (rows cut)
		{transA: true, m: 384, n: 384, k: 2048, alpha: 1, beta: 1},               // small dW
		{transA: true, transB: true, m: 200, n: 300, k: 100, alpha: -1, beta: 2}, // TT
	}
	if !short {
		cs = append(cs,
			gemmCase{transB: true, m: 2048, n: 1024, k: 384, alpha: 1}, // small SwiGLU up
			gemmCase{m: 2048, n: 384, k: 1024, alpha: 1},               // small SwiGLU down, dX
		)
	}
	return cs
}

func TestModelShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, cs := range modelCases(testing.Short()) {
		o := cs.operands(rng).rounded()
		a, b, c := to32(o.a), to32(o.b), to32(o.c)
		Gemm(cs.transA, cs.transB, cs.m, cs.n, cs.k, float32(cs.alpha), a, o.lda, b, o.ldb, float32(cs.beta), c, o.ldc)
		check(t, cs, o, to64(c), 24)
	}
}

// TestGemmFloat64 runs the public entry point in float64 on shapes around the blocking.
func TestGemmFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, cs := range []gemmCase{
		{m: 3, n: 4, k: 5, alpha: 1},
		{transA: true, m: 65, n: 66, k: 257, alpha: 0.5, beta: -1, padA: 1},
		{transB: true, m: 130, n: 33, k: 40, alpha: 1, nanC: true},
		{transA: true, transB: true, m: 31, n: 1030, k: 9, alpha: 2, beta: 1, padC: 3},
	} {
		o := cs.operands(rng)
		c := append([]float64(nil), o.c...)
		Gemm(cs.transA, cs.transB, cs.m, cs.n, cs.k, cs.alpha, o.a, o.lda, o.b, o.ldb, cs.beta, c, o.ldc)
		check(t, cs, o, c, 53)
	}
}

// TestNamedFloatTypes checks that types defined on float32 and float64 take the fast paths
// correctly.
func TestNamedFloatTypes(t *testing.T) {
	type f32 float32
	type f64 float64
	rng := rand.New(rand.NewPCG(9, 10))
	cs := gemmCase{transB: true, m: 40, n: 50, k: 60, alpha: 1, beta: 0.5}
	o := cs.operands(rng).rounded()
	a32, b32, c32 := make([]f32, len(o.a)), make([]f32, len(o.b)), make([]f32, len(o.c))
	for i, v := range o.a {
		a32[i] = f32(v)
	}
	for i, v := range o.b {
		b32[i] = f32(v)
	}
	for i, v := range o.c {
		c32[i] = f32(v)
	}
	Gemm(cs.transA, cs.transB, cs.m, cs.n, cs.k, 1, a32, o.lda, b32, o.ldb, 0.5, c32, o.ldc)
	got := make([]float64, len(c32))
	for i, v := range c32 {
		got[i] = float64(v)
	}
	check(t, cs, o, got, 24)

	c64 := make([]f64, len(o.c))
	a64, b64 := make([]f64, len(o.a)), make([]f64, len(o.b))
	for i := range o.a {
		a64[i] = f64(o.a[i])
	}
	for i := range o.b {
		b64[i] = f64(o.b[i])
	}
	for i := range o.c {
		c64[i] = f64(o.c[i])
	}
	Gemm(cs.transA, cs.transB, cs.m, cs.n, cs.k, 1, a64, o.lda, b64, o.ldb, 0.5, c64, o.ldc)
	for i, v := range c64 {
		got[i] = float64(v)
	}
	check(t, cs, o, got, 53)
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

func TestArgumentChecks(t *testing.T) {
	buf := make([]float32, 100)
	for _, tc := range []struct {
		name string
		f    func()
		want string
	}{
		{"negative", func() { Gemm(false, false, -1, 2, 2, 1, buf, 2, buf, 2, 0, buf, 2) }, "negative dimension"},
		{"short A", func() { Gemm(false, false, 10, 2, 10, 1, buf[:99], 10, buf, 2, 0, buf, 2) }, "A is too short"},
		{"short Aᵀ", func() { Gemm(true, false, 10, 2, 10, 1, buf[:99], 10, buf, 2, 0, buf, 2) }, "A is too short"},
		{"short B", func() { Gemm(false, false, 2, 10, 10, 1, buf, 10, buf[:99], 10, 0, buf, 10) }, "B is too short"},
		{"short Bᵀ", func() { Gemm(false, true, 2, 10, 10, 1, buf, 10, buf[:99], 10, 0, buf, 10) }, "B is too short"},
		{"short C", func() { Gemm(false, false, 10, 10, 2, 1, buf, 2, buf, 10, 0, buf[:99], 10) }, "C is too short"},
		{"lda", func() { Gemm(false, false, 2, 2, 5, 1, buf, 4, buf, 2, 0, buf, 2) }, "leading dimension of A"},
		{"ldb", func() { Gemm(false, true, 2, 2, 5, 1, buf, 5, buf, 4, 0, buf, 2) }, "leading dimension of B"},
		{"ldc", func() { Gemm(false, false, 2, 3, 5, 1, buf, 5, buf, 3, 0, buf, 2) }, "leading dimension of C"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, tc.want) {
					t.Errorf("panic %v, want one containing %q", r, tc.want)
				}
			}()
			tc.f()
		})
	}
	// Exactly long enough buffers are accepted.
	Gemm(false, false, 10, 10, 10, 1, buf, 10, buf, 10, 0, make([]float32, 100), 10)
}
