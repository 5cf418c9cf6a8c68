package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
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
