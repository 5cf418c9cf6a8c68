package native

import (
	"math"
	"unsafe"

	"github.com/sfsweep/sfsweep/internal/fp32"
)

// Row primitives under the ops: a portable loop for any T, and the SIMD kernel of
// kernels_amd64.go where T is float32 and simd is set (the AVX-512 set where avx512 is set,
// the AVX2 set otherwise). Slices passed together have the same length unless stated.

// p32 returns a pointer to the first element of s as *float32 (s must be float32-sized and
// non-empty).
func p32[T Float](s []T) *float32 { return (*float32)(unsafe.Pointer(unsafe.SliceData(s))) }

// f32 is s as []float32 (T must be float32-sized).
func f32[T Float](s []T) []float32 { return unsafe.Slice(p32(s), len(s)) }

// is32 reports whether T is float32-sized: then the portable loops are those of spec32.go,
// which give the SIMD kernels' bits.
func is32[T Float]() bool {
	var zero T
	return unsafe.Sizeof(zero) == 4
}

// fast reports whether the float32 kernels apply to T.
func fast[T Float]() bool {
	var zero T
	return simd && unsafe.Sizeof(zero) == 4
}

// vSumSquares returns Σ x².
func vSumSquares[T Float](x []T) T {
	if fast[T]() && len(x) > 0 {
		if avx512 {
			return T(sumSquares32(p32(x), len(x)))
		}
		return T(sumSquares32AVX2(p32(x), len(x)))
	}
	if is32[T]() {
		return T(sumSquares32Go(f32(x)))
	}
	var s0, s1, s2, s3 T
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * x[i]
		s1 += x[i+1] * x[i+1]
		s2 += x[i+2] * x[i+2]
		s3 += x[i+3] * x[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i] * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// vScaleMul sets out = x·s·w.
func vScaleMul[T Float](out, x, w []T, s T) {
	x, w = x[:len(out)], w[:len(out)]
	if fast[T]() && len(out) > 0 {
		if avx512 {
			scaleMul32(p32(out), p32(x), p32(w), len(out), float32(s))
		} else {
			scaleMul32AVX2(p32(out), p32(x), p32(w), len(out), float32(s))
		}
		return
	}
	if is32[T]() {
		scaleMul32Go(f32(out), f32(x), f32(w), float32(s))
		return
	}
	for i, v := range x {
		out[i] = v * s * w[i]
	}
}

// vRMSNormBackward is one row of the RMSNorm backward pass: with x̂ = x·rs and
// dot = mean(dout·w·x̂), it adds dout·x̂ to dwPart and rs·(dout·w − x̂·dot) to dx.
func vRMSNormBackward[T Float](dx, dwPart, dout, x, w []T, rs T) {
	n := len(dx)
	dwPart, dout, x, w = dwPart[:n], dout[:n], x[:n], w[:n]
	if fast[T]() && n > 0 {
		if avx512 {
			rmsnormBackward32(p32(dx), p32(dwPart), p32(dout), p32(x), p32(w), n, float32(rs), float32(1/float64(n)))
		} else {
			rmsnormBackward32AVX2(p32(dx), p32(dwPart), p32(dout), p32(x), p32(w), n, float32(rs), float32(1/float64(n)))
		}
		return
	}
	if is32[T]() {
		rmsnormBackward32Go(f32(dx), f32(dwPart), f32(dout), f32(x), f32(w), float32(rs), float32(1/float64(n)))
		return
	}
	var dot T
	for i, d := range dout {
		xh := x[i] * rs
		dwPart[i] += d * xh
		dot += d * w[i] * xh
	}
	dot /= T(n)
	for i, d := range dout {
		dx[i] += rs * (d*w[i] - x[i]*rs*dot)
	}
}

// vRotateHalves rotates each of the len(x)/d consecutive vectors of d elements of x in
// the rotate_half form: with h = d/2, the pairs (x[i], x[i+h]) for i < h are rotated by the
// angles whose cosines and sines are cos[i] and sin[i]:
// (x[i], x[i+h]) ← (x[i]·cos − x[i+h]·sin, x[i]·sin + x[i+h]·cos).
func vRotateHalves[T Float](x, cos, sin []T, d int) {
	h := d / 2
	cos, sin = cos[:h], sin[:h]
	if fast[T]() && len(x) >= d {
		if avx512 {
			rope32(p32(x), p32(cos), p32(sin), len(x)/d, d)
		} else {
			rope32AVX2(p32(x), p32(cos), p32(sin), len(x)/d, d)
		}
		return
	}
	if is32[T]() {
		rope32Go(f32(x), f32(cos), f32(sin), d)
		return
	}
	for j := 0; j+d <= len(x); j += d {
		x1, x2 := x[j:j+h], x[j+h:j+d]
		for i, a := range x1 {
			b := x2[i]
			x1[i] = a*cos[i] - b*sin[i]
			x2[i] = a*sin[i] + b*cos[i]
		}
	}
}

// vSoftmax replaces x (non-empty) by its softmax and returns max x and Σ e^(x−max), from
// which log Σ e^x = max + log(sum).
func vSoftmax[T Float](x []T) (mx, sum T) {
	if fast[T]() {
		var m, s float32
		if avx512 {
			m, s = softmax32(p32(x), len(x))
		} else {
			m, s = softmax32AVX2(p32(x), len(x))
		}
		return T(m), T(s)
	}
	if is32[T]() {
		m, s := softmax32Go(f32(x))
		return T(m), T(s)
	}
	mx = x[0]
	for _, v := range x[1:] {
		mx = max(mx, v)
	}
	for i, v := range x {
		e := exp(v - mx)
		x[i] = e
		sum += e
	}
	inv := 1 / sum
	for i := range x {
		x[i] *= inv
	}
	return mx, sum
}

// vSoftmaxBackward turns dp, the gradient of softmax probabilities p, into the gradient of
// the softmax input times scale: dp ← scale·p·(dp − Σ p·dp).
func vSoftmaxBackward[T Float](dp, p []T, scale T) {
	p = p[:len(dp)]
	if fast[T]() && len(dp) > 0 {
		if avx512 {
			softmaxBackward32(p32(dp), p32(p), len(dp), float32(scale))
		} else {
			softmaxBackward32AVX2(p32(dp), p32(p), len(dp), float32(scale))
		}
		return
	}
	if is32[T]() {
		softmaxBackward32Go(f32(dp), f32(p), float32(scale))
		return
	}
	var dot T
	for i, v := range p {
		dot += v * dp[i]
	}
	for i, v := range p {
		dp[i] = scale * v * (dp[i] - dot)
	}
}

// vSwiGLU sets out = silu(g)·u.
func vSwiGLU[T Float](out, g, u []T) {
	g, u = g[:len(out)], u[:len(out)]
	if fast[T]() && len(out) > 0 {
		if avx512 {
			swigluForward32(p32(out), p32(g), p32(u), len(out))
		} else {
			swigluForward32AVX2(p32(out), p32(g), p32(u), len(out))
		}
		return
	}
	if is32[T]() {
		swiglu32Go(f32(out), f32(g), f32(u))
		return
	}
	for i, x := range g {
		out[i] = x * sigmoid(x) * u[i]
	}
}

// vSwiGLUBackward sets dg = dout·u·σ(g)·(1 + g·(1−σ(g))) and du = dout·silu(g).
func vSwiGLUBackward[T Float](dg, du, dout, g, u []T) {
	n := len(dg)
	du, dout, g, u = du[:n], dout[:n], g[:n], u[:n]
	if fast[T]() && n > 0 {
		if avx512 {
			swigluBackward32(p32(dg), p32(du), p32(dout), p32(g), p32(u), n)
		} else {
			swigluBackward32AVX2(p32(dg), p32(du), p32(dout), p32(g), p32(u), n)
		}
		return
	}
	if is32[T]() {
		swigluBackward32Go(f32(dg), f32(du), f32(dout), f32(g), f32(u))
		return
	}
	for i, x := range g {
		s := sigmoid(x)
		dg[i] = dout[i] * u[i] * s * (1 + x*(1-s))
		du[i] = dout[i] * x * s
	}
}

// vScale multiplies x by s.
func vScale[T Float](x []T, s T) {
	if fast[T]() && len(x) > 0 {
		if avx512 {
			scale32(p32(x), len(x), float32(s))
		} else {
			scale32AVX2(p32(x), len(x), float32(s))
		}
		return
	}
	if is32[T]() {
		scale32Go(f32(x), float32(s))
		return
	}
	for i := range x {
		x[i] *= s
	}
}

// vMatmul sets C = alpha·A·B, where C is m×n with row stride ldc, A is m×k with element
// (i, p) at a[i·rsA + p·csA] (a row-major matrix, or the transpose of one), and B is k×n
// row-major with row stride ldb. It serves the small products of attention, where B's rows
// are contiguous and nothing needs packing.
func vMatmul[T Float](c []T, ldc int, a []T, rsA, csA int, b []T, ldb, m, n, k int, alpha T) {
	if m == 0 || n == 0 {
		return
	}
	// the last elements touched, so that the slices cover every access
	_ = c[(m-1)*ldc+n-1]
	if k > 0 {
		_ = a[(m-1)*rsA+(k-1)*csA]
		_ = b[(k-1)*ldb+n-1]
	}
	if fast[T]() {
		if avx512 {
			matmul32(p32(c), ldc, p32(a), rsA, csA, p32(b), ldb, m, n, k, float32(alpha))
		} else {
			matmul32AVX2(p32(c), ldc, p32(a), rsA, csA, p32(b), ldb, m, n, k, float32(alpha))
		}
		return
	}
	if is32[T]() {
		matmul32Go(f32(c), ldc, f32(a), rsA, csA, f32(b), ldb, m, n, k, float32(alpha))
		return
	}
	matmulLoop(c, ldc, a, rsA, csA, b, ldb, m, n, k, alpha)
}

// matmulLoop computes C = alpha·A·B (see vMatmul) with each element one chain of
// multiply-adds in increasing p from 0, then times alpha; in float32 the multiply-adds are
// fused, as the SIMD kernels' (matmul32).
func matmulLoop[T Float](c []T, ldc int, a []T, rsA, csA int, b []T, ldb, m, n, k int, alpha T) {
	fused := is32[T]()
	for i := range m {
		ci := c[i*ldc : i*ldc+n]
		clear(ci)
		for p := range k {
			aip := a[i*rsA+p*csA]
			for j, bv := range b[p*ldb : p*ldb+n] {
				if fused {
					ci[j] = T(fp32.FMA(float32(aip), float32(bv), float32(ci[j])))
				} else {
					ci[j] += aip * bv
				}
			}
		}
		for j := range ci {
			ci[j] *= alpha
		}
	}
}

// transpose writes the rows×cols matrix src (row stride lds) transposed into dst (cols×rows,
// contiguous).
func transpose[T Float](dst, src []T, rows, cols, lds int) {
	if rows == 0 || cols == 0 {
		return
	}
	dst = dst[:rows*cols]
	_ = src[(rows-1)*lds+cols-1]
	if fast[T]() {
		if avx512 {
			transpose32(p32(dst), p32(src), rows, cols, lds)
		} else {
			transpose32AVX2(p32(dst), p32(src), rows, cols, lds)
		}
		return
	}
	for i := range rows {
		row := src[i*lds : i*lds+cols]
		for j, v := range row {
			dst[j*rows+i] = v
		}
	}
}

// exp is e^x in T's precision.
func exp[T Float](x T) T { return T(math.Exp(float64(x))) }

// sigmoid is 1/(1+e^−x).
func sigmoid[T Float](x T) T { return 1 / (1 + exp(-x)) }
