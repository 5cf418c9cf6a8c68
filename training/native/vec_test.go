package native

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The float32 row primitives under every kernel set the machine runs (the portable loops,
// AVX2, AVX-512) against the same primitives in float64, over lengths that exercise whole
// vectors of 8 and 16 lanes, masked tails and both, on slices that start at any float32
// offset. The tolerances are relative to the size of the terms of each result, in units of
// the float32 epsilon 2⁻²³ ≈ 1.2e-7.

var vecLengths = []int{0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100, 128, 344, 515, 4099}

// kernelSet is one set of float32 kernels, as simd and avx512 select it.
type kernelSet struct {
	name         string
	simd, avx512 bool
}

// kernelSets returns the kernel sets this machine runs, the portable loops first.
func kernelSets() []kernelSet {
	sets := []kernelSet{{name: "go"}}
	if hasAVX2 {
		sets = append(sets, kernelSet{"avx2", true, false})
	}
	if hasAVX512 {
		sets = append(sets, kernelSet{"avx512", true, true})
	}
	return sets
}

// use selects the kernel set ks until the test ends.
func (ks kernelSet) use(t testing.TB) {
	s, a := simd, avx512
	simd, avx512 = ks.simd, ks.avx512
	t.Cleanup(func() { simd, avx512 = s, a })
}

// forKernelSets runs f as a subtest under each kernel set of the machine.
func forKernelSets(t *testing.T, f func(t *testing.T)) {
	for _, ks := range kernelSets() {
		t.Run(ks.name, func(t *testing.T) {
			ks.use(t)
			f(t)
		})
	}
}

func TestSelectKernels(t *testing.T) {
	for _, env := range []string{"", "go", "avx2", "avx512", "other"} {
		s, a := selectKernels(env)
		want := kernelSet{simd: hasAVX2 || hasAVX512, avx512: hasAVX512}
		switch env {
		case "go":
			want = kernelSet{}
		case "avx2":
			want = kernelSet{simd: hasAVX2, avx512: false}
		}
		if s != want.simd || a != want.avx512 {
			t.Errorf("SFSWEEP_KERNELS=%q: simd, avx512 = %v, %v; want %v, %v (AVX2 %v, AVX-512F %v)",
				env, s, a, want.simd, want.avx512, hasAVX2, hasAVX512)
		}
	}
}

const eps32 = 1.0 / (1 << 23)

// guard is the value written after the end of every output, which the kernels must leave.
const guard = -12345

type vecCase struct {
	rng *rand.Rand
	t   *testing.T
}

// pair returns the same random values as float32 (starting 0 to 3 elements into its
// allocation, so at any alignment, and followed by 16 guard elements, not part of the
// returned slice's length) and as float64.
func (v vecCase) pair(n int, std float64) ([]float32, []float64) {
	off := v.rng.IntN(4)
	a, b := make([]float32, off+n+16)[off:off+n:off+n+16], make([]float64, n)
	for i := range b {
		b[i] = float64(float32(std * v.rng.NormFloat64()))
		a[i] = float32(b[i])
	}
	for i := n; i < n+16; i++ {
		a[:n+16][i] = guard
	}
	return a, b
}

// check compares got with want elementwise: |got − want| ≤ tol·eps32·scale[i].
func (v vecCase) check(name string, n int, got []float32, want, scale []float64, tol float64) {
	v.t.Helper()
	var worst float64
	for i := range want {
		e := math.Abs(float64(got[i])-want[i]) / (eps32 * scale[i])
		worst = max(worst, e)
		if !(e <= tol) {
			v.t.Errorf("%s, n = %d: element %d is %g, want %g (%.1f ε·scale)", name, n, i, got[i], want[i], e)
			return
		}
	}
	for i, g := range got[len(got):cap(got)] {
		if g != guard {
			v.t.Errorf("%s, n = %d: wrote %g past the end at %d", name, n, g, len(got)+i)
			return
		}
	}
}

func abs64(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = math.Abs(v)
	}
	return out
}

