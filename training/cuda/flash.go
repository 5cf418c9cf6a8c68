//go:build cuda

package cuda

import "gorgonia.org/cu"

// The flash path (FastEnv "flash"): attention as deterministic flash attention in bf16
// mode for heads of flashD (flash.cu). The forward pass takes q, k, v rounded to
// bfloat16 (permute_bf16), writes y straight into (B,T,C) and keeps each row's
// log-sum-exp per layer instead of the T×T probabilities; the backward pass takes dy as
// it is, recomputes the probabilities and writes dq, dk, dv, which gatherDQKV gathers as
// on the materialised path. Whether an engine runs it is fixed when the engine is made,
// since its buffers differ: it has no scores, probabilities or their gradients.

// flashAttention reports whether an engine being made runs the flash path: bf16 mode,
// heads of flashD, made with the path.
func (e *Engine) flashAttention() bool {
	return e.bf.on && e.cfg.HeadDim() == flashD && e.fast.has(fastFlash)
}

func (e *Engine) flashGrid() dim {
	return dim{x: blocks(e.t, flashBR), y: e.b * e.cfg.Heads}
}

// flashForward writes la.y (and la.y16, where the run keeps it) and la.lse from la.qkv.
func (e *Engine) flashForward(r *run, la *layerActs) {
	s, b, t, nh := &e.act, e.b, e.t, e.cfg.Heads
	_, scaleLog2 := flashScale()
	defer r.within(Attention)()
	r.launch("permute_bf16", lin(e.n*e.cfg.Dim), blk, s.q, s.k, s.v, s.q16, s.k16, s.v16, la.qkv, b, t, nh, flashD)
	r.launch("flash_forward", e.flashGrid(), dim{x: flashThreads}, la.y, r.pre[la.y], la.lse, s.q16, s.k16, s.v16, t, nh, scaleLog2)
}

// flashBackward writes the gradients of q, k and v into s.dq, s.dk, s.dv from s.dy.
func (e *Engine) flashBackward(r *run, la *layerActs) {
	s, b, t, nh := &e.act, e.b, e.t, e.cfg.Heads
	scale, scaleLog2 := flashScale()
	bht := b * nh * t
	defer r.within(Attention)()
	r.launch("permute_bf16", lin(e.n*e.cfg.Dim), blk, s.q, s.k, s.v, s.q16, s.k16, s.v16, la.qkv, b, t, nh, flashD)
	r.launch("flash_backward_pre", rows(bht), blk, s.do16, s.dvec, s.dy, la.y, bht, t, nh)
	r.launch("flash_backward_dkdv", dim{x: blocks(t, flashBC), y: b * nh}, dim{x: flashThreads},
		s.dk, s.dv, s.q16, s.k16, s.v16, s.do16, la.lse, s.dvec, t, scaleLog2, scale)
	r.launch("flash_backward_dq", e.flashGrid(), dim{x: flashThreads},
		s.dq, s.q16, s.k16, s.v16, s.do16, la.lse, s.dvec, t, scaleLog2, scale)
}

// flashBuffers are the flash path's buffers: per layer the log-sum-exp of each row
// (B,H,T), and the bfloat16 dO (B,H,T,D) and rowsum(dO∘O) (B,H,T) shared by the layers.
func (e *Engine) flashBuffers(a func(n int, size ...int) cu.DevicePtr) {
	bht := e.b * e.cfg.Heads * e.t
	for i := range e.act.layers {
		e.act.layers[i].lse = a(bht)
	}
	e.act.do16, e.act.dvec = a(e.n*e.cfg.Dim, 2), a(bht)
}
