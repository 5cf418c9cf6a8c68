// Package fp32 is float32 arithmetic that the SIMD kernels of sfsweep compute in one
// instruction and Go does not: the fused multiply-add a·b + c rounded once to float32, as
// VFMADD231PS computes it. The portable kernels use it so that they give the SIMD
// kernels' bits.
package fp32

import "math"

// FMA returns a·b + c rounded once to the nearest float32 (ties to even).
//
// The product of two float32 values is exact in float64, so p + c rounded to float64 is
// the sum rounded once; rounding that to float32 rounds twice, which errs only when the
// float64 sum lies exactly halfway between two float32 values while the exact sum does
// not. Then the float64 sum's error (TwoSum, exact) says on which side the exact sum lies,
// and the sum is moved one float64 ulp toward it before the final rounding.
func FMA(a, b, c float32) float32 {
	if r, ok := Quick(a, b, c); ok {
		return r
	}
	return fma(a, b, c)
}

// Quick is FMA's fast path, small enough to inline into a kernel's inner loop: it returns
// a·b + c rounded once and true, or false where FMA must take its careful path. A hot loop
// writes
//
//	r, ok := fp32.Quick(a, b, c)
//	if !ok {
//		r = fp32.FMA(a, b, c)
//	}
func Quick(a, b, c float32) (float32, bool) {
	s := float64(a)*float64(b) + float64(c) // the product is exact: fused or not, one rounding
	// Rounding s to float32 is right unless s lies exactly halfway between two float32
	// values (its 29 low mantissa bits 1 followed by zeros) or is below the normal float32
	// range (a subnormal result, rounded at another bit): fma handles those. The exponent
	// field of |s| ≥ 2⁻¹²⁶ is at least 1023 − 126.
	u := math.Float64bits(s)
	return float32(s), u&(1<<29-1) != 1<<28 && (u>>52)&0x7ff >= 1023-126
}

// fma is FMA's careful path.
func fma(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	s := p + float64(c)
	cc := float64(c)
	f := float32(s)
	if float64(f) == s || math.IsInf(s, 0) || math.IsNaN(s) {
		return f
	}
	// the other float32 neighbour of s, and whether s is their midpoint
	g := math.Nextafter32(f, float32(math.Copysign(math.Inf(1), s-float64(f))))
	if s != (float64(f)+float64(g))/2 {
		return f
	}
	bb := s - p
	e := (p - (s - bb)) + (cc - bb) // s + e = p + c exactly
	if e == 0 {
		return f
	}
	return float32(math.Nextafter(s, math.Copysign(math.Inf(1), e)))
}
