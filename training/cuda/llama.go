//go:build cuda

package cuda

import (
	"math"

	"gorgonia.org/cu"

	"github.com/sfsweep/sfsweep/training/backend"
)

// The LLaMA passes, op for op those of training/native, and the attention, norm and head
// passes that GPT-2's (gpt2.go) share.

func (e *Engine) forward() error {
	n, c, f := e.n, e.cfg.Dim, e.cfg.Hidden
	s := &e.act
	r := e.forwardRun()
	e.roundFused = e.copies16 && e.fast.has(fastRound)
	e.useCopies(r)
	r.launch("encoder_forward", lin(n*c), blk, s.resid[0], e.tokens, e.p.emb, n, c)
	for l, w := range e.p.layers {
		la := &s.layers[l]
		x, mid, out := s.resid[2*l], s.resid[2*l+1], s.resid[2*l+2]
		// attention: mid = x + Wo·Attn(RoPE(Wqkv·n1(x)))
		e.rmsnormForward(r, la.n1Out, la.n1Out16, la.n1Rstd, x, w.n1)
		if e.qkv16() {
			r.gemmOut16(false, true, n, 3*c, c, la.n1Out, c, w.qkv, c, la.qkv)
		} else {
			r.gemm(false, true, n, 3*c, c, 1, la.n1Out, c, w.qkv, c, 0, la.qkv, 3*c)
		}
		if !e.ropeInPermute() {
			e.rope(r, la.qkv, e.sin)
		}
		e.attentionForward(r, la)
		r.gemmAdd(false, true, n, c, c, la.y, c, w.wo, c, x, mid)
		// MLP: out = mid + W2·swiglu(W13·n2(mid))
		e.rmsnormForward(r, la.n2Out, la.n2Out16, la.n2Rstd, mid, w.n2)
		e.mlpUp(r, la, w.w13)
		r.gemmAdd(false, true, n, c, f, la.h, f, w.w2, f, mid, out)
	}
	e.rmsnormForward(r, s.nfOut, s.nfOut16, s.nfRstd, s.resid[2*e.cfg.Layers], e.p.norm)
	e.headForward(r)
	e.lossForward(r)
	return r.err
}

func (e *Engine) rope(r *run, qkv, sin cu.DevicePtr) {
	h := e.cfg.HeadDim() / 2
	r.launch("rope", lin(e.n*2*e.cfg.Heads*h), blk, qkv, e.cos, sin, e.n, e.t, e.cfg.Dim, e.cfg.Heads)
}

// attentionForward computes la.y and la.att from la.qkv: per (batch, head), with Q, K, V the
// head-major copies, P = causal_softmax(Q·Kᵀ/√D) and Y = P·V.
func (e *Engine) attentionForward(r *run, la *layerActs) {
	s := &e.act
	b, t, nh, d := e.b, e.t, e.cfg.Heads, e.cfg.HeadDim()
	bh, td, tt := b*nh, t*d, t*t
	scale := float32(1 / math.Sqrt(float64(d)))
	if e.flash {
		e.flashForward(r, la)
		return
	}
	defer r.within(Attention)()
	e.permute(r, la.qkv)
	r.gemmBatched(false, true, t, t, d, scale, s.q, d, td, s.k, d, td, 0, la.att, t, tt, bh)
	if att16, ok := r.pre[la.att]; ok {
		r.launch("softmax_causal_bf16", rows(bh*t), blk, la.att, att16, bh*t, t)
	} else {
		r.launch("softmax_causal", rows(bh*t), blk, la.att, bh*t, t)
	}
	r.gemmBatched(false, false, t, d, t, 1, la.att, t, tt, s.v, d, td, 0, s.hy, d, td, bh)
	e.unpermute(r, la.y, s.hy, 0)
}

// attentionBackward writes the gradients of q, k and v into s.dq, s.dk, s.dv from the
// gradient s.dy of the heads' outputs; gatherDQKV then gathers them into s.dqkv.
func (e *Engine) attentionBackward(r *run, la *layerActs) {
	s := &e.act
	b, t, nh, d := e.b, e.t, e.cfg.Heads, e.cfg.HeadDim()
	bh, td, tt := b*nh, t*d, t*t
	scale := float32(1 / math.Sqrt(float64(d)))
	if e.flash {
		e.flashBackward(r, la)
		return
	}
	defer r.within(Attention)()
	e.permute(r, la.qkv)
	e.unpermute(r, s.hy, s.dy, 1)
	// dP = dY·Vᵀ, dV = Pᵀ·dY
	r.gemmBatched(false, true, t, t, d, 1, s.hy, d, td, s.v, d, td, 0, s.datt, t, tt, bh)
	r.gemmBatched(true, false, t, d, t, 1, la.att, t, tt, s.hy, d, td, 0, s.dv, d, td, bh)
	// dS = scale·P⊙(dP − rowsum(P⊙dP)), then dQ = dS·K, dK = dSᵀ·Q
	if datt16, ok := r.pre[s.datt]; ok {
		r.launch("softmax_causal_backward_bf16", rows(bh*t), blk, s.datt, datt16, la.att, bh*t, t, scale)
	} else {
		r.launch("softmax_causal_backward", rows(bh*t), blk, s.datt, la.att, bh*t, t, scale)
	}
	r.gemmBatched(false, false, t, d, t, 1, s.datt, t, tt, s.k, d, td, 0, s.dq, d, td, bh)
	r.gemmBatched(true, false, t, d, t, 1, s.datt, t, tt, s.q, d, td, 0, s.dk, d, td, bh)
}

