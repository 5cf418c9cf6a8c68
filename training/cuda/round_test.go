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
				ss[l] += float32(xr[i] * xr[i])
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
				dot[l] += float32(d[i] * w[i] * (xr[i] * rs))
			}
		}
		warpReduce(dot, add)
		m := dot[0] / float32(c)
		for l := range warp {
			for i := l; i < c; i += warp {
				y := dx[r*c+i] + float32(rs*(float32(d[i]*w[i])-float32(xr[i]*rs*m)))
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
		dg, du := d*u*s*(1+float32(g*(1-s))), d*(g*s)
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

// The default path's gather of dq, dk, dv (permute_backward), then the inverse rotation
// of q's and k's gradients in place (rope with −sin), then to_bf16.
func gatherRopeOld(dq, dk, dv, cos, nsin []float32, b, nt, nh, d int) ([]float32, []uint16) {
	c, h := nh*d, d/2
	dqkv := make([]float32, b*nt*3*c)
	for idx := range dq {
		di, t, hh, bb := idx%d, (idx/d)%nt, (idx/(d*nt))%nh, idx/(d*nt*nh)
		dst := (bb*nt+t)*3*c + hh*d + di
		dqkv[dst], dqkv[dst+c], dqkv[dst+2*c] = dq[idx], dk[idx], dv[idx]
	}
	for idx := range b * nt * 2 * nh * h {
		i, head, r := idx%h, (idx/h)%(2*nh), idx/(h*2*nh)
		t := r % nt
		x := dqkv[r*3*c+head*d:]
		co, si := cos[t*h+i], nsin[t*h+i]
		a, bh := x[i], x[i+h]
		x[i] = float32(a*co) - float32(bh*si)
		x[i+h] = float32(a*si) + float32(bh*co)
	}
	out16 := make([]uint16, len(dqkv))
	for i, v := range dqkv {
		out16[i] = roundBF16(v)
	}
	return dqkv, out16
}

// permute_backward_rope_bf16: one thread per (batch, head, position, i < D/2).
func gatherRopeFused(dq, dk, dv, cos, nsin []float32, b, nt, nh, d int) ([]float32, []uint16) {
	c, h := nh*d, d/2
	dqkv, dqkv16 := make([]float32, b*nt*3*c), make([]uint16, b*nt*3*c)
	for idx := range b * nh * nt * h {
		i, t, head := idx%h, (idx/h)%nt, idx/(h*nt)
		hh, bb := head%nh, head/nh
		src, dst := (head*nt+t)*d, (bb*nt+t)*3*c+hh*d
		co, si := cos[t*h+i], nsin[t*h+i]
		for part, in := range [][]float32{dq, dk, dv} {
			a, bh := in[src+i], in[src+i+h]
			x0, x1 := a, bh
			if part < 2 {
				x0 = float32(a*co) - float32(bh*si)
				x1 = float32(a*si) + float32(bh*co)
			}
			o := dst + part*c
			dqkv[o+i], dqkv[o+i+h] = x0, x1
			dqkv16[o+i], dqkv16[o+i+h] = roundBF16(x0), roundBF16(x1)
		}
	}
	return dqkv, dqkv16
}

// The fused gather, rotation and rounding is bitwise the three passes it replaces: no
// transcendental, the same float32 expressions, each product rounded (the conversions
// keep Go from fusing a multiply and an add, as -fmad=false keeps nvcc).
func TestGatherRopeMirror(t *testing.T) {
	for _, s := range []struct{ b, nt, nh, d int }{{1, 1, 1, 2}, {2, 7, 3, 4}, {3, 37, 2, 8}, {2, 65, 4, 64}} {
		n := s.b * s.nh * s.nt * s.d
		dq, dk, dv := randn(n, 1), randn(n, 2), randn(n, 3)
		cos, nsin := randn(s.nt*s.d/2, 4), randn(s.nt*s.d/2, 5)
		o32, o16 := gatherRopeOld(dq, dk, dv, cos, nsin, s.b, s.nt, s.nh, s.d)
		f32, f16 := gatherRopeFused(dq, dk, dv, cos, nsin, s.b, s.nt, s.nh, s.d)
		for i := range o32 {
			if math.Float32bits(o32[i]) != math.Float32bits(f32[i]) || o16[i] != f16[i] {
				t.Fatalf("%+v: dqkv[%d] fused %v (%#04x), default %v (%#04x)", s, i, f32[i], f16[i], o32[i], o16[i])
			}
		}
	}
}

// randn is n standard normal float32s (shared with the device tests).
func randn(n int, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

// softmaxCausalMirror is softmaxCausal on the rows of att (rows,T), in place, with the
// probabilities' copy: a warp per row striding over its first i+1 entries.
func softmaxCausalMirror(att []float32, nt int) []uint16 {
	att16 := make([]uint16, len(att))
	for r := range len(att) / nt {
		i, p := r%nt, att[r*nt:(r+1)*nt]
		mx := make([]float32, warp)
		for l := range mx {
			mx[l] = float32(math.Inf(-1))
			for j := l; j <= i; j += warp {
				mx[l] = fmaxf(mx[l], p[j])
			}
		}
		warpReduce(mx, fmaxf)
		sum := make([]float32, warp)
		for l := range sum {
			for j := l; j <= i; j += warp {
				p[j] = mexp(p[j] - mx[0])
				sum[l] += p[j]
			}
		}
		warpReduce(sum, add)
		inv := 1 / sum[0]
		for j := range p {
			if j <= i {
				p[j] *= inv
			} else {
				p[j] = 0
			}
			att16[r*nt+j] = roundBF16(p[j])
		}
	}
	return att16
}

// softmaxCausalBackwardMirror is softmaxCausalBackward: dp becomes scale·p·(dp − Σ p·dp),
// with its copy.
func softmaxCausalBackwardMirror(dp, p []float32, nt int, scale float32) []uint16 {
	dp16 := make([]uint16, len(dp))
	for r := range len(dp) / nt {
		i, g, pr := r%nt, dp[r*nt:(r+1)*nt], p[r*nt:(r+1)*nt]
		dot := make([]float32, warp)
		for l := range dot {
			for j := l; j <= i; j += warp {
				dot[l] += float32(pr[j] * g[j])
			}
		}
		warpReduce(dot, add)
		for j := range g {
			if j <= i {
				g[j] = scale * pr[j] * (g[j] - dot[0])
			} else {
				g[j] = 0
			}
			dp16[r*nt+j] = roundBF16(g[j])
		}
	}
	return dp16
}

func TestSoftmaxCausalMirror(t *testing.T) {
	for _, nt := range []int{1, 7, 33, 100} {
		rows := 3 * nt
		att := randn(rows*nt, uint64(nt))
		s := append([]float32(nil), att...)
		att16 := softmaxCausalMirror(att, nt)
		dp := randn(rows*nt, uint64(nt+1))
		d := append([]float32(nil), dp...)
		dp16 := softmaxCausalBackwardMirror(dp, att, nt, 0.125)
		for r := range rows {
			i := r % nt
			mx := math.Inf(-1)
			for j := 0; j <= i; j++ {
				mx = math.Max(mx, float64(s[r*nt+j]))
			}
			var sum, dot float64
			for j := 0; j <= i; j++ {
				sum += math.Exp(float64(s[r*nt+j]) - mx)
			}
			p := make([]float64, nt)
			for j := 0; j <= i; j++ {
				p[j] = math.Exp(float64(s[r*nt+j])-mx) / sum
				dot += p[j] * float64(d[r*nt+j])
			}
			for j := range nt {
				k := r*nt + j
				ds := 0.125 * p[j] * (float64(d[k]) - dot)
				if att16[k] != roundBF16(att[k]) || !closeBF16(att16[k], p[j]) ||
					dp16[k] != roundBF16(dp[k]) || math.Abs(float64(dp[k])-ds) > 1e-5*(math.Abs(ds)+p[j]) {
					t.Fatalf("T=%d (%d,%d): p %v (bf16 %#04x), float64 %v; dS %v, float64 %v", nt, r, j, att[k], att16[k], p[j], dp[k], ds)
				}
			}
		}
	}
}
