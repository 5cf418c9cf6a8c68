package native

import "github.com/sfsweep/sfsweep/training/gemm"

// The GPT-2 (nanoGPT) forward and backward passes. The buffers are those of LLaMA (see
// native.go) with GPT-2's meanings: gu holds the c_fc output before the GELU, h after it;
// the n*Mean buffers keep the LayerNorm row means. With biases (model.Config.Biases) every
// linear layer has one, added after its GEMM, and every LayerNorm one; without them, as
// llm-baselines' default, the bias kernels are left out. The LM head is the token embedding
// unless untied, so its gradient is added to that of the embedding gather.

// forwardGPT2 runs the model on m.tokens and returns the mean loss over m.targets.
//
//	x = wte[tok] + wpe[pos]
//	L × [x += c_proj(Attn(c_attn(ln_1(x)))); x += mlp.c_proj(GELU(c_fc(ln_2(x))))]
//	logits = ln_f(x)·wteᵀ
func (m *Model[T]) forwardGPT2() float64 {
	n, c, f, v := m.n, m.cfg.Dim, m.cfg.Hidden, m.cfg.Vocab
	a, k := &m.act, &m.k
	k.encoderForward(a.resid[0], m.tokens, m.p.emb)
	k.positionForward(a.resid[0], m.p.wpe)
	for l, w := range m.p.layers {
		la := &a.layers[l]
		x, mid, out := a.resid[2*l], a.resid[2*l+1], a.resid[2*l+2]
		// attention: mid = x + c_proj(Attn(c_attn(ln_1(x))))
		k.layernormForward(la.n1Out, la.n1Mean, la.n1Rstd, x, w.n1, w.n1b)
		gemm.Gemm(false, true, n, 3*c, c, 1, la.n1Out, c, w.qkv, c, 0, la.qkv, 3*c)
		k.biasForward(la.qkv, w.qkvB)
		k.attentionForward(la.y, la.att, la.qkv)
		copy(mid, x)
		gemm.Gemm(false, true, n, c, c, 1, la.y, c, w.wo, c, 1, mid, c)
		k.biasForward(mid, w.woB)
		// MLP: out = mid + c_proj(GELU(c_fc(ln_2(mid))))
		k.layernormForward(la.n2Out, la.n2Mean, la.n2Rstd, mid, w.n2, w.n2b)
		gemm.Gemm(false, true, n, f, c, 1, la.n2Out, c, w.w13, c, 0, la.gu, f)
		k.biasForward(la.gu, w.fcB)
		k.geluForward(la.h, la.gu)
		copy(out, mid)
		gemm.Gemm(false, true, n, c, f, 1, la.h, f, w.w2, f, 1, out, c)
		k.biasForward(out, w.projB)
	}
	k.layernormForward(a.nfOut, a.nfMean, a.nfRstd, a.resid[2*m.cfg.Layers], m.p.norm, m.p.normB)
	gemm.Gemm(false, true, n, v, c, 1, a.nfOut, c, m.p.head, c, 0, a.logits, v)
	k.crossEntropyForward(a.logits, a.losses, m.targets)
	var sum float64
	for _, l := range a.losses {
		sum += l
	}
	m.ready = true
	return sum / float64(n)
}

// backwardGPT2 adds the gradient of the mean loss of the last forwardGPT2 to m.grads.
func (m *Model[T]) backwardGPT2() {
	n, c, f := m.n, m.cfg.Dim, m.cfg.Hidden
	a, k := &m.act, &m.k

	// tied, m.g.head is m.g.emb, and this is the first of the two wte contributions
	m.headBackward()
	k.layernormBackward(a.dresid, m.g.norm, m.g.normB, a.dnorm, a.resid[2*m.cfg.Layers], m.p.norm, a.nfMean, a.nfRstd)

	for l := m.cfg.Layers - 1; l >= 0; l-- {
		w, gw, la := &m.p.layers[l], &m.g.layers[l], &a.layers[l]
		x, mid := a.resid[2*l], a.resid[2*l+1]
		// MLP
		k.biasBackward(gw.projB, a.dresid)
		gemm.Gemm(true, false, c, f, n, 1, a.dresid, c, la.h, f, 1, gw.w2, f)
		gemm.Gemm(false, false, n, f, c, 1, a.dresid, c, w.w2, f, 0, a.dh, f)
		k.geluBackward(a.dgu, a.dh, la.gu)
		k.biasBackward(gw.fcB, a.dgu)
		gemm.Gemm(true, false, f, c, n, 1, a.dgu, f, la.n2Out, c, 1, gw.w13, c)
		gemm.Gemm(false, false, n, c, f, 1, a.dgu, f, w.w13, c, 0, a.dnorm, c)
		k.layernormBackward(a.dresid, gw.n2, gw.n2b, a.dnorm, mid, w.n2, la.n2Mean, la.n2Rstd)
		// attention
		k.biasBackward(gw.woB, a.dresid)
		gemm.Gemm(true, false, c, c, n, 1, a.dresid, c, la.y, c, 1, gw.wo, c)
		gemm.Gemm(false, false, n, c, c, 1, a.dresid, c, w.wo, c, 0, a.dy, c)
		k.attentionBackward(a.dqkv, a.datt, a.dy, la.att, la.qkv)
		k.biasBackward(gw.qkvB, a.dqkv)
		gemm.Gemm(true, false, 3*c, c, n, 1, a.dqkv, 3*c, la.n1Out, c, 1, gw.qkv, c)
		gemm.Gemm(false, false, n, c, 3*c, 1, a.dqkv, 3*c, w.qkv, c, 0, a.dnorm, c)
		k.layernormBackward(a.dresid, gw.n1, gw.n1b, a.dnorm, x, w.n1, la.n1Mean, la.n1Rstd)
	}
	k.positionBackward(m.g.wpe, a.dresid)
	k.encoderBackward(m.g.emb, a.dresid, m.tokens)
}