// gatherDQKV writes s.dqkv (overwriting it) from s.dq, s.dk, s.dv, with the inverse RoPE
// rotation of q's and k's gradients where rope is set (LLaMA); where the run keeps a
// bfloat16 copy of dqkv (the round path), one kernel does all of it and writes the copy.
func (e *Engine) gatherDQKV(r *run, rope bool) {
	s, b, t, nh, d := &e.act, e.b, e.t, e.cfg.Heads, e.cfg.HeadDim()
	if dqkv16, ok := r.pre[s.dqkv]; ok && rope {
		r.launch("permute_backward_rope_bf16", lin(e.n*e.cfg.Dim/2), blk, s.dqkv, dqkv16, s.dq, s.dk, s.dv, e.cos, e.nsin, b, t, nh, d)
		return
	}
	r.launch("permute_backward", lin(e.n*e.cfg.Dim), blk, s.dqkv, s.dq, s.dk, s.dv, b, t, nh, d)
	if rope {
		e.rope(r, s.dqkv, e.nsin)
	}
}

// rmsnormBackward adds the input gradient to dx and the weight gradient to dw; where the
// run keeps a bfloat16 copy of dx (the round path), the copy follows. On the norm path one
// kernel does what the first two of the default path's three do, reading dout in
// bfloat16 where dnorm16.
func (e *Engine) rmsnormBackward(r *run, dx, dw, dout, x, w, rstd cu.DevicePtr) {
	n, c := e.n, e.cfg.Dim
	chunks := blocks(n, normRows)
	dx16, copy16 := r.pre[dx]
	fused := e.fast.has(fastNorm)
	switch {
	case fused && copy16 && e.dnorm16(): // dout in bfloat16 (intoNorm)
		r.launch("rmsnorm_backward_fused_from_bf16", dim{x: chunks}, dim{x: normThreads(c)}, dx, dx16, e.act.dwPart, dout, x, w, rstd, n, c)
	case fused && copy16:
		r.launch("rmsnorm_backward_fused_bf16", dim{x: chunks}, dim{x: normThreads(c)}, dx, dx16, e.act.dwPart, dout, x, w, rstd, n, c)
	case fused:
		r.launch("rmsnorm_backward_fused", dim{x: chunks}, dim{x: normThreads(c)}, dx, e.act.dwPart, dout, x, w, rstd, n, c)
	case copy16:
		r.launch("rmsnorm_backward_dx_bf16", rows(n), blk, dx, dx16, dout, x, w, rstd, n, c)
	default:
		r.launch("rmsnorm_backward_dx", rows(n), blk, dx, dout, x, w, rstd, n, c)
	}
	if !fused {
		r.launch("rmsnorm_backward_dw_part", dim{x: blocks(c, threads), y: chunks}, blk, e.act.dwPart, dout, x, rstd, n, c, normRows)
	}
	r.launch("sum_rows_add", lin(c), blk, dw, e.act.dwPart, chunks, c)
}

// headBackward is the backward pass of the loss and the LM head, shared by both
// architectures (tied, the head is wte, and this is the first of the two contributions to
// its gradient): the logits become their gradient, the head's gradient is added, the
// gradient at the final norm's output goes to dnorm, and dresid is cleared.
func (e *Engine) headBackward(r *run) {
	n, c, v := e.n, e.cfg.Dim, e.cfg.Vocab
	s := &e.act
	r.do(func() error { return e.st.setTF32(e.prec == backend.TF32) })
	e.lossBackward(r)
	r.gemm(true, false, v, c, n, 1, s.logits, v, s.nfOut, c, 1, e.g.head, c)
	e.intoNorm(r, n, c, v, s.logits, v, e.p.head, c)
	r.release(s.logits)
	r.doAs(Elementwise, func() error { return e.st.zero(s.dresid, n*c) })
}

func (e *Engine) backward() error {
	n, c, f := e.n, e.cfg.Dim, e.cfg.Hidden
	s := &e.act
	r := e.newRun()
	e.useCopies(r)
	e.headBackward(r)
	e.rmsnormBackward(r, s.dresid, e.g.norm, s.dnorm, s.resid[2*e.cfg.Layers], e.p.norm, s.nfRstd)
	for l := e.cfg.Layers - 1; l >= 0; l-- {
		w, gw, la := &e.p.layers[l], &e.g.layers[l], &s.layers[l]
		x, mid := s.resid[2*l], s.resid[2*l+1]
		// MLP
		r.gemm(true, false, c, f, n, 1, s.dresid, c, la.h, f, 1, gw.w2, f)
		e.mlpDown(r, la, w.w2)
		r.gemm(true, false, 2*f, c, n, 1, s.dgu, 2*f, la.n2Out, c, 1, gw.w13, c)
		e.intoNorm(r, n, c, 2*f, s.dgu, 2*f, w.w13, c)
		e.rmsnormBackward(r, s.dresid, gw.n2, s.dnorm, mid, w.n2, la.n2Rstd)
		// attention
		r.gemm(true, false, c, c, n, 1, s.dresid, c, la.y, c, 1, gw.wo, c)
		if e.dy16() {
			r.gemmOut16(false, false, n, c, c, s.dresid, c, w.wo, c, s.dy)
		} else {
			r.gemm(false, false, n, c, c, 1, s.dresid, c, w.wo, c, 0, s.dy, c)
		}
		e.attentionBackward(r, la)
		if !e.flashGradsInRows(r) {
			e.gatherDQKV(r, true)
		}
		r.gemm(true, false, 3*c, c, n, 1, s.dqkv, 3*c, la.n1Out, c, 1, gw.qkv, c)
		e.intoNorm(r, n, c, 3*c, s.dqkv, 3*c, w.qkv, c)
		e.rmsnormBackward(r, s.dresid, gw.n1, s.dnorm, x, w.n1, la.n1Rstd)
	}
	e.embeddingBackward(r, s.dresid)
	return r.err
}
