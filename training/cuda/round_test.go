package cuda

import (
	"math"
	"math/rand/v2"
	"testing"
)

// A Go mirror of the round path's producers (kernels.cu rmsnormForward, swigluForward):
// the bfloat16 copy they write is the float32 value they write, rounded once, so it is
// bitwise what to_bf16 made of the default path's output. The mirror runs RMSNorm's warp
// per row (32 lanes striding over the row, the shuffle tree of warpSum) and checks both
// outputs against a float64 reference.

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
	}
}
