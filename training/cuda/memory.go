//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"math"

	"gorgonia.org/cu"

	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/model"
)

// The engine's device memory: one allocation per buffer, made once when the engine is
// made (New) and freed when it closes, and counted without a device by NeedBytes. The
// passes allocate no device memory.

// weights are the device addresses of the tensors of one flat buffer in Layout order; qkv
// is attn.c_attn (3C,C) and w13 is mlp.w1|mlp.w2 as one (2F,C) matrix, as in
// training/native. emb is transformer.wte and head the same tensor when tied, norm (and
// GPT-2's normB) ln_f; for GPT-2 w13 is mlp.c_fc (F,C), and the layers have biases.
type weights struct {
	emb, norm, head cu.DevicePtr
	wpe, normB      cu.DevicePtr // GPT-2 only
	layers          []layerWeights
}

type layerWeights struct {
	n1, qkv, wo, n2, w13, w2 cu.DevicePtr

	n1b, qkvB, woB, n2b, fcB, projB cu.DevicePtr // GPT-2 only
}

// activations mirror those of training/native, plus the head-major scratch of attention.
type activations struct {
	resid  []cu.DevicePtr // 2L+1 (N,C)
	layers []layerActs
	nfRstd cu.DevicePtr // (N)
	nfMean cu.DevicePtr // (N) GPT-2 only
	nfOut  cu.DevicePtr // (N,C)
	// nfOut16 and the layers' n1Out16, n2Out16, h16 are the bfloat16 copies of nfOut,
	// n1Out, n2Out and h that their producers write on the round path (fastRound); 0
	// when the engine was made without it.
	nfOut16 cu.DevicePtr
	// dresid16, dgu16, q16, k16, v16, hy16, dqkv16 and datt16 are the bfloat16 copies
	// of dresid, dgu, q, k, v, hy (the heads' output gradient), dqkv and datt that their
	// producers write on the round path; 0 without it.
	dresid16, dgu16, q16, k16, v16, hy16, dqkv16, datt16 cu.DevicePtr
	logits                                               cu.DevicePtr // (N,V): logits, then (default path) probabilities, then their gradient
	// ceStats (N,2) are each row's max and 1/Σexp(z − max), from the fused
	// cross-entropy's loss kernel to its gradient kernel.
	ceStats cu.DevicePtr

	dresid, dnorm, dqkv cu.DevicePtr // (N,C), (N,C), (N,3C)
	datt                cu.DevicePtr // (B,H,T,T)
	dy, dgu, dh         cu.DevicePtr // (N,C), (N,2F) (GPT-2: (N,F)), (N,F)
	dwPart              cu.DevicePtr // (chunks,C) partial sums of a norm-weight gradient
	dbPart              cu.DevicePtr // GPT-2: (chunks,max(3C,F)) partial sums of a bias gradient
	// GPT-2 without biases (model.Config.Biases false): zeros (max(3C,F)) that stand for
	// every bias, and a sink of the same size for their gradients, outside the parameters,
	// so that the GPT-2 kernels run unchanged
	noBias, biasSink cu.DevicePtr
	q, k, v, hy      cu.DevicePtr // (B,H,T,D) each: q, k, v and the heads' outputs
	dq, dk, dv       cu.DevicePtr // (B,H,T,D) each
	// do16 (B,H,T,D) bfloat16 and dvec (B,H,T): the flash path's dO and rowsum(dO∘O);
	// 0 without it.
	do16, dvec cu.DevicePtr
}

