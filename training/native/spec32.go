package native

// The portable float32 kernels: the arithmetic of the SIMD kernels (kernels_amd64.s,
// kernels_avx2_amd64.s) written out in Go, operation for operation, so that every kernel
// family gives the same bits. A fused multiply-add of the SIMD kernels is fp32.FMA here; a
// reduction keeps 16 lanes (element i in lane i mod 16) reduced by hsum16's tree; e^x and
// erf are the polynomials of EXP and PHI. Each function names the SIMD kernel it mirrors.

import (
	"math"

	"github.com/sfsweep/sfsweep/internal/fp32"
)

// The constants of EXP and PHI, as the SIMD kernels hold them (bit patterns).
var (
	expLog2e  = math.Float32frombits(0x3fb8aa3b) // log2(e)
	expLn2Hi  = math.Float32frombits(0x3f318000) // ln 2, high part
	expLn2Lo  = math.Float32frombits(0xb95e8083) // ln 2, low part
	expP      = [5]float32{math.Float32frombits(0x39506967), math.Float32frombits(0x3ab743ce), math.Float32frombits(0x3c088908), math.Float32frombits(0x3d2aa9c1), math.Float32frombits(0x3e2aaaaa)}
	erfA      = [5]float32{math.Float32frombits(0x3e827906), math.Float32frombits(0xbe91a98e), math.Float32frombits(0x3fb5f0e3), math.Float32frombits(0xbfba00e3), math.Float32frombits(0x3f87dc22)} // a1…a5 of A&S 7.1.26
	erfP      = math.Float32frombits(0x3ea7ba05)                                                                                                                                                     // p of A&S 7.1.26
	invSqrt2  = math.Float32frombits(0x3f3504f3)                                                                                                                                                     // 1/√2
	invSqrt2P = math.Float32frombits(0x3ecc422a)                                                                                                                                                     // 1/√(2π)
)

// exp32 is EXP: x clamped to [−110, 89] (NaN stays NaN), n = round-to-even(x·log2 e),
// r = x − n·ln2 (two fused steps), e^r = 1 + r·(1 + r·(½ + r·(p4 + r·(p3 + r·(p2 +
// r·(p1 + r·p0)))))) by fused steps, times 2^⌊n/2⌋ and then 2^(n−⌊n/2⌋).
func exp32(x float32) float32 {
	if x < -110 {
		x = -110
	}
	if x > 89 {
		x = 89
	}
	if x != x {
		return x
	}
	b := float32(math.RoundToEven(float64(x * expLog2e)))
	r := fp32.FMA(-b, expLn2Hi, x)
	r = fp32.FMA(-b, expLn2Lo, r)
	c := expP[0]
	for _, p := range expP[1:] {
		c = fp32.FMA(r, c, p)
	}
	c = fp32.FMA(r, c, 0.5)
	c = fp32.FMA(r, c, 1)
	c = fp32.FMA(r, c, 1)
	n := int32(b)
	d := n >> 1
	c *= math.Float32frombits(uint32(d+127) << 23)
	return c * math.Float32frombits(uint32(n-d+127)<<23)
}

// phi32 is PHI: Φ(x) = ½(1 + erf(x/√2)) with erf from Abramowitz & Stegun 7.1.26, and
// e^(−x²/2).
func phi32(x float32) (cdf, gauss float32) {
	q := x * x
	q *= 0.5
	gauss = exp32(0 - q)
	a := float32(math.Abs(float64(x))) * invSqrt2
	t := 1 / fp32.FMA(a, erfP, 1)
	y := erfA[4]
	for _, c := range [...]float32{erfA[3], erfA[2], erfA[1], erfA[0]} {
		y = fp32.FMA(t, y, c)
	}
	y *= t
	y *= gauss
	h := fp32.FMA(-0.5, y, 0.5)                                                 // ½·erf(|x|/√2)
	h = math.Float32frombits(math.Float32bits(h) | math.Float32bits(x)&(1<<31)) // x's sign OR-ed in
	return h + 0.5, gauss
}

// hsum16 is HSUM over 16 lanes: lanes j and j+8, then j and j+4, then j and j+2, then the two.
func hsum16(l *[16]float32) float32 {
	var a [8]float32
	for j := range a {
		a[j] = l[j] + l[j+8]
	}
	b0, b1, b2, b3 := a[0]+a[4], a[1]+a[5], a[2]+a[6], a[3]+a[7]
	return (b0 + b2) + (b1 + b3)
}

// sumSquares32Go mirrors sumSquares32: Σ x² in 16 lanes of fused multiply-adds.
func sumSquares32Go(x []float32) float32 {
	var l [16]float32
	for i, v := range x {
		l[i%16] = fp32.FMA(v, v, l[i%16])
	}
	return hsum16(&l)
}

