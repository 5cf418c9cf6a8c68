package native

import "math"

// The ops of the model, forward and backward side by side. Each works serially on the rows
// (or heads, or columns) it is given; the parallel wrappers in parallel.go hand them
// disjoint ranges. Every backward ADDS into the gradients of parameters and of the residual
// stream unless its comment says it overwrites.
//
// Shapes: B batch, T sequence length, C = Dim, H heads, D = C/H head size, F = Hidden,
// V = Vocab, N = B·T rows.

// encoderForward gathers the token embeddings.
// out (N,C), tokens (N), emb (V,C)
func encoderForward[T Float](out []T, tokens []int32, emb []T, c int) {
	for r, tok := range tokens {
		copy(out[r*c:(r+1)*c], emb[int(tok)*c:(int(tok)+1)*c])
	}
}

// encoderBackward scatters dout into the embedding gradient for the columns [lo, hi),
// visiting rows in order so repeated tokens add up in a fixed order.
// demb (V,C), dout (N,C), tokens (N)
func encoderBackward[T Float](demb, dout []T, tokens []int32, c, lo, hi int) {
	for r, tok := range tokens {
		d := demb[int(tok)*c+lo : int(tok)*c+hi]
		g := dout[r*c+lo : r*c+hi]
		for i := range d {
			d[i] += g[i]
		}
	}
}

// rmsnormForward computes out = x·rsqrt(mean(x²)+eps)·w row by row and keeps rstd for the
// backward pass.
// out (n,C), rstd (n), x (n,C), w (C)
func rmsnormForward[T Float](out, rstd, x, w []T, c int, eps T) {
	w = w[:c]
	for r := range rstd {
		xr := x[r*c : (r+1)*c]
		rs := T(1 / math.Sqrt(float64(vSumSquares(xr)/T(c)+eps)))
		rstd[r] = rs
		vScaleMul(out[r*c:(r+1)*c], xr, w, rs)
	}
}

// rmsnormBackward adds the gradient with respect to x to dx and writes the sums over the
// rows of dout·x̂ into dwPart, so the caller can reduce dw over chunks of rows in a fixed
// order. With x̂ = x·rstd and dx̂ = dout·w: dx = rstd·(dx̂ − x̂·mean(dx̂·x̂)).
// dx (n,C), dwPart (C), dout (n,C), x (n,C), w (C), rstd (n)
func rmsnormBackward[T Float](dx, dwPart, dout, x, w, rstd []T, c int) {
	w, dwPart = w[:c], dwPart[:c]
	clear(dwPart)
	for r, rs := range rstd {
		vRMSNormBackward(dx[r*c:(r+1)*c], dwPart, dout[r*c:(r+1)*c], x[r*c:(r+1)*c], w, rs)
	}
}

// ropeTables returns cos and sin of the rotary angles pos·θ^(−2i/D) for positions [0, T)
// and i ∈ [0, D/2), computed in float64.
// cos, sin (T,D/2)
func ropeTables[T Float](nt, d int, theta float64) (cos, sin []T) {
	h := d / 2
	cos, sin = make([]T, nt*h), make([]T, nt*h)
	for p := range nt {
		for i := range h {
			a := float64(p) * math.Pow(theta, -float64(2*i)/float64(d))
			cos[p*h+i], sin[p*h+i] = T(math.Cos(a)), T(math.Sin(a))
		}
	}
	return cos, sin
}

// ropeForward rotates q and k in place, in the rotate_half form: the pairs are
// (x_i, x_{i+D/2}) of each head, rotated by the angle of position t and index i. Row r of
// qkv is at position (r0+r) mod T.
// qkv (n,3C), cos, sin (T,D/2)
func ropeForward[T Float](qkv, cos, sin []T, r0, nt, c, nh int) {
	rope(qkv, cos, sin, r0, nt, c, nh)
}