type layerActs struct {
	n1Rstd, n1Out cu.DevicePtr // (N), (N,C)
	qkv           cu.DevicePtr // (N,3C), q and k rotated
	att           cu.DevicePtr // (B,H,T,T) attention probabilities; 0 on the flash path
	lse           cu.DevicePtr // (B,H,T) the flash path's log-sum-exp (base 2); 0 without it
	qkv16         cu.DevicePtr // the flash path's q, k, v (B,H,T,D) bfloat16 one after another; 0 without it
	y             cu.DevicePtr // (N,C)
	n2Rstd, n2Out cu.DevicePtr // (N), (N,C)
	gu, h         cu.DevicePtr // (N,2F), (N,F); GPT-2: c_fc output (N,F) and its GELU

	n1Mean, n2Mean cu.DevicePtr // (N) GPT-2 only

	// n1Out16, n2Out16, h16, y16, att16: bfloat16 copies of n1Out, n2Out, h, y and att
	// that their producers write on the round path (fastRound); 0 without it.
	n1Out16, n2Out16, h16, y16, att16 cu.DevicePtr
}

// optimizerVectors is the number of parameter-sized state vectors of the device
// optimizers: z and v for SF-AdamW, m and v for AdamW; averageVectors those of the
// exponential averages a device optimizer may keep (EWA(x) and EWA(y), or EWA(w)).
const (
	optimizerVectors = 2
	averageVectors   = 2
)

// NeedBytes is the device memory an engine for cfg on micro-batches of batch sequences of
// seqLen tokens allocates, with the state and scratch of a device optimizer: what a trial
// of that shape needs on the GPU, beyond the CUDA context and cuBLAS's workspace.
func NeedBytes(cfg model.Config, batch, seqLen int, p backend.Precision) int64 {
	fast, _ := fastFromEnv() // New fails on an error
	return needBytes(cfg, batch, seqLen, p, fast)
}

// needBytes is NeedBytes for an engine made with the fast paths fast.
func needBytes(cfg model.Config, batch, seqLen int, p backend.Precision, fast fastPaths) int64 {
	c := &Engine{cfg: cfg, layout: cfg.Layout(), b: batch, t: seqLen, n: batch * seqLen, gpt2: cfg.Arch == model.GPT2, counting: true, bf: bf16{on: p == backend.BF16}, fast: fast}
	_ = c.allocBuffers()
	size := c.layout.Size
	_, _ = c.mk(blocks(size, normChunk), 8) // the gradient-norm scratch
	for range optimizerVectors + averageVectors {
		_, _ = c.mk(size)
	}
	return int64(c.bytes)
}

// oom turns a failed allocation into a *backend.OutOfMemoryError that says what the trial
// needs and what the device has; any other error is returned as it is.
func (e *Engine) oom(err error) error {
	if !errors.Is(err, cu.OutOfMemory) {
		return err
	}
	free, total, merr := cu.MemInfo()
	if merr != nil {
		free, total = -1, -1
	}
	return &backend.OutOfMemoryError{
		Backend: e.name, Need: needBytes(e.cfg, e.b, e.t, e.prec, e.fast), Total: total, Free: free, Err: err,
		What: fmt.Sprintf("%s of %d parameters at micro-batch %d×%d, with its optimizer,", e.cfg.Arch, e.cfg.NumParams(), e.b, e.t),
	}
}

// mk allocates n elements of size bytes (4 unless given) and records the allocation; an
// engine that is counting (NeedBytes) only adds up the bytes.
func (e *Engine) mk(n int, size ...int) (cu.DevicePtr, error) {
	s := 4
	if len(size) > 0 {
		s = size[0]
	}
	if e.counting {
		e.bytes += max(n, 1) * s
		return 0, nil
	}
	p, err := alloc(n, s)
	if err != nil {
		return 0, err
	}
	e.allocs = append(e.allocs, p)
	e.bytes += max(n, 1) * s
	return p, nil
}

