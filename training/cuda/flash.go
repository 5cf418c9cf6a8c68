//go:build cuda

package cuda

import "gorgonia.org/cu"

// The flash path (FastEnv "flash"): attention as deterministic flash attention in bf16
// mode for heads of flashD (flash.cu). The forward pass rounds q, k, v from la.qkv into a
// bfloat16 copy in the heads' layout kept per layer (flash_permute), writes y straight into
// (B,T,C) and keeps each row's log-sum-exp per layer instead of the T×T probabilities; the
// backward pass reads that copy and dy as it is, recomputes the probabilities and writes
// dq, dk, dv, which gatherDQKV gathers as on the materialised path (or, on the rope path
// with the round path's copies, writes dqkv's bfloat16 copy itself). Whether an engine runs
// it is fixed when the engine is made, since its buffers differ: it has no scores,
// probabilities or their gradients.

// flashAttention reports whether an engine being made runs the flash path: bf16 mode,
// heads of flashD, made with the path.
func (e *Engine) flashAttention() bool {
	return e.bf.on && e.cfg.HeadDim() == flashD && e.fast.has(fastFlash)
}

// ropeInPermute reports whether LLaMA's RoPE runs inside the flash path's permutation
// (FastEnv "rope"): the forward pass then leaves la.qkv unrotated, which nothing reads
// again, since the backward pass reads the permuted copy.
func (e *Engine) ropeInPermute() bool { return e.flash && !e.gpt2 && e.fast.has(fastRope) }

// flashGradsInRows reports whether the run's flash backward kernels write the gradients
// of q, k, v rotated back and rounded, straight into dqkv's bfloat16 copy (FastEnv "rope"
// with the round path's copies): then no gather runs, and nothing writes the float32 dq,
// dk, dv or dqkv, which no product reads.
func (e *Engine) flashGradsInRows(r *run) bool {
	_, copied := r.pre[e.act.dqkv]
	return e.ropeInPermute() && copied
}

// dy16 reports whether the backward product through Wo writes dy in bfloat16 (FastEnv
// "act16" on the flash path), and the forward pass writes O in bfloat16 only (y16, which
// the product through Wo reads anyway): flash_backward_pre_bf16 reads both.
func (e *Engine) dy16() bool { return e.flash && e.act16() }

// qkv16 reports whether the product of Wqkv writes qkv in bfloat16 (FastEnv "act16" with
// the rope path), which flash_permute_rope_bf16 then rotates into the heads' layout.
func (e *Engine) qkv16() bool { return e.ropeInPermute() && e.act16() }

// flashRows reports whether the flash kernels read qkv's bfloat16 rows as they are,
// rotating q and k on the way (flash_forward_rows, flash_backward_*_rows; FastEnv "rows"
// with qkv16): no permuted copy is made, and the bits are those of the permuted path.
func (e *Engine) flashRows() bool { return e.qkv16() && e.fast.has(fastRows) }

func (e *Engine) flashGrid() dim {
	return dim{x: blocks(e.t, flashBR), y: e.b * e.cfg.Heads}
}

// flashHeads returns the bfloat16 q, k and v (B,H,T,D) of la's copy.
func (e *Engine) flashHeads(la *layerActs) (q, k, v cu.DevicePtr) {
	part := cu.DevicePtr(2 * e.n * e.cfg.Dim) // bytes
	return la.qkv16, la.qkv16 + part, la.qkv16 + 2*part
}

