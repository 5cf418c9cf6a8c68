//go:build cuda

package cuda

// The loss and the first step of the backward pass, shared by both architectures. The
// default path is crossentropy_forward, which leaves the probabilities in the logits'
// place, then crossentropy_backward, which turns them into the gradient in place; in bf16
// mode each head product then rounds that gradient to bfloat16 again. The fused path
// (FastEnv "ce") reads the logits three times and writes only the gradient, once, in the
// form the head products take: bitwise the same losses and gradients (kernels.cu). In
// bf16 mode the online path (FastEnv "ce1") takes the loss and the stats in one read of
// the logits (crossentropy.cu), then the fused path's gradient kernels: other bits.

// headForward is the LM head's product, the logits = nfOut·headᵀ; on the logits16 path in
// bf16 mode it writes them in bfloat16, into the first half of s.logits, which the loss
// and gradient kernels then read.
func (e *Engine) headForward(r *run) {
	n, c, v, s := e.n, e.cfg.Dim, e.cfg.Vocab, &e.act
	e.logits16 = e.bf.on && e.fast.has(fastLogits16)
	if e.logits16 {
		r.gemmOut16(false, true, n, v, c, s.nfOut, c, e.p.head, c, s.logits)
		return
	}
	r.gemm(false, true, n, v, c, 1, s.nfOut, c, e.p.head, c, 0, s.logits, v)
}

// lossForward writes each row's loss to e.losses and copies them to the host, or, in an
// Accumulate, to the loss queue's next slot, where they stay.
func (e *Engine) lossForward(r *run) {
	n, v, s := e.n, e.cfg.Vocab, &e.act
	online := e.bf.on && e.fast.has(fastCE1)
	e.ceFused = e.fast.has(fastCE) || online || e.logits16
	switch {
	case e.logits16:
		r.launch("crossentropy_loss_online_bf16", dim{x: n}, dim{x: ceThreads}, s.logits, e.lossRows(), s.ceStats, e.targets, n, v)
	case online:
		r.launch("crossentropy_loss_online", dim{x: n}, dim{x: ceThreads}, s.logits, e.lossRows(), s.ceStats, e.targets, n, v)
	case e.ceFused:
		r.launch("crossentropy_loss", dim{x: n}, dim{x: ceThreads}, s.logits, e.lossRows(), s.ceStats, e.targets, n, v)
	default:
		r.launch("crossentropy_forward", dim{x: n}, dim{x: ceThreads}, s.logits, e.lossRows(), e.targets, n, v)
	}
	if !e.queued {
		r.doAs(Transfer, func() error { return dtoh(e.st, e.lossHost, e.losses) })
	}
}

// lossBackward makes the gradient of the mean loss with respect to the logits the operand
// that the head products read for s.logits, until the run releases it: s.logits itself on
// the default path and in float32, the bfloat16 scratch e.bf.a on the fused and logits16
// paths in bf16 mode.
func (e *Engine) lossBackward(r *run) {
	n, v, s := e.n, e.cfg.Vocab, &e.act
	inv := float32(1 / float64(n))
	switch {
	case e.logits16:
		r.launch("crossentropy_grad_from_bf16", dim{x: n}, dim{x: ceThreads}, e.bf.a, s.logits, s.ceStats, e.targets, n, v, inv)
		r.rounded(s.logits, e.bf.a)
	case !e.ceFused:
		r.launch("crossentropy_backward", lin(n*v), blk, s.logits, e.targets, n, v, inv)
	case e.bf.on:
		r.launch("crossentropy_grad_bf16", dim{x: n}, dim{x: ceThreads}, e.bf.a, s.logits, s.ceStats, e.targets, n, v, inv)
		r.rounded(s.logits, e.bf.a)
	default:
		r.launch("crossentropy_grad", dim{x: n}, dim{x: ceThreads}, s.logits, s.ceStats, e.targets, n, v, inv)
	}
}
