//go:build cuda

package cuda

import "gorgonia.org/cu"

// The round path (FastEnv "round"): in bf16 mode, the kernels that produce LLaMA's
// activation operands (RMSNorm's n1, n2 and final outputs, SwiGLU's h, attention's q, k,
// v, probabilities and y) and gradient operands (RMSNorm backward's dresid, SwiGLU
// backward's dgu, the heads' output gradient, the scores' gradient, and dqkv, gathered
// and rotated back in one kernel) write each value in float32 and, rounded once to nearest even,
// in bfloat16, so the products that read them take the copy instead of rounding the
// float32 values into scratch with a launch of their own. The copy is bitwise what to_bf16
// made of the same value. Every write of these buffers before a product reads them is by
// such a kernel, so a copy is never stale when it is read. With the norm and swiglu paths
// RMSNorm's and SwiGLU's *_to_bf16 kernels write the copy alone and leave the float32
// nfOut, n1Out, n2Out, h and dgu unwritten: only products read those, and they read the
// copy.

// roundCopies reports whether an engine being made keeps the bfloat16 copies: bf16 mode,
// LLaMA, made with the round path. The engine then has copies16 set, and may run the
// path or not (fast may change afterwards).
func (e *Engine) roundCopies() bool { return e.bf.on && !e.gpt2 && e.fast.has(fastRound) }

// useCopies lets the run's products take the copies that the last Forward's producers
// wrote (or, in a forward run, are about to write before any product reads them).
func (e *Engine) useCopies(r *run) {
	if !e.roundFused {
		return
	}
	s := &e.act
	r.rounded(s.nfOut, s.nfOut16)
	r.rounded(s.dresid, s.dresid16)
	r.rounded(s.dgu, s.dgu16)
	r.rounded(s.q, s.q16)
	r.rounded(s.k, s.k16)
	r.rounded(s.v, s.v16)
	r.rounded(s.hy, s.hy16)
	r.rounded(s.dqkv, s.dqkv16)
	r.rounded(s.datt, s.datt16)
	for i := range s.layers {
		la := &s.layers[i]
		r.rounded(la.n1Out, la.n1Out16)
		r.rounded(la.n2Out, la.n2Out16)
		r.rounded(la.h, la.h16)
		r.rounded(la.y, la.y16)
		r.rounded(la.att, la.att16)
	}
}

// rmsnormForward is RMSNorm of x (N,C) with weight w into out, and into out16 on the round
// path; with the norm path too, into out16 alone.
func (e *Engine) rmsnormForward(r *run, out, out16, rstd, x, w cu.DevicePtr) {
	n, c, eps := e.n, e.cfg.Dim, float32(e.cfg.NormEps)
	if e.roundFused && e.fast.has(fastNorm) {
		r.launch("rmsnorm_forward_to_bf16", rows(n), blk, out16, rstd, x, w, n, c, eps)
		return
	}
	if e.roundFused {
		r.launch("rmsnorm_forward_bf16", rows(n), blk, out, out16, rstd, x, w, n, c, eps)
		return
	}
	r.launch("rmsnorm_forward", rows(n), blk, out, rstd, x, w, n, c, eps)
}

// act16 reports whether the run keeps product outputs in bfloat16 (FastEnv "act16"): the
// MLP's gu and dh, and qkv on the rope path (qkv16). It needs bf16 mode with the round and
// swiglu paths, whose SwiGLU kernels write only the bfloat16 operands.
func (e *Engine) act16() bool {
	return e.roundFused && e.fast.has(fastSwiGLU) && e.fast.has(fastAct16)
}

// dnorm16 reports whether the products that give the gradient at a norm's output write it
// in bfloat16 (FastEnv "act16" with "norm"), into the first half of s.dnorm, as
// torch.autocast's linear layers leave it, and RMSNorm's backward kernel reads it so.
func (e *Engine) dnorm16() bool { return e.act16() && e.fast.has(fastNorm) }

// intoNorm is dnorm = A·B (m×n, leading dimension n, no transposes), the gradient at a
// norm's output from the product after it; in bfloat16 where dnorm16.
func (e *Engine) intoNorm(r *run, m, n, k int, a cu.DevicePtr, lda int, b cu.DevicePtr, ldb int) {
	if e.dnorm16() {
		r.gemmOut16(false, false, m, n, k, a, lda, b, ldb, e.act.dnorm)
		return
	}
	r.gemm(false, false, m, n, k, 1, a, lda, b, ldb, 0, e.act.dnorm, n)
}