// flashForward writes la.y (and la.y16, where the run keeps it), la.lse and la.qkv16 from
// la.qkv, rotating q and k on the rope path.
func (e *Engine) flashForward(r *run, la *layerActs) {
	b, t, nh := e.b, e.t, e.cfg.Heads
	_, scaleLog2 := flashScale()
	q, k, v := e.flashHeads(la)
	defer r.within(Attention)()
	y := la.y
	if e.dy16() {
		y = 0 // no float32 O: nothing reads it
	}
	if e.flashRows() {
		// q, k, v straight from qkv, RoPE on the way: no permuted copy
		r.launch("flash_forward_rows", e.flashGrid(), dim{x: flashThreads}, y, r.pre[la.y], la.lse, la.qkv, e.cos, e.sin, t, nh, scaleLog2)
		return
	}
	switch {
	case e.qkv16():
		r.launch("flash_permute_rope_bf16", dim{x: blocks(e.n*e.cfg.Dim/4, threads), y: 3}, blk, la.qkv16, la.qkv, e.cos, e.sin, b, t, nh)
	case e.ropeInPermute():
		r.launch("flash_permute_rope", dim{x: blocks(e.n*e.cfg.Dim/4, threads), y: 3}, blk, la.qkv16, la.qkv, e.cos, e.sin, b, t, nh)
	default:
		r.launch("flash_permute", dim{x: blocks(e.n*e.cfg.Dim/2, threads), y: 3}, blk, la.qkv16, la.qkv, b, t, nh)
	}
	r.launch("flash_forward", e.flashGrid(), dim{x: flashThreads}, y, r.pre[la.y], la.lse, q, k, v, t, nh, scaleLog2)
}

// flashBackward writes the gradients of q, k and v into s.dq, s.dk, s.dv from s.dy (in
// bfloat16 on the act16 path), or, where flashGradsInRows, into dqkv's bfloat16 copy.
func (e *Engine) flashBackward(r *run, la *layerActs) {
	s, b, t, nh := &e.act, e.b, e.t, e.cfg.Heads
	scale, scaleLog2 := flashScale()
	q, k, v := e.flashHeads(la)
	bht := b * nh * t
	defer r.within(Attention)()
	pre, y := "flash_backward_pre", la.y
	if e.dy16() {
		pre, y = "flash_backward_pre_bf16", r.pre[la.y]
	}
	r.launch(pre, rows(bht), blk, s.do16, s.dvec, s.dy, y, bht, t, nh)
	if e.flashRows() { // flashGradsInRows too
		dqkv16 := r.pre[s.dqkv]
		r.launch("flash_backward_dkdv_rows", dim{x: blocks(t, flashBC), y: b * nh}, dim{x: flashThreads},
			dqkv16, la.qkv, e.cos, e.sin, e.nsin, nh, s.do16, la.lse, s.dvec, t, scaleLog2, scale)
		r.launch("flash_backward_dq_rows", e.flashGrid(), dim{x: flashThreads},
			dqkv16, la.qkv, e.cos, e.sin, e.nsin, nh, s.do16, la.lse, s.dvec, t, scaleLog2, scale)
		return
	}
	if e.flashGradsInRows(r) {
		dqkv16 := r.pre[s.dqkv]
		r.launch("flash_backward_dkdv_rope16", dim{x: blocks(t, flashBC), y: b * nh}, dim{x: flashThreads},
			dqkv16, e.cos, e.nsin, nh, q, k, v, s.do16, la.lse, s.dvec, t, scaleLog2, scale)
		r.launch("flash_backward_dq_rope16", e.flashGrid(), dim{x: flashThreads},
			dqkv16, e.cos, e.nsin, nh, q, k, v, s.do16, la.lse, s.dvec, t, scaleLog2, scale)
		return
	}
	r.launch("flash_backward_dkdv", dim{x: blocks(t, flashBC), y: b * nh}, dim{x: flashThreads},
		s.dk, s.dv, q, k, v, s.do16, la.lse, s.dvec, t, scaleLog2, scale)
	r.launch("flash_backward_dq", e.flashGrid(), dim{x: flashThreads},
		s.dq, q, k, v, s.do16, la.lse, s.dvec, t, scaleLog2, scale)
}

// flashBuffers are the flash path's buffers: per layer the bfloat16 q, k, v (3 × (B,H,T,D))
// and the log-sum-exp of each row (B,H,T), and once the bfloat16 dO (B,H,T,D) and
// rowsum(dO∘O) (B,H,T).
func (e *Engine) flashBuffers(a func(n int, size ...int) cu.DevicePtr) {
	bht := e.b * e.cfg.Heads * e.t
	for i := range e.act.layers {
		e.act.layers[i].qkv16, e.act.layers[i].lse = a(3*e.n*e.cfg.Dim, 2), a(bht)
	}
	e.act.do16, e.act.dvec = a(e.n*e.cfg.Dim, 2), a(bht)
}