// scaleMul32Go mirrors scaleMul32: out = (x·s)·w.
func scaleMul32Go(out, x, w []float32, s float32) {
	for i, v := range x[:len(out)] {
		out[i] = v * s * w[i]
	}
}

// scale32Go mirrors scale32: x = x·s.
func scale32Go(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}

// rmsnormBackward32Go mirrors rmsnormBackward32: x̂ = x·rs; dwPart += dout·x̂ (fused);
// dot = Σ x̂·(dout·w) in 16 lanes, times invC; dx += rs·(dout·w − x̂·dot) (both fused).
func rmsnormBackward32Go(dx, dwPart, dout, x, w []float32, rs, invC float32) {
	var l [16]float32
	for i, d := range dout {
		xh := x[i] * rs
		dwPart[i] = fp32.FMA(d, xh, dwPart[i])
		l[i%16] = fp32.FMA(xh, d*w[i], l[i%16])
	}
	dot := hsum16(&l) * invC
	for i, d := range dout {
		xh := x[i] * rs
		t := fp32.FMA(-xh, dot, d*w[i])
		dx[i] = fp32.FMA(t, rs, dx[i])
	}
}

// rope32Go mirrors rope32 (ROTATE): each pair (a, b) of the two halves of a head becomes
// (a·cos − b·sin, a·sin + b·cos), the second product of each fused.
func rope32Go(x, cos, sin []float32, d int) {
	h := d / 2
	for j := 0; j+d <= len(x); j += d {
		x1, x2 := x[j:j+h], x[j+h:j+d]
		for i, a := range x1 {
			b := x2[i]
			x1[i] = fp32.FMA(-b, sin[i], a*cos[i])
			x2[i] = fp32.FMA(b, cos[i], a*sin[i])
		}
	}
}

// softmax32Go mirrors softmax32: mx = max x; x = e^(x − mx), summed in 16 lanes; then
// x = x·(1/sum).
func softmax32Go(x []float32) (mx, sum float32) {
	mx = x[0]
	for _, v := range x[1:] {
		if v > mx {
			mx = v
		}
	}
	var l [16]float32
	for i, v := range x {
		e := exp32(v - mx)
		x[i] = e
		l[i%16] += e
	}
	sum = hsum16(&l)
	inv := 1 / sum
	for i := range x {
		x[i] *= inv
	}
	return mx, sum
}

// softmaxBackward32Go mirrors softmaxBackward32: dot = Σ p·dp in 16 lanes (fused);
// dp = ((dp − dot)·p)·scale.
func softmaxBackward32Go(dp, p []float32, scale float32) {
	var l [16]float32
	for i, v := range p {
		l[i%16] = fp32.FMA(v, dp[i], l[i%16])
	}
	dot := hsum16(&l)
	for i, v := range p {
		dp[i] = (dp[i] - dot) * v * scale
	}
}

// swiglu32Go mirrors swigluForward32: out = (g/(1 + e^(0−g)))·u.
func swiglu32Go(out, g, u []float32) {
	for i, v := range g[:len(out)] {
		out[i] = v / (exp32(0-v) + 1) * u[i]
	}
}

// swigluBackward32Go mirrors swigluBackward32: s = 1/(1 + e^(0−g)); du = (s·g)·dout;
// dg = (((g·(1 − s) + 1)·s)·u)·dout with g·(1 − s) + 1 fused.
func swigluBackward32Go(dg, du, dout, g, u []float32) {
	for i, v := range g[:len(dg)] {
		s := 1 / (exp32(0-v) + 1)
		du[i] = s * v * dout[i]
		t := fp32.FMA(v, 1-s, 1)
		dg[i] = t * s * u[i] * dout[i]
	}
}

// geluForward32Go mirrors geluForward32: out = Φ(x)·x.
func geluForward32Go(out, x []float32) {
	for i, v := range x[:len(out)] {
		cdf, _ := phi32(v)
		out[i] = cdf * v
	}
}

// geluBackward32Go mirrors geluBackward32: dx = (Φ(x) + (x·e^(−x²/2))·(1/√(2π)))·dout,
// the sum fused.
func geluBackward32Go(dx, dout, x []float32) {
	for i, v := range x[:len(dx)] {
		cdf, gauss := phi32(v)
		dx[i] = fp32.FMA(v*gauss, invSqrt2P, cdf) * dout[i]
	}
}

// matmul32Go mirrors matmul32: each element of C one chain of fused multiply-adds in
// increasing p from 0, then times alpha.
func matmul32Go(c []float32, ldc int, a []float32, rsA, csA int, b []float32, ldb, m, n, k int, alpha float32) {
	matmulLoop(c, ldc, a, rsA, csA, b, ldb, m, n, k, alpha)
}