// mlpUp is the MLP's first product, gu = n2·W13ᵀ, and SwiGLU of it into h; on the act16
// path gu is written in bfloat16, into the first half of la.gu, and SwiGLU reads it so.
func (e *Engine) mlpUp(r *run, la *layerActs, w13 cu.DevicePtr) {
	n, c, f := e.n, e.cfg.Dim, e.cfg.Hidden
	if e.act16() {
		r.gemmOut16(false, true, n, 2*f, c, la.n2Out, c, w13, c, la.gu)
		r.launch("swiglu_forward_from_bf16", lin(n*f), blk, la.h16, la.gu, n, f)
		return
	}
	r.gemm(false, true, n, 2*f, c, 1, la.n2Out, c, w13, c, 0, la.gu, 2*f)
	e.swigluForward(r, la.h, la.h16, la.gu)
}

// mlpDown is the MLP's input gradient through W2, dh = dresid·W2, and SwiGLU's backward
// pass of it into dgu; on the act16 path dh is written in bfloat16, into the first half of
// s.dh, and SwiGLU's backward pass reads it and gu so.
func (e *Engine) mlpDown(r *run, la *layerActs, w2 cu.DevicePtr) {
	n, c, f, s := e.n, e.cfg.Dim, e.cfg.Hidden, &e.act
	if e.act16() {
		r.gemmOut16(false, false, n, f, c, s.dresid, c, w2, f, s.dh)
		r.launch("swiglu_backward_from_bf16", lin(n*f), blk, s.dgu16, s.dh, la.gu, n, f)
		return
	}
	r.gemm(false, false, n, f, c, 1, s.dresid, c, w2, f, 0, s.dh, f)
	e.swigluBackward(r, la)
}

// swigluForward is SwiGLU of gu (N,2F) into out (N,F), and into out16 on the round path;
// with the swiglu path too, into out16 alone.
func (e *Engine) swigluForward(r *run, out, out16, gu cu.DevicePtr) {
	n, f := e.n, e.cfg.Hidden
	if e.roundFused && e.fast.has(fastSwiGLU) {
		r.launch("swiglu_forward_to_bf16", lin(n*f), blk, out16, gu, n, f)
		return
	}
	if e.roundFused {
		r.launch("swiglu_forward_bf16", lin(n*f), blk, out, out16, gu, n, f)
		return
	}
	r.launch("swiglu_forward", lin(n*f), blk, out, gu, n, f)
}

// swigluBackward writes the gradients of SwiGLU's input gu into dgu from that of its
// output dh, and into dgu16 on the round path; with the swiglu path too, into dgu16 alone.
func (e *Engine) swigluBackward(r *run, la *layerActs) {
	n, f, s := e.n, e.cfg.Hidden, &e.act
	if e.roundFused && e.fast.has(fastSwiGLU) {
		r.launch("swiglu_backward_to_bf16", lin(n*f), blk, s.dgu16, s.dh, la.gu, n, f)
		return
	}
	if e.roundFused {
		r.launch("swiglu_backward_bf16", lin(n*f), blk, s.dgu, s.dgu16, s.dh, la.gu, n, f)
		return
	}
	r.launch("swiglu_backward", lin(n*f), blk, s.dgu, s.dh, la.gu, n, f)
}

// permute splits qkv (B,T,3C) into the heads' q, k, v (B,H,T,D), and into their bfloat16
// copies where the run keeps them.
func (e *Engine) permute(r *run, qkv cu.DevicePtr) {
	s, b, t, nh, d := &e.act, e.b, e.t, e.cfg.Heads, e.cfg.HeadDim()
	if q16, ok := r.pre[s.q]; ok {
		r.launch("permute_bf16", lin(e.n*e.cfg.Dim), blk, s.q, s.k, s.v, q16, r.pre[s.k], r.pre[s.v], qkv, b, t, nh, d)
		return
	}
	r.launch("permute", lin(e.n*e.cfg.Dim), blk, s.q, s.k, s.v, qkv, b, t, nh, d)
}

// unpermute is the unpermute kernel (back 0: the heads' outputs into y (B,T,C); back 1:
// the gradient of y into the heads' layout), writing out's bfloat16 copy too where the run
// keeps one.
func (e *Engine) unpermute(r *run, out, in cu.DevicePtr, back int) {
	b, t, nh, d := e.b, e.t, e.cfg.Heads, e.cfg.HeadDim()
	if out16, ok := r.pre[out]; ok {
		r.launch("unpermute_bf16", lin(e.n*e.cfg.Dim), blk, out, out16, in, b, t, nh, d, back)
		return
	}
	r.launch("unpermute", lin(e.n*e.cfg.Dim), blk, out, in, b, t, nh, d, back)
}