// ropeBackward rotates the gradients of q and k back, in place: the inverse rotation,
// given the table of −sin.
// dqkv (n,3C), cos, negSin (T,D/2)
func ropeBackward[T Float](dqkv, cos, negSin []T, r0, nt, c, nh int) {
	rope(dqkv, cos, negSin, r0, nt, c, nh)
}

func rope[T Float](qkv, cos, sin []T, r0, nt, c, nh int) {
	d := c / nh
	h := d / 2
	for r := 0; r*3*c < len(qkv); r++ {
		t := (r0 + r) % nt
		// q and k are adjacent: 2H head vectors of D elements
		vRotateHalves(qkv[r*3*c:r*3*c+2*c], cos[t*h:(t+1)*h], sin[t*h:(t+1)*h], d)
	}
}

// attBlock is the row-block size of the causal attention: scores are computed for row
// block [r0, r1) against keys [0, r1) only, so most of the masked upper triangle is never
// computed.
const attBlock = 16

// attentionForward computes causal softmax attention with scale 1/√D for the (batch, head)
// pairs [lo, hi), numbered b·H+h. q, k, v are the three C-wide parts of a qkv row (q and k
// rotated); att receives the probabilities (zero above the diagonal within each block).
// kT is scratch for the keys of one pair, transposed.
// y (B,T,C), att (B,H,T,T), qkv (B,T,3C), kT (D,T)
func attentionForward[T Float](y, att, qkv, kT []T, nt, c, nh, lo, hi int) {
	d := c / nh
	scale := T(1 / math.Sqrt(float64(d)))
	for bh := lo; bh < hi; bh++ {
		b, h := bh/nh, bh%nh
		q := qkv[b*nt*3*c+h*d:]
		k, v := q[c:], q[2*c:]
		p := att[bh*nt*nt : (bh+1)*nt*nt]
		yb := y[b*nt*c+h*d:]
		kt := kT[:d*nt]
		transpose(kt, k, nt, d, 3*c)
		for r0 := 0; r0 < nt; r0 += attBlock {
			r1 := min(r0+attBlock, nt)
			// S[r0:r1, 0:r1] = scale·Q[r0:r1]·Kᵀ[:, 0:r1]
			vMatmul(p[r0*nt:], nt, q[r0*3*c:], 3*c, 1, kt, nt, r1-r0, r1, d, scale)
			for i := r0; i < r1; i++ {
				softmaxCausal(p[i*nt:i*nt+r1], i+1)
			}
			// Y[r0:r1] = P[r0:r1, 0:r1]·V[0:r1]
			vMatmul(yb[r0*c:], c, p[r0*nt:], nt, 1, v, 3*c, r1-r0, d, r1, 1)
		}
	}
}

// softmaxCausal replaces s[:n] by its softmax and zeroes s[n:].
func softmaxCausal[T Float](s []T, n int) {
	vSoftmax(s[:n])
	clear(s[n:])
}

