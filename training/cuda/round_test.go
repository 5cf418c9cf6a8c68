package cuda

import (
	"math"
	"math/rand/v2"
	"testing"
)

// A Go mirror of the round path's producers (kernels.cu rmsnormForward, swigluForward,
// rmsnormBackwardDx, swigluBackward): the bfloat16 copy they write is the float32 value
// they write, rounded once, so it is bitwise what to_bf16 made of the default path's
// output. The mirror runs RMSNorm's warp per row (32 lanes striding over the row, the
// shuffle tree of warpSum) and checks both outputs against a float64 reference.

// rmsnormMirror is rmsnormForward on rows of x (N,C): out, out16 and rstd.
func rmsnormMirror(x, w []float32, c int, eps float32) (out []float32, out16 []uint16, rstd []float32) {
	n := len(x) / c
	out, out16, rstd = make([]float32, n*c), make([]uint16, n*c), make([]float32, n)
	for r := range n {
		xr := x[r*c : (r+1)*c]
		ss := make([]float32, warp)
		for l := range ss {
			for i := l; i < c; i += warp {
				ss[l] += xr[i] * xr[i]
			}
		}
		warpReduce(ss, add)
		// sqrtf and the division are correctly rounded; float64's sqrt rounded to
		// float32 is too
		rs := 1 / float32(math.Sqrt(float64(ss[0]/float32(c)+eps)))
		rstd[r] = rs
		for l := range warp {
			for i := l; i < c; i += warp {
				y := xr[i] * rs * w[i]
				out[r*c+i], out16[r*c+i] = y, roundBF16(y)
			}
		}
	}
	return out, out16, rstd
}

// swigluMirror is swigluForward on gu (N,2F): out and out16 (N,F).
func swigluMirror(gu []float32, f int) (out []float32, out16 []uint16) {
	n := len(gu) / (2 * f)
	out, out16 = make([]float32, n*f), make([]uint16, n*f)
	for idx := range out {
		r, i := idx/f, idx%f
		g, u := gu[r*2*f+i], gu[r*2*f+f+i]
		s := 1 / (1 + mexp(-g))
		y := g * s * u
		out[idx], out16[idx] = y, roundBF16(y)
	}
	return out, out16
}

// rmsnormBackwardDxMirror is rmsnormBackwardDx: dx += rstd·(dout·w − x̂·mean(dout·w·x̂))
// per row, with the warp's reduction, and the new dx's bfloat16 copy.
func rmsnormBackwardDxMirror(dx, dout, x, w, rstd []float32, c int) (dx16 []uint16) {
	dx16 = make([]uint16, len(dx))
	for r := range rstd {
		d, xr, rs := dout[r*c:(r+1)*c], x[r*c:(r+1)*c], rstd[r]
		dot := make([]float32, warp)
		for l := range dot {
			for i := l; i < c; i += warp {
				dot[l] += d[i] * w[i] * (xr[i] * rs)
			}
		}
		warpReduce(dot, add)
		m := dot[0] / float32(c)
		for l := range warp {
			for i := l; i < c; i += warp {
				y := dx[r*c+i] + rs*(d[i]*w[i]-xr[i]*rs*m)
				dx[r*c+i], dx16[r*c+i] = y, roundBF16(y)
			}
		}
	}
	return dx16
}

// swigluBackwardMirror is swigluBackward: dgu (N,2F) and its copy from dout (N,F).
func swigluBackwardMirror(dout, gu []float32, f int) (dgu []float32, dgu16 []uint16) {
	dgu, dgu16 = make([]float32, len(gu)), make([]uint16, len(gu))
	for idx, d := range dout {
		r, i := idx/f, idx%f
		g, u := gu[r*2*f+i], gu[r*2*f+f+i]
		s := 1 / (1 + mexp(-g))
		dg, du := d*u*s*(1+g*(1-s)), d*(g*s)
		dgu[r*2*f+i], dgu[r*2*f+f+i] = dg, du
		dgu16[r*2*f+i], dgu16[r*2*f+f+i] = roundBF16(dg), roundBF16(du)
	}
	return dgu, dgu16
}

