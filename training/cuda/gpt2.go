//go:build cuda

package cuda

import "gorgonia.org/cu"

// The GPT-2 (nanoGPT) passes, op for op those of training/native/gpt2.go: learned position
// embedding, LayerNorm, biases added after each GEMM, the exact GELU, and the LM head tied to
// the token embedding, so its gradient adds to that of the embedding gather.

func (e *Engine) forwardGPT2() error {
	n, c, f := e.n, e.cfg.Dim, e.cfg.Hidden
	eps := float32(e.cfg.NormEps)
	s := &e.act
	r := e.forwardRun()
	r.launch("encoder_forward", lin(n*c), blk, s.resid[0], e.tokens, e.p.emb, n, c)
	r.launch("position_forward", lin(n*c), blk, s.resid[0], e.p.wpe, n, e.t, c)
	for l, w := range e.p.layers {
		la := &s.layers[l]
		x, mid, out := s.resid[2*l], s.resid[2*l+1], s.resid[2*l+2]
		// attention: mid = x + c_proj(Attn(c_attn(ln_1(x))))
		r.launch("layernorm_forward", rows(n), blk, la.n1Out, la.n1Mean, la.n1Rstd, x, w.n1, w.n1b, n, c, eps)
		r.gemm(false, true, n, 3*c, c, 1, la.n1Out, c, w.qkv, c, 0, la.qkv, 3*c)
		r.launch("bias_forward", lin(n*3*c), blk, la.qkv, w.qkvB, n, 3*c)
		e.attentionForward(r, la)
		r.gemmAdd(false, true, n, c, c, la.y, c, w.wo, c, x, mid)
		r.launch("bias_forward", lin(n*c), blk, mid, w.woB, n, c)
		// MLP: out = mid + c_proj(GELU(c_fc(ln_2(mid))))
		r.launch("layernorm_forward", rows(n), blk, la.n2Out, la.n2Mean, la.n2Rstd, mid, w.n2, w.n2b, n, c, eps)
		r.gemm(false, true, n, f, c, 1, la.n2Out, c, w.w13, c, 0, la.gu, f)
		r.launch("bias_forward", lin(n*f), blk, la.gu, w.fcB, n, f)
		r.launch("gelu_forward", lin(n*f), blk, la.h, la.gu, int64(n*f))
		r.gemmAdd(false, true, n, c, f, la.h, f, w.w2, f, mid, out)
		r.launch("bias_forward", lin(n*c), blk, out, w.projB, n, c)
	}
	r.launch("layernorm_forward", rows(n), blk, s.nfOut, s.nfMean, s.nfRstd, s.resid[2*e.cfg.Layers], e.p.norm, e.p.normB, n, c, eps)
	e.headForward(r)
	e.lossForward(r)
	return r.err
}

// layernormBackward adds the input gradient to dx and the weight and bias gradients to dw
// and db.
func (e *Engine) layernormBackward(r *run, dx, dw, db, dout, x, w, mean, rstd cu.DevicePtr) {
	n, c := e.n, e.cfg.Dim
	chunks := blocks(n, normRows)
	r.launch("layernorm_backward_dx", rows(n), blk, dx, dout, x, w, mean, rstd, n, c)
	r.launch("layernorm_backward_dwdb_part", dim{x: blocks(c, threads), y: chunks}, blk, e.act.dwPart, e.act.dbPart, dout, x, mean, rstd, n, c, normRows)
	r.launch("sum_rows_add", lin(c), blk, dw, e.act.dwPart, chunks, c)
	r.launch("sum_rows_add", lin(c), blk, db, e.act.dbPart, chunks, c)
}

// biasBackward adds the column sums of dout (N,W) to db (W).
func (e *Engine) biasBackward(r *run, db, dout cu.DevicePtr, w int) {
	chunks := blocks(e.n, normRows)
	r.launch("colsum_part", dim{x: blocks(w, threads), y: chunks}, blk, e.act.dbPart, dout, e.n, w, normRows)
	r.launch("sum_rows_add", lin(w), blk, db, e.act.dbPart, chunks, w)
}

func (e *Engine) backwardGPT2() error {
	n, c, f := e.n, e.cfg.Dim, e.cfg.Hidden
	s := &e.act
	r := e.newRun()
	e.headBackward(r)
	e.layernormBackward(r, s.dresid, e.g.norm, e.g.normB, s.dnorm, s.resid[2*e.cfg.Layers], e.p.norm, s.nfMean, s.nfRstd)
	for l := e.cfg.Layers - 1; l >= 0; l-- {
		w, gw, la := &e.p.layers[l], &e.g.layers[l], &s.layers[l]
		x, mid := s.resid[2*l], s.resid[2*l+1]
		// MLP
		e.biasBackward(r, gw.projB, s.dresid, c)
		r.gemm(true, false, c, f, n, 1, s.dresid, c, la.h, f, 1, gw.w2, f)
		r.gemm(false, false, n, f, c, 1, s.dresid, c, w.w2, f, 0, s.dh, f)
		r.launch("gelu_backward", lin(n*f), blk, s.dgu, s.dh, la.gu, int64(n*f))
		e.biasBackward(r, gw.fcB, s.dgu, f)
		r.gemm(true, false, f, c, n, 1, s.dgu, f, la.n2Out, c, 1, gw.w13, c)
		r.gemm(false, false, n, c, f, 1, s.dgu, f, w.w13, c, 0, s.dnorm, c)
		e.layernormBackward(r, s.dresid, gw.n2, gw.n2b, s.dnorm, mid, w.n2, la.n2Mean, la.n2Rstd)
		// attention
		e.biasBackward(r, gw.woB, s.dresid, c)
		r.gemm(true, false, c, c, n, 1, s.dresid, c, la.y, c, 1, gw.wo, c)
		r.gemm(false, false, n, c, c, 1, s.dresid, c, w.wo, c, 0, s.dy, c)
		e.attentionBackward(r, la)
		e.gatherDQKV(r, false)
		e.biasBackward(r, gw.qkvB, s.dqkv, 3*c)
		r.gemm(true, false, 3*c, c, n, 1, s.dqkv, 3*c, la.n1Out, c, 1, gw.qkv, c)
		r.gemm(false, false, n, c, 3*c, 1, s.dqkv, 3*c, w.qkv, c, 0, s.dnorm, c)
		e.layernormBackward(r, s.dresid, gw.n1, gw.n1b, s.dnorm, x, w.n1, la.n1Mean, la.n1Rstd)
	}
	r.launch("position_backward", lin(e.t*c), blk, e.g.wpe, s.dresid, e.b, e.t, c)
	e.embeddingBackward(r, s.dresid)
	return r.err
}