func (e *Engine) allocate() error {
	if err := e.allocBuffers(); err != nil {
		return err
	}
	size := e.layout.Size
	if e.gpt2 {
		if !e.cfg.Biases && !e.counting {
			c, f := e.cfg.Dim, e.cfg.Hidden
			for _, p := range []cu.DevicePtr{e.act.noBias, e.act.biasSink} {
				if err := e.st.zero(p, max(3*c, f)); err != nil {
					return err
				}
			}
		}
		return e.zeroAll(size)
	}
	// RoPE tables in float64, rounded once, as training/native computes them.
	d, h := e.cfg.HeadDim(), e.cfg.HeadDim()/2
	cos, sin, nsin := make([]float32, e.t*h), make([]float32, e.t*h), make([]float32, e.t*h)
	for p := range e.t {
		for i := range h {
			ang := float64(p) * math.Pow(e.cfg.RopeTheta, -float64(2*i)/float64(d))
			cos[p*h+i], sin[p*h+i] = float32(math.Cos(ang)), float32(math.Sin(ang))
			nsin[p*h+i] = -sin[p*h+i]
		}
	}
	for _, t := range []struct {
		dst cu.DevicePtr
		src []float32
	}{{e.cos, cos}, {e.sin, sin}, {e.nsin, nsin}} {
		if err := htod(e.st, t.dst, t.src); err != nil {
			return err
		}
	}
	return e.zeroAll(size)
}

// allocBuffers allocates the parameters, the gradients, the activations and the RoPE
// tables.
func (e *Engine) allocBuffers() error {
	n, c, f, v, nl := e.n, e.cfg.Dim, e.cfg.Hidden, e.cfg.Vocab, e.cfg.Layers
	bhtt := e.b * e.cfg.Heads * e.t * e.t
	e.flash = e.flashAttention()
	att := bhtt // the scores and probabilities, which the flash path does not store
	if e.flash {
		att = 0
	}
	var err error
	// a records the first allocation error; later calls return 0 and do nothing.
	a := func(n int, size ...int) cu.DevicePtr {
		if err != nil {
			return 0
		}
		var p cu.DevicePtr
		p, err = e.mk(n, size...)
		return p
	}
	size := e.layout.Size
	e.params, e.grads = a(size), a(size)
	e.tokens, e.targets, e.losses = a(n), a(n), a(n, 8)
	if e.fast.has(fastEmbed) {
		e.embIdx = a(3*n + 2)
		if !e.counting {
			e.embSeen = make([]int32, v)
		}
	}
	e.queue.dev = a(lossSlots*n, 8)
	h := e.cfg.HeadDim() / 2
	e.cos, e.sin, e.nsin = a(e.t*h), a(e.t*h), a(e.t*h)
	gu := 2 * f // gate | up, or GPT-2's c_fc output
	if e.gpt2 {
		gu = f
	}
	s := &e.act
	for range 2*nl + 1 {
		s.resid = append(s.resid, a(n*c))
	}
	for range nl {
		la := layerActs{
			n1Rstd: a(n), n1Out: a(n * c), qkv: a(n * 3 * c), y: a(n * c),
			n2Rstd: a(n), n2Out: a(n * c), gu: a(n * gu), h: a(n * f),
		}
		if att > 0 {
			la.att = a(att)
		}
		if e.gpt2 {
			la.n1Mean, la.n2Mean = a(n), a(n)
		}
		if e.roundCopies() {
			la.n1Out16, la.n2Out16, la.h16, la.y16 = a(n*c, 2), a(n*c, 2), a(n*f, 2), a(n*c, 2)
			if att > 0 {
				la.att16 = a(att, 2)
			}
		}
		s.layers = append(s.layers, la)
	}
	s.nfRstd, s.nfOut, s.logits, s.ceStats = a(n), a(n*c), a(n*v), a(2*n)
	if e.roundCopies() {
		s.nfOut16, s.dresid16, s.dgu16 = a(n*c, 2), a(n*c, 2), a(n*gu, 2)
		s.q16, s.k16, s.v16, s.hy16, s.dqkv16 = a(n*c, 2), a(n*c, 2), a(n*c, 2), a(n*c, 2), a(n*3*c, 2)
		if att > 0 {
			s.datt16 = a(att, 2)
		}
		e.copies16 = true
	}
	if e.flash {
		e.flashBuffers(a)
	}
	if e.gpt2 {
		s.nfMean = a(n)
		s.dbPart = a(blocks(n, normRows) * max(3*c, f))
		if !e.cfg.Biases {
			s.noBias, s.biasSink = a(max(3*c, f)), a(max(3*c, f))
		}
	}
	s.dresid, s.dnorm, s.dqkv = a(n*c), a(n*c), a(n*3*c)
	if att > 0 {
		s.datt = a(att)
	}
	s.dy, s.dgu, s.dh = a(n*c), a(n*gu), a(n*f)
	s.dwPart = a(blocks(n, normRows) * c)
	s.q, s.k, s.v, s.hy = a(n*c), a(n*c), a(n*c), a(n*c)
	s.dq, s.dk, s.dv = a(n*c), a(n*c), a(n*c)
	if e.bf.on {
		// The largest activation operand of a product: the logits' gradient, the attention
		// probabilities, or a layer's widest activation.
		e.bf.cap = max(n*v, att, n*max(3*c, gu, f))
		e.bf.params, e.bf.a, e.bf.b = a(size, 2), a(e.bf.cap, 2), a(e.bf.cap, 2)
	}
	if err != nil {
		return err
	}
	e.p, e.g = e.views(e.params, s.noBias), e.views(e.grads, s.biasSink)
	return nil
}