// closeBF16 reports whether the bfloat16 h is ref rounded: within 2⁻⁸ relative (one
// rounding plus float32's error), or tiny.
func closeBF16(h uint16, ref float64) bool {
	got := float64(math.Float32frombits(uint32(h) << 16))
	return math.Abs(got-ref) <= math.Abs(ref)/256+1e-30
}

func TestRoundProducersMirror(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	for _, c := range []int{1, 12, 31, 33, 768, 1000} {
		n := 5
		x, w := make([]float32, n*c), make([]float32, c)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * 4)
		}
		for i := range w {
			w[i] = float32(1 + rng.NormFloat64()/4)
		}
		const eps = 1e-5
		out, out16, _ := rmsnormMirror(x, w, c, eps)
		for r := range n {
			var ss float64
			for _, v := range x[r*c : (r+1)*c] {
				ss += float64(v) * float64(v)
			}
			rs := 1 / math.Sqrt(ss/float64(c)+eps)
			for i := range c {
				ref := float64(x[r*c+i]) * rs * float64(w[i])
				// the default path: the float32 output, then to_bf16
				if out16[r*c+i] != roundBF16(out[r*c+i]) || !closeBF16(out16[r*c+i], ref) {
					t.Fatalf("C=%d: rmsnorm (%d,%d) = %v (bf16 %#04x), float64 %v", c, r, i, out[r*c+i], out16[r*c+i], ref)
				}
			}
		}
		// backward: dx starts from a gradient already there, as dresid does
		dout, dx := make([]float32, n*c), make([]float32, n*c)
		for i := range dout {
			dout[i], dx[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
		}
		_, _, rstd := rmsnormMirror(x, w, c, eps)
		dx0 := append([]float32(nil), dx...)
		dx16 := rmsnormBackwardDxMirror(dx, dout, x, w, rstd, c)
		for r := range n {
			var dot float64
			for i := range c {
				dot += float64(dout[r*c+i]) * float64(w[i]) * float64(x[r*c+i]) * float64(rstd[r])
			}
			dot /= float64(c)
			for i := range c {
				xh := float64(x[r*c+i]) * float64(rstd[r])
				ref := float64(dx0[r*c+i]) + float64(rstd[r])*(float64(dout[r*c+i])*float64(w[i])-xh*dot)
				if dx16[r*c+i] != roundBF16(dx[r*c+i]) || !closeBF16(dx16[r*c+i], ref) {
					t.Fatalf("C=%d: rmsnorm backward (%d,%d) = %v (bf16 %#04x), float64 %v", c, r, i, dx[r*c+i], dx16[r*c+i], ref)
				}
			}
		}
		gu := make([]float32, n*2*c)
		for i := range gu {
			gu[i] = float32(rng.NormFloat64() * 3)
		}
		sw, sw16 := swigluMirror(gu, c)
		for idx, y := range sw {
			r, i := idx/c, idx%c
			g, u := float64(gu[r*2*c+i]), float64(gu[r*2*c+c+i])
			ref := g / (1 + math.Exp(-g)) * u
			if sw16[idx] != roundBF16(y) || !closeBF16(sw16[idx], ref) {
				t.Fatalf("F=%d: swiglu %d = %v (bf16 %#04x), float64 %v", c, idx, y, sw16[idx], ref)
			}
		}
		dgu, dgu16 := swigluBackwardMirror(dout, gu, c)
		for idx, d := range dout {
			r, i := idx/c, idx%c
			g, u := float64(gu[r*2*c+i]), float64(gu[r*2*c+c+i])
			s := 1 / (1 + math.Exp(-g))
			for k, ref := range []float64{float64(d) * u * s * (1 + g*(1-s)), float64(d) * g * s} {
				j := r*2*c + k*c + i
				if dgu16[j] != roundBF16(dgu[j]) || !closeBF16(dgu16[j], ref) {
					t.Fatalf("F=%d: swiglu backward %d = %v (bf16 %#04x), float64 %v", c, j, dgu[j], dgu16[j], ref)
				}
			}
		}
	}
}
