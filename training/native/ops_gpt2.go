package native

import "math"

// The ops of GPT-2 that LLaMA does not have, forward and backward side by side, in the
// conventions of ops.go: each works serially on the rows (or positions) it is given, and
// every backward ADDS into its gradients unless its comment says it overwrites. They are
// portable loops for any T (no assembly).
//
// Shapes: B batch, T sequence length, C = Dim, F = Hidden, N = B·T rows; W is the width of
// a biased linear layer's output (3C, C or F).

// positionForward adds the position embeddings to the rows of out; row r is at position
// (r0+r) mod T.
// out (n,C), wpe (Context,C)
func positionForward[T Float](out, wpe []T, r0, nt, c int) {
	for r := 0; r*c < len(out); r++ {
		t := (r0 + r) % nt
		o, p := out[r*c:(r+1)*c], wpe[t*c:(t+1)*c]
		for i := range o {
			o[i] += p[i]
		}
	}
}

// positionBackward adds to the gradient of the position embeddings of positions [lo, hi)
// the gradient of the rows at those positions, visiting the sequences in order.
// dwpe (Context,C), dout (B·T,C)
func positionBackward[T Float](dwpe, dout []T, nb, nt, c, lo, hi int) {
	for t := lo; t < hi; t++ {
		d := dwpe[t*c : (t+1)*c]
		for b := range nb {
			g := dout[(b*nt+t)*c : (b*nt+t+1)*c]
			for i := range d {
				d[i] += g[i]
			}
		}
	}
}

// layernormForward computes out = (x − mean)·rstd·w + b row by row, rstd = 1/√(var + eps)
// with the biased variance (as torch.nn.LayerNorm), and keeps mean and rstd for the
// backward pass.
// out (n,C), mean, rstd (n), x (n,C), w, b (C)
func layernormForward[T Float](out, mean, rstd, x, w, b []T, c int, eps T) {
	w, b = w[:c], b[:c]
	for r := range rstd {
		xr := x[r*c : (r+1)*c]
		var s T
		for _, v := range xr {
			s += v
		}
		mu := s / T(c)
		var s2 T
		for _, v := range xr {
			d := v - mu
			s2 += d * d
		}
		rs := T(1 / math.Sqrt(float64(s2/T(c)+eps)))
		mean[r], rstd[r] = mu, rs
		o := out[r*c : (r+1)*c]
		for i, v := range xr {
			o[i] = (v-mu)*rs*w[i] + b[i]
		}
	}
}

// layernormBackward adds the gradient with respect to x to dx and writes the sums over the
// rows of dout·x̂ and of dout into dwPart and dbPart (overwriting them), so the caller can
// reduce dw and db over chunks of rows in a fixed order. With x̂ = (x − mean)·rstd and
// dx̂ = dout·w: dx = rstd·(dx̂ − mean(dx̂) − x̂·mean(dx̂·x̂)).
// dx (n,C), dwPart, dbPart (C), dout (n,C), x (n,C), w (C), mean, rstd (n)
func layernormBackward[T Float](dx, dwPart, dbPart, dout, x, w, mean, rstd []T, c int) {
	w, dwPart, dbPart = w[:c], dwPart[:c], dbPart[:c]
	clear(dwPart)
	clear(dbPart)
	invC := 1 / T(c)
	for r, rs := range rstd {
		mu := mean[r]
		xr, gr, dxr := x[r*c:(r+1)*c], dout[r*c:(r+1)*c], dx[r*c:(r+1)*c]
		var sg, sgx T // Σ dx̂, Σ dx̂·x̂
		for i, g := range gr {
			dxh := g * w[i]
			sg += dxh
			sgx += dxh * (xr[i] - mu) * rs
		}
		sg, sgx = sg*invC, sgx*invC
		for i, g := range gr {
			xh := (xr[i] - mu) * rs
			dxr[i] += rs * (g*w[i] - sg - xh*sgx)
			dwPart[i] += g * xh
			dbPart[i] += g
		}
	}
}

// biasForward adds b to every row of out.
// out (n,W), b (W)
func biasForward[T Float](out, b []T) {
	w := len(b)
	for r := 0; r*w < len(out); r++ {
		o := out[r*w : (r+1)*w]
		for i := range o {
			o[i] += b[i]
		}
	}
}

// biasBackward writes the sum over the rows of dout into dbPart (overwriting it); the
// caller reduces the parts of fixed chunks of rows in order.
// dbPart (W), dout (n,W)
func biasBackward[T Float](dbPart, dout []T) {
	w := len(dbPart)
	clear(dbPart)
	for r := 0; r*w < len(dout); r++ {
		g := dout[r*w : (r+1)*w]
		for i := range dbPart {
			dbPart[i] += g[i]
		}
	}
}

// geluForward computes the exact GELU out = 0.5·x·(1 + erf(x/√2)) (torch.nn.GELU's
// default, not the tanh approximation): in float64 with math.Erf per element, or for
// float32 on AVX-512 with an erf accurate to 1.5e-7 (kernels_gelu_amd64.s).
// out (n,F), x (n,F)
func geluForward[T Float](out, x []T) {
	x = x[:len(out)]
	if fast[T]() && len(out) > 0 {
		geluForward32(p32(out), p32(x), len(out))
		return
	}
	if is32[T]() {
		geluForward32Go(f32(out), f32(x))
		return
	}
	for i, v := range x {
		u := float64(v)
		out[i] = T(0.5 * u * (1 + math.Erf(u*(1/math.Sqrt2))))
	}
}

// geluBackward writes the gradient of the GELU's input into dx (overwriting it):
// dx = dout·(Φ(x) + x·φ(x)), Φ(x) = 0.5·(1 + erf(x/√2)), φ(x) = e^(−x²/2)/√(2π).
// dx (n,F), dout (n,F), x (n,F)
func geluBackward[T Float](dx, dout, x []T) {
	dout, x = dout[:len(dx)], x[:len(dx)]
	if fast[T]() && len(dx) > 0 {
		geluBackward32(p32(dx), p32(dout), p32(x), len(dx))
		return
	}
	if is32[T]() {
		geluBackward32Go(f32(dx), f32(dout), f32(x))
		return
	}
	const invSqrt2Pi = 0.3989422804014327 // 1/√(2π)
	for i, v := range x {
		u := float64(v)
		cdf := 0.5 * (1 + math.Erf(u*(1/math.Sqrt2)))
		pdf := invSqrt2Pi * math.Exp(-0.5*u*u)
		dx[i] = dout[i] * T(cdf+u*pdf)
	}
}