// zeroAll clears the parameters and gradients: cuMemAlloc does not, and the gradients must
// start at zero.
func (e *Engine) zeroAll(size int) error {
	if err := e.st.zero(e.params, size); err != nil {
		return err
	}
	return e.st.zero(e.grads, size)
}

// views are the tensors of buf, the parameters or the gradients; noBias stands for every
// bias of a GPT-2 without biases (zeros for the parameters, a sink for the gradients).
func (e *Engine) views(buf, noBias cu.DevicePtr) weights {
	v := func(name string) cu.DevicePtr {
		t, ok := e.layout.Tensor(name)
		if !ok {
			panic("cuda: no tensor " + name)
		}
		return off(buf, t.Offset)
	}
	b := func(name string) cu.DevicePtr {
		if _, ok := e.layout.Tensor(name); !ok {
			return noBias
		}
		return v(name)
	}
	if e.gpt2 {
		w := weights{emb: v("transformer.wte.weight"), head: v(e.cfg.Head()), wpe: v("transformer.wpe.weight"),
			norm: v("transformer.ln_f.weight"), normB: b("transformer.ln_f.bias")}
		for i := range e.cfg.Layers {
			p := fmt.Sprintf("transformer.h.%d.", i)
			w.layers = append(w.layers, layerWeights{
				n1: v(p + "ln_1.weight"), n1b: b(p + "ln_1.bias"),
				qkv: v(p + "attn.c_attn.weight"), qkvB: b(p + "attn.c_attn.bias"),
				wo: v(p + "attn.c_proj.weight"), woB: b(p + "attn.c_proj.bias"),
				n2: v(p + "ln_2.weight"), n2b: b(p + "ln_2.bias"),
				w13: v(p + "mlp.c_fc.weight"), fcB: b(p + "mlp.c_fc.bias"),
				w2: v(p + "mlp.c_proj.weight"), projB: b(p + "mlp.c_proj.bias"),
			})
		}
		return w
	}
	w := weights{emb: v("transformer.wte.weight"), norm: v("transformer.ln_f.weight"), head: v(e.cfg.Head())}
	for i := range e.cfg.Layers {
		p := fmt.Sprintf("transformer.h.%d.", i)
		// mlp.w1 and mlp.w2 are adjacent in the layout (training/native checks it).
		w.layers = append(w.layers, layerWeights{
			n1: v(p + "ln_1.weight"), qkv: v(p + "attn.c_attn.weight"), wo: v(p + "attn.c_proj.weight"),
			n2: v(p + "ln_2.weight"), w13: v(p + "mlp.w1.weight"), w2: v(p + "mlp.c_proj.weight"),
		})
	}
	return w
}

func (e *Engine) free() {
	for _, p := range e.allocs {
		_ = cu.MemFree(p)
	}
	e.allocs = nil
	e.freeGraph()
	e.freeHost()
}