// attentionBackward writes the gradients of q, k and v for the (batch, head) pairs
// [lo, hi) into dqkv (overwriting them), given the gradient dy of the head outputs. datt is
// scratch for the gradient of one pair's probabilities, vT for its values transposed.
// dqkv (B,T,3C), datt (T,T), dy (B,T,C), att (B,H,T,T), qkv (B,T,3C), vT (D,T)
func attentionBackward[T Float](dqkv, datt, dy, att, qkv, vT []T, nt, c, nh, lo, hi int) {
	d := c / nh
	scale := T(1 / math.Sqrt(float64(d)))
	for bh := lo; bh < hi; bh++ {
		b, h := bh/nh, bh%nh
		off := b*nt*3*c + h*d
		q, k, v := qkv[off:], qkv[off+c:], qkv[off+2*c:]
		dq, dk, dv := dqkv[off:], dqkv[off+c:], dqkv[off+2*c:]
		p := att[bh*nt*nt : (bh+1)*nt*nt]
		dp := datt[:nt*nt]
		dyb := dy[b*nt*c+h*d:]
		vt := vT[:d*nt]
		transpose(vt, v, nt, d, 3*c)
		for r0 := 0; r0 < nt; r0 += attBlock {
			r1 := min(r0+attBlock, nt)
			// dP[r0:r1, 0:r1] = dY[r0:r1]·Vᵀ[:, 0:r1], then dS = scale·P⊙(dP − rowsum(P⊙dP))
			vMatmul(dp[r0*nt:], nt, dyb[r0*c:], c, 1, vt, nt, r1-r0, r1, d, 1)
			for i := r0; i < r1; i++ {
				softmaxCausalBackward(dp[i*nt:i*nt+r1], p[i*nt:i*nt+r1], i+1, scale)
			}
			// dQ[r0:r1] = dS[r0:r1, 0:r1]·K[0:r1]
			vMatmul(dq[r0*3*c:], 3*c, dp[r0*nt:], nt, 1, k, 3*c, r1-r0, d, r1, 1)
		}
		for c0 := 0; c0 < nt; c0 += attBlock {
			c1 := min(c0+attBlock, nt)
			// dV[c0:c1] = P[c0:T, c0:c1]ᵀ·dY[c0:T], dK[c0:c1] = dS[c0:T, c0:c1]ᵀ·Q[c0:T]
			vMatmul(dv[c0*3*c:], 3*c, p[c0*nt+c0:], 1, nt, dyb[c0*c:], c, c1-c0, d, nt-c0, 1)
			vMatmul(dk[c0*3*c:], 3*c, dp[c0*nt+c0:], 1, nt, q[c0*3*c:], 3*c, c1-c0, d, nt-c0, 1)
		}
	}
}

// softmaxCausalBackward turns dp[:n] (the gradient of the probabilities p) into the
// gradient of the scaled scores, scale·p⊙(dp − Σ p·dp), and zeroes dp[n:].
func softmaxCausalBackward[T Float](dp, p []T, n int, scale T) {
	vSoftmaxBackward(dp[:n], p[:n], scale)
	clear(dp[n:])
}

// swigluForward computes out = silu(g)·u, where each row of gu holds the gate g then the
// up-projection u.
// out (n,F), gu (n,2F)
func swigluForward[T Float](out, gu []T, f int) {
	for r := 0; r*f < len(out); r++ {
		vSwiGLU(out[r*f:(r+1)*f], gu[2*r*f:(2*r+1)*f], gu[(2*r+1)*f:(2*r+2)*f])
	}
}

// swigluBackward writes the gradients of g and u into dgu (overwriting them):
// dg = dout·u·σ(g)·(1 + g·(1−σ(g))), du = dout·silu(g).
// dgu (n,2F), dout (n,F), gu (n,2F)
func swigluBackward[T Float](dgu, dout, gu []T, f int) {
	for r := 0; r*f < len(dout); r++ {
		vSwiGLUBackward(dgu[2*r*f:(2*r+1)*f], dgu[(2*r+1)*f:(2*r+2)*f], dout[r*f:(r+1)*f],
			gu[2*r*f:(2*r+1)*f], gu[(2*r+1)*f:(2*r+2)*f])
	}
}

// crossEntropyForward replaces each row of logits by its softmax and writes the row's loss
// lse(z) − z[target] (in float64) to losses.
// logits (n,V), losses (n), targets (n)
func crossEntropyForward[T Float](logits []T, losses []float64, targets []int32, v int) {
	for r, y := range targets {
		z := logits[r*v : (r+1)*v]
		zy := z[y]
		mx, sum := vSoftmax(z)
		losses[r] = math.Log(float64(sum)) + float64(mx) - float64(zy)
	}
}

// crossEntropyBackward turns the probabilities left by crossEntropyForward into the
// gradient of the mean loss over nTotal rows, in place: (p − onehot(target))/nTotal.
// probs (n,V), targets (n)
func crossEntropyBackward[T Float](probs []T, targets []int32, v, nTotal int) {
	inv := T(1 / float64(nTotal))
	for r, y := range targets {
		z := probs[r*v : (r+1)*v]
		vScale(z, inv)
		z[y] -= inv
	}
}