func fill64(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestVecPrimitives(t *testing.T) { forKernelSets(t, testVecPrimitives) }

func testVecPrimitives(t *testing.T) {
	v := vecCase{rand.New(rand.NewPCG(1, 2)), t}
	for _, n := range vecLengths {
		x32, x64 := v.pair(n, 1)
		w32, w64 := v.pair(n, 1)
		d32, d64 := v.pair(n, 1)

		ss := vSumSquares(x32)
		if want := vSumSquares(x64); math.Abs(float64(ss)-want) > 4*eps32*want*math.Sqrt(float64(n)) {
			t.Errorf("vSumSquares n = %d: %g, want %g", n, ss, want)
		}

		o32, _ := v.pair(n, 1)
		o64 := make([]float64, n)
		vScaleMul(o32, x32, w32, 0.7)
		vScaleMul(o64, x64, w64, 0.7)
		v.check("vScaleMul", n, o32, o64, abs64(o64), 2)

		vScale(o32, 3)
		vScale(o64, 3)
		v.check("vScale", n, o32, o64, abs64(o64), 3)

		// RMSNorm backward: dx and dwPart accumulate onto random values.
		dx32, dx64 := v.pair(n, 1)
		dw32, dw64 := v.pair(n, 1)
		rs := 1 / math.Sqrt(vSumSquares(x64)/float64(n)+1e-5)
		vRMSNormBackward(dx32, dw32, d32, x32, w32, float32(rs))
		vRMSNormBackward(dx64, dw64, d64, x64, w64, rs)
		v.check("vRMSNormBackward dx", n, dx32, dx64, fill64(n, 4*rs*math.Sqrt(float64(n))), 8)
		v.check("vRMSNormBackward dw", n, dw32, dw64, fill64(n, 4), 8)

		gate32, gate64 := v.pair(n, 3)
		up32, up64 := v.pair(n, 1)
		h32, _ := v.pair(n, 1)
		h64 := make([]float64, n)
		vSwiGLU(h32, gate32, up32)
		vSwiGLU(h64, gate64, up64)
		v.check("vSwiGLU", n, h32, h64, abs64(h64), 8)

		dg32, dg64 := v.pair(n, 1)
		du32, du64 := v.pair(n, 1)
		vSwiGLUBackward(dg32, du32, d32, gate32, up32)
		vSwiGLUBackward(dg64, du64, d64, gate64, up64)
		big := make([]float64, n)
		for i := range big {
			big[i] = math.Abs(d64[i]) * (math.Abs(up64[i]) + math.Abs(gate64[i]) + 1)
		}
		v.check("vSwiGLUBackward dg", n, dg32, dg64, big, 16)
		v.check("vSwiGLUBackward du", n, du32, du64, abs64(du64), 8)

		// GELU: erf to 1.5e-7 absolute, in the units of TestGELUFloat32 with a margin for
		// random rather than evenly spaced inputs
		gx32, gx64 := v.pair(n, 3)
		go32, _ := v.pair(n, 1)
		go64 := make([]float64, n)
		geluForward(go32, gx32)
		geluForward(go64, gx64)
		gscale := make([]float64, n)
		for i, x := range gx64 {
			gscale[i] = (1e-7*math.Abs(x) + 2e-7*math.Abs(go64[i]) + 1e-30) / eps32
		}
		v.check("geluForward", n, go32, go64, gscale, 1.5)
		gd32, gd64 := v.pair(n, 1)
		geluBackward(gd32, d32, gx32)
		geluBackward(gd64, d64, gx64)
		for i, g := range d64 {
			gscale[i] = (2e-7*math.Abs(g) + 2e-7*math.Abs(gd64[i]) + 1e-30) / eps32
		}
		v.check("geluBackward", n, gd32, gd64, gscale, 1.5)

		if n == 0 { // RoPE needs d ≥ 2, the softmax a non-empty row
			continue
		}

		// RoPE over three heads of 2n elements
		r32, r64 := v.pair(6*n, 1)
		cos, sin := make([]float32, n), make([]float32, n)
		cos64, sin64 := make([]float64, n), make([]float64, n)
		for i := range cos {
			ang := 0.37 * float64(i)
			cos[i], sin[i] = float32(math.Cos(ang)), float32(math.Sin(ang))
			cos64[i], sin64[i] = float64(cos[i]), float64(sin[i])
		}
		orig := append([]float64(nil), r64...)
		vRotateHalves(r32, cos, sin, 2*n)
		vRotateHalves(r64, cos64, sin64, 2*n)
		mag := make([]float64, 6*n)
		for j := 0; j < 6*n; j += 2 * n {
			for i := range n {
				m := math.Abs(orig[j+i]) + math.Abs(orig[j+n+i]) + 1
				mag[j+i], mag[j+n+i] = m, m
			}
		}
		v.check("vRotateHalves", n, r32, r64, mag, 3)

		s32, s64 := v.pair(n, 4)
		m32, sum32 := vSoftmax(s32)
		m64, sum64 := vSoftmax(s64)
		// a sum of n terms in float32: the error bound grows with n (the portable loop sums
		// in one lane)
		stol := 8 * max(1, float64(n)/512)
		if float64(m32) != m64 || math.Abs(float64(sum32)-sum64) > stol*eps32*sum64 {
			t.Errorf("vSoftmax n = %d: max, sum = %g, %g; want %g, %g", n, m32, sum32, m64, sum64)
		}
		// x−max is rounded to float32 before the exponential: relative error |x−max|·ε/2
		sscale := make([]float64, n)
		for i, p := range s64 {
			sscale[i] = p * (1 + math.Abs(math.Log(p*sum64)))
		}
		v.check("vSoftmax", n, s32, s64, sscale, stol)

		// the softmax gradient, on the probabilities just computed
		g32, g64 := v.pair(n, 1)
		vSoftmaxBackward(g32, s32, 0.5)
		vSoftmaxBackward(g64, s64, 0.5)
		v.check("vSoftmaxBackward", n, g32, g64, fill64(n, 4), 8)

	}
}

// TestVecExtremes feeds the exponentials their extreme arguments: SwiGLU gates far beyond
// float32's exponent range and a softmax with a huge spread.
func TestVecExtremes(t *testing.T) { forKernelSets(t, testVecExtremes) }

func testVecExtremes(t *testing.T) {
	for _, x := range []float32{0, -1e30, 1e30, -200, 200} { // beyond the clamp of e^(−x²/2)
		out, dx := []float32{0}, []float32{0}
		geluForward(out, []float32{x})
		geluBackward(dx, []float32{1}, []float32{x})
		want, wantD := float32(0), float32(0)
		switch {
		case x > 0:
			want, wantD = x, 1
		case x == 0:
			wantD = 0.5
		}
		if out[0] != want || dx[0] != wantD {
			t.Errorf("gelu(%g) = %g, gradient %g; want %g, %g", x, out[0], dx[0], want, wantD)
		}
	}
	gate := []float32{-1000, -104, -88, -50, -20, 0, 1e-30, 20, 50, 88, 89, 104, 1000, float32(math.Inf(1)), float32(math.Inf(-1)), 3}
	up := make([]float32, len(gate))
	for i := range up {
		up[i] = 1
	}
	out := make([]float32, len(gate))
	vSwiGLU(out, gate, up)
	for i, g := range gate {
		want := float64(g) / (1 + math.Exp(-float64(g)))
		if math.IsInf(float64(g), -1) {
			want = 0 // the limit; −Inf/(1+Inf) is NaN in IEEE arithmetic
			if math.IsNaN(float64(out[i])) {
				continue
			}
		}
		if math.IsInf(want, 0) {
			if float64(out[i]) != want {
				t.Errorf("silu(%g) = %g, want %g", g, out[i], want)
			}
			continue
		}
		if !(math.Abs(float64(out[i])-want) <= 4*eps32*math.Abs(want)+1e-38) { // subnormal results may flush
			t.Errorf("silu(%g) = %g, want %g", g, out[i], want)
		}
	}
	s := []float32{0, -200, -87, -104, 3, 3, float32(math.Inf(-1))} // −Inf: a masked score
	vSoftmax(s)
	want := []float64{math.Exp(-3), math.Exp(-203), math.Exp(-90), math.Exp(-107), 1, 1, 0}
	var sum float64
	for _, w := range want {
		sum += w
	}
	for i := range s {
		if w := want[i] / sum; !(math.Abs(float64(s[i])-w) <= 8*eps32*w+1e-45) {
			t.Errorf("softmax element %d = %g, want %g", i, s[i], w)
		}
	}
}

// TestPortableFloat32 runs the float32 engine once with each set of SIMD kernels and once
// with the portable loops: they agree to float32 rounding.
func TestPortableFloat32(t *testing.T) {
	sets := kernelSets()
	if len(sets) == 1 {
		t.Skip("no SIMD kernels on this machine")
	}
	cfg := detConfig()
	tokens, targets := randomTokens(cfg.Batch*cfg.Context, cfg.Vocab, 1), randomTokens(cfg.Batch*cfg.Context, cfg.Vocab, 2)
	run := func(ks kernelSet) (float64, []float32) {
		s, a := simd, avx512
		simd, avx512 = ks.simd, ks.avx512
		defer func() { simd, avx512 = s, a }()
		m := newModel[float32](t, cfg, cfg.Batch, cfg.Context, 3)
		roughen(m, 0.1, 4)
		return step(t, m, tokens, targets), m.Grads()
	}
	lGo, gGo := run(sets[0])
	for _, ks := range sets[1:] {
		lSIMD, gSIMD := run(ks)
		comparePortable(t, ks.name, lSIMD, lGo, gSIMD, gGo)
	}
}

// comparePortable compares the loss and the gradients of a step under the SIMD kernels
// named name with those under the portable loops.
func comparePortable(t *testing.T, name string, lSIMD, lGo float64, gSIMD, gGo []float32) {
	t.Helper()
	var diff, norm float64
	for i := range gGo {
		d := float64(gSIMD[i] - gGo[i])
		diff += d * d
		norm += float64(gGo[i]) * float64(gGo[i])
	}
	rel := math.Sqrt(diff / norm)
	t.Logf("loss %.8f (%s) vs %.8f (Go); gradient relative distance %.2g", lSIMD, name, lGo, rel)
	if math.Abs(lSIMD-lGo) > 1e-6*lGo || rel > 1e-5 {
		t.Errorf("%s and portable float32 disagree: loss %.8f vs %.8f, gradient distance %.2g", name, lSIMD, lGo, rel)
	}
}

// TestVecMatmul checks vMatmul in float32 against float64 over shapes that exercise the
// row groups (8, 4 and 1 rows), the column chunks (32 and 16 columns) and their masks
// (tails of 1 to 15 columns), k = 0, and a transposed A.
func TestVecMatmul(t *testing.T) { forKernelSets(t, testVecMatmul) }

func testVecMatmul(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, s := range []struct{ m, n, k int }{
		{1, 1, 1}, {4, 32, 8}, {5, 33, 7}, {7, 16, 32}, {8, 17, 3}, {3, 70, 5}, {12, 64, 128}, {2, 5, 0}, {13, 100, 33},
		{8, 16, 5}, {9, 48, 7}, {16, 8, 3}, {17, 1, 2}, {8, 0, 4}, {0, 8, 4},
		{6, 31, 4}, {4, 25, 9}, {3, 9, 2}, {11, 47, 6}, {1, 15, 3}, {64, 64, 32},
	} {
		for _, trans := range []bool{false, true} {
			const pad = 3 // leading dimensions larger than the rows
			ldc, ldb := s.n+pad, s.n+pad
			rsA, csA := s.k+pad, 1
			if trans {
				rsA, csA = 1, s.m+pad
			}
			na := max(1, (s.m-1)*rsA+(s.k-1)*csA+1)
			a32, a64 := make([]float32, na), make([]float64, na)
			b32, b64 := make([]float32, max(1, s.k*ldb)), make([]float64, max(1, s.k*ldb))
			for i := range a32 {
				a32[i] = float32(rng.NormFloat64())
				a64[i] = float64(a32[i])
			}
			for i := range b32 {
				b32[i] = float32(rng.NormFloat64())
				b64[i] = float64(b32[i])
			}
			c32, c64 := make([]float32, s.m*ldc), make([]float64, s.m*ldc)
			for i := range c32 {
				c32[i] = guard
				c64[i] = guard
			}
			vMatmul(c32, ldc, a32, rsA, csA, b32, ldb, s.m, s.n, s.k, 0.5)
			vMatmul(c64, ldc, a64, rsA, csA, b64, ldb, s.m, s.n, s.k, 0.5)
			for i := range s.m {
				for j := range ldc {
					got, want := float64(c32[i*ldc+j]), c64[i*ldc+j]
					if j >= s.n {
						if got != guard {
							t.Fatalf("%v trans=%v: wrote C[%d,%d] past the row", s, trans, i, j)
						}
						continue
					}
					if math.Abs(got-want) > 4*eps32*math.Sqrt(float64(s.k)+1)*(math.Abs(want)+1) {
						t.Fatalf("%v trans=%v: C[%d,%d] = %g, want %g", s, trans, i, j, got, want)
					}
				}
			}
		}
	}
}

func TestVecTranspose(t *testing.T) { forKernelSets(t, testVecTranspose) }

func testVecTranspose(t *testing.T) {
	for _, s := range []struct{ rows, cols, lds int }{
		{1, 1, 1}, {16, 3, 5}, {17, 2, 2}, {37, 8, 24}, {128, 32, 384}, {5, 1, 7}, {7, 3, 3}, {8, 5, 9}, {9, 4, 4}, {15, 2, 6},
	} {
		src32 := make([]float32, (s.rows-1)*s.lds+s.cols)
		src64 := make([]float64, len(src32))
		for i := range src32 {
			src32[i], src64[i] = float32(i), float64(i)
		}
		d32, d64 := make([]float32, s.rows*s.cols, s.rows*s.cols+16), make([]float64, s.rows*s.cols)
		for i := range d32[:cap(d32)] {
			d32[:cap(d32)][i] = guard
		}
		transpose(d32, src32, s.rows, s.cols, s.lds)
		transpose(d64, src64, s.rows, s.cols, s.lds)
		for i := range d64 {
			if float64(d32[i]) != d64[i] || d64[i] != float64((i%s.rows)*s.lds+i/s.rows) {
				t.Fatalf("%v: element %d is %g (float32) and %g (float64)", s, i, d32[i], d64[i])
			}
		}
		for _, v := range d32[len(d32):cap(d32)] {
			if v != guard {
				t.Fatalf("%v: wrote past the end", s)
			}
		}
	}
}
