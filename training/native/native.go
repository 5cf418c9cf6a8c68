package native

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/sfsweep/sfsweep/internal/par"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/gemm"
	"github.com/sfsweep/sfsweep/training/model"
)

// Float is the element type: float32 for training, float64 for gradient checks.
type Float interface{ ~float32 | ~float64 }

// Model is the native engine for one configuration and micro-batch shape. Its methods must
// not be called concurrently; separate Models may run at the same time (their kernels then
// take turns on the shared worker pool).
type Model[T Float] struct {
	cfg    model.Config
	layout model.Layout
	b, t   int // micro-batch shape
	n      int // rows, b·t
	gpt2   bool

	params, grads []T
	p, g          weights[T] // named views of params and grads
	zeroC         []T        // (C) zeros: the LayerNorm bias of a GPT-2 without biases

	act    activations[T]
	cos    []T // RoPE tables (t, D/2)
	sin    []T
	negSin []T // −sin, for the inverse rotation
	pool   *par.Pool
	k      kernels[T]

	tokens, targets []int32
	ready           bool // a Forward has run whose activations Backward may use
	actBytes        int  // bytes of activation and scratch buffers
	// losses are the mean losses of the micro-batches accumulated and not yet read
	// (accumulate.go).
	losses []float64
}

// ActivationBytes returns the bytes of the buffers a step uses besides the parameters and
// gradients: the activations kept for Backward and the scratch of both passes, all
// allocated once by New.
func (m *Model[T]) ActivationBytes() int { return m.actBytes }

// weights are named views of one flat buffer in cfg.Layout() order. emb is
// transformer.wte, head the same slice when the LM head is tied, norm (and GPT-2's normB)
// ln_f.
type weights[T Float] struct {
	emb    []T // (V,C)
	wpe    []T // (Context,C), GPT-2 only
	layers []layerWeights[T]
	norm   []T // (C)
	normB  []T // (C), GPT-2 only
	head   []T // (V,C)
}

// layerWeights are the views of one block. wq, wk, wv are adjacent in the layout, so qkv is
// the (3C,C) matrix of all three; w1 (gate) and w3 (up) are adjacent too, so w13 is (2F,C).
//
// For GPT-2, n1 and n2 are ln_1 and ln_2, qkv is attn.c_attn, wo attn.c_proj, w13 is
// mlp.c_fc (F,C) and w2 mlp.c_proj (C,F); the other fields are their biases.
type layerWeights[T Float] struct {
	n1  []T // (C)
	qkv []T // (3C,C)
	wo  []T // (C,C)
	n2  []T // (C)
	w13 []T // (2F,C); GPT-2: (F,C)
	w2  []T // (C,F)

	n1b, qkvB, woB, n2b, fcB, projB []T // GPT-2 biases: (C), (3C), (C), (C), (F), (C)
}

// activations are what the forward pass keeps for the backward pass, plus the scratch of
// the backward pass. N = B·T rows; every buffer is row-major.
type activations[T Float] struct {
	resid  [][]T // 2L+1 buffers (N,C): resid[2l] enters block l, resid[2l+1] is after its attention
	layers []layerActs[T]
	nfRstd []T       // (N)
	nfMean []T       // (N) GPT-2 only
	nfOut  []T       // (N,C) final norm output
	logits []T       // (N,V) logits, then probabilities, then their gradient
	losses []float64 // (N) per-row cross-entropy

	// backward scratch, reused by every layer
	dresid []T // (N,C) gradient of the residual stream
	dnorm  []T // (N,C) gradient of a norm's output
	dqkv   []T // (N,3C)
	datt   []T // (B,H,T,T) scratch: one (T,T) slot per range of (batch, head) pairs
	dy     []T // (N,C) gradient of the attention heads' output
	dgu    []T // (N,2F)
	dh     []T // (N,F)
	dwPart []T // (chunks,C) per-chunk partial sums of a norm-weight gradient
	dbPart []T // GPT-2: (chunks,max(3C,F)) per-chunk partial sums of a bias gradient
	kvT    []T // (B,H,D,T) scratch: keys (forward) or values (backward) of a head, transposed
}

// layerActs are the activations of one block.
type layerActs[T Float] struct {
	n1Rstd, n1Out []T // (N), (N,C)
	qkv           []T // (N,3C), q and k rotated
	att           []T // (B,H,T,T) attention probabilities
	y             []T // (N,C) heads' output, concatenated
	n2Rstd, n2Out []T // (N), (N,C)
	gu            []T // (N,2F) gate and up projections; GPT-2: (N,F) c_fc output
	h             []T // (N,F) silu(gate)·up; GPT-2: gelu(c_fc output)

	n1Mean, n2Mean []T // (N) GPT-2 only: LayerNorm row means
}

// New returns an engine for cfg on micro-batches of batch sequences of seqLen tokens
// (seqLen ≤ cfg.Context). Its parameters are zero until the caller fills Params, with
// model.Init for instance.
func New[T Float](cfg model.Config, batch, seqLen int) (*Model[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("native: %w", err)
	}
	if batch < 1 {
		return nil, fmt.Errorf("native: batch = %d, must be ≥ 1", batch)
	}
	if seqLen < 1 || seqLen > cfg.Context {
		return nil, fmt.Errorf("native: seqLen = %d, must be in [1, %d] (the context)", seqLen, cfg.Context)
	}
	l := cfg.Layout()
	m := &Model[T]{
		cfg: cfg, layout: l, b: batch, t: seqLen, n: batch * seqLen, gpt2: cfg.Arch == model.GPT2,
		params: make([]T, l.Size), grads: make([]T, l.Size),
		pool:   par.Default(),
		tokens: make([]int32, batch*seqLen), targets: make([]int32, batch*seqLen),
	}
	m.p = m.views(m.params)
	m.g = m.views(m.grads)
	m.zeroC = make([]T, cfg.Dim)
	if !m.gpt2 {
		m.cos, m.sin = ropeTables[T](seqLen, cfg.HeadDim(), cfg.RopeTheta)
		m.negSin = make([]T, len(m.sin))
		for i, s := range m.sin {
			m.negSin[i] = -s
		}
	}
	m.allocActivations()
	m.k.init(m)
	return m, nil
}

func (m *Model[T]) views(buf []T) weights[T] {
	v := func(name string) []T { return model.View(m.layout, buf, name) }
	// span returns the tensors first..last, which the layout places back to back, as one
	// slice of size elements.
	span := func(first, last string, size int) []T {
		t0, _ := m.layout.Tensor(first)
		t1, _ := m.layout.Tensor(last)
		if t1.Offset+t1.Size-t0.Offset != size {
			panic("native: " + first + " .. " + last + " are not adjacent in the layout")
		}
		return buf[t0.Offset : t0.Offset+size : t0.Offset+size]
	}
	c, f := m.cfg.Dim, m.cfg.Hidden
	if m.gpt2 {
		// b is a bias, nil in a model without biases, which the kernels then leave out
		b := func(name string) []T {
			if _, ok := m.layout.Tensor(name); !ok {
				return nil
			}
			return v(name)
		}
		w := weights[T]{emb: v("transformer.wte.weight"), head: v(m.cfg.Head()), wpe: v("transformer.wpe.weight"),
			norm: v("transformer.ln_f.weight"), normB: b("transformer.ln_f.bias")}
		for i := range m.cfg.Layers {
			p := fmt.Sprintf("transformer.h.%d.", i)
			w.layers = append(w.layers, layerWeights[T]{
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
	w := weights[T]{emb: v("transformer.wte.weight"), norm: v("transformer.ln_f.weight"), head: v(m.cfg.Head())}
	for i := range m.cfg.Layers {
		p := fmt.Sprintf("transformer.h.%d.", i)
		w.layers = append(w.layers, layerWeights[T]{
			n1:  v(p + "ln_1.weight"),
			qkv: v(p + "attn.c_attn.weight"),
			wo:  v(p + "attn.c_proj.weight"),
			n2:  v(p + "ln_2.weight"),
			w13: span(p+"mlp.w1.weight", p+"mlp.w2.weight", 2*f*c),
			w2:  v(p + "mlp.c_proj.weight"),
		})
	}
	return w
}

// normChunk is the number of rows per partial sum of a norm-weight gradient.
const normChunk = 16

func (m *Model[T]) allocActivations() {
	n, c, f, v := m.n, m.cfg.Dim, m.cfg.Hidden, m.cfg.Vocab
	att := m.b * m.cfg.Heads * m.t * m.t
	gu := 2 * f // width of gu: gate | up, or GPT-2's c_fc output
	if m.gpt2 {
		gu = f
	}
	a := &m.act
	mk := func(size int) []T { // every activation and scratch buffer, counted
		m.actBytes += size * int(unsafe.Sizeof(T(0)))
		return make([]T, size)
	}
	for range 2*m.cfg.Layers + 1 {
		a.resid = append(a.resid, mk(n*c))
	}
	for range m.cfg.Layers {
		la := layerActs[T]{
			n1Rstd: mk(n), n1Out: mk(n * c),
			qkv: mk(n * 3 * c), att: mk(att), y: mk(n * c),
			n2Rstd: mk(n), n2Out: mk(n * c),
			gu: mk(n * gu), h: mk(n * f),
		}
		if m.gpt2 {
			la.n1Mean, la.n2Mean = mk(n), mk(n)
		}
		a.layers = append(a.layers, la)
	}
	a.nfRstd, a.nfOut = mk(n), mk(n*c)
	if m.gpt2 {
		a.nfMean = mk(n)
	}
	a.logits, a.losses = mk(n*v), make([]float64, n)
	m.actBytes += 8 * n
	a.dresid, a.dnorm, a.dqkv = mk(n*c), mk(n*c), mk(n*3*c)
	a.datt, a.dy = mk(att), mk(n*c)
	a.dgu, a.dh = mk(n*gu), mk(n*f)
	a.dwPart = mk(par.Chunks(n, normChunk) * c)
	if m.gpt2 {
		a.dbPart = mk(par.Chunks(n, normChunk) * max(3*c, f))
	}
	a.kvT = mk(n * c)
}

// setPool makes the engine run its row kernels on p instead of par.Default() (tests use it
// to vary the worker count). No kernel calls gemm, so p may be any pool.
func (m *Model[T]) setPool(p *par.Pool) { m.pool = p }

// Config returns the model configuration.
func (m *Model[T]) Config() model.Config { return m.cfg }

// Params returns the flat parameter buffer in cfg.Layout() order; the optimizer updates it
// in place.
func (m *Model[T]) Params() []T { return m.params }

// Grads returns the flat gradient buffer, in the layout of Params.
func (m *Model[T]) Grads() []T { return m.grads }

// ZeroGrad sets every gradient to zero and forgets the losses accumulated and not read.
func (m *Model[T]) ZeroGrad() {
	clear(m.grads)
	m.losses = m.losses[:0]
}

// Batch returns the number of sequences of a micro-batch.
func (m *Model[T]) Batch() int { return m.b }

// SeqLen returns the number of tokens of each sequence.
func (m *Model[T]) SeqLen() int { return m.t }

// Forward runs the model on tokens and returns the mean cross-entropy of predicting
// targets. Both hold batch·seqLen token ids, row-major by (sequence, position); targets are
// usually the tokens shifted by one. It keeps what Backward needs.
func (m *Model[T]) Forward(tokens, targets []int32) (float64, error) {
	m.ready = false
	if err := backend.CheckBatch("native", tokens, targets, m.n, m.cfg.Vocab); err != nil {
		return 0, err
	}
	copy(m.tokens, tokens)
	copy(m.targets, targets)
	if m.gpt2 {
		return m.forwardGPT2(), nil
	}

	n, c, f, v := m.n, m.cfg.Dim, m.cfg.Hidden, m.cfg.Vocab
	a, k := &m.act, &m.k
	k.encoderForward(a.resid[0], m.tokens, m.p.emb)
	for l, w := range m.p.layers {
		la := &a.layers[l]
		x, mid, out := a.resid[2*l], a.resid[2*l+1], a.resid[2*l+2]
		// attention: mid = x + Wo·Attn(RoPE(Wqkv·n1(x)))
		k.rmsnormForward(la.n1Out, la.n1Rstd, x, w.n1)
		gemm.Gemm(false, true, n, 3*c, c, 1, la.n1Out, c, w.qkv, c, 0, la.qkv, 3*c)
		k.ropeForward(la.qkv)
		k.attentionForward(la.y, la.att, la.qkv)
		copy(mid, x)
		gemm.Gemm(false, true, n, c, c, 1, la.y, c, w.wo, c, 1, mid, c)
		// MLP: out = mid + W2·swiglu(W13·n2(mid))
		k.rmsnormForward(la.n2Out, la.n2Rstd, mid, w.n2)
		gemm.Gemm(false, true, n, 2*f, c, 1, la.n2Out, c, w.w13, c, 0, la.gu, 2*f)
		k.swigluForward(la.h, la.gu)
		copy(out, mid)
		gemm.Gemm(false, true, n, c, f, 1, la.h, f, w.w2, f, 1, out, c)
	}
	k.rmsnormForward(a.nfOut, a.nfRstd, a.resid[2*m.cfg.Layers], m.p.norm)
	gemm.Gemm(false, true, n, v, c, 1, a.nfOut, c, m.p.head, c, 0, a.logits, v)
	k.crossEntropyForward(a.logits, a.losses, m.targets)
	var sum float64
	for _, l := range a.losses {
		sum += l
	}
	m.ready = true
	return sum / float64(n), nil
}

// errNoForward is the error of a Backward without a Forward to use.
var errNoForward = errors.New("native: Backward needs a successful Forward since the last Backward")

// Backward adds the gradient of the mean loss of the last Forward to Grads, so the gradients
// of successive micro-batches add up: after Forward and Backward on k micro-batches, Grads
// holds the sum of the k micro-batch gradients (k times the gradient of their mean, for
// micro-batches of equal size). Each Forward allows one Backward; a second one is an error
// and changes nothing.
func (m *Model[T]) Backward() error {
	if !m.ready {
		return errNoForward
	}
	m.ready = false
	if m.gpt2 {
		m.backwardGPT2()
		return nil
	}
	n, c, f := m.n, m.cfg.Dim, m.cfg.Hidden
	a, k := &m.act, &m.k

	m.headBackward()
	k.rmsnormBackward(a.dresid, m.g.norm, a.dnorm, a.resid[2*m.cfg.Layers], m.p.norm, a.nfRstd)

	for l := m.cfg.Layers - 1; l >= 0; l-- {
		w, gw, la := &m.p.layers[l], &m.g.layers[l], &a.layers[l]
		x, mid := a.resid[2*l], a.resid[2*l+1]
		// MLP
		gemm.Gemm(true, false, c, f, n, 1, a.dresid, c, la.h, f, 1, gw.w2, f)
		gemm.Gemm(false, false, n, f, c, 1, a.dresid, c, w.w2, f, 0, a.dh, f)
		k.swigluBackward(a.dgu, a.dh, la.gu)
		gemm.Gemm(true, false, 2*f, c, n, 1, a.dgu, 2*f, la.n2Out, c, 1, gw.w13, c)
		gemm.Gemm(false, false, n, c, 2*f, 1, a.dgu, 2*f, w.w13, c, 0, a.dnorm, c)
		k.rmsnormBackward(a.dresid, gw.n2, a.dnorm, mid, w.n2, la.n2Rstd)
		// attention
		gemm.Gemm(true, false, c, c, n, 1, a.dresid, c, la.y, c, 1, gw.wo, c)
		gemm.Gemm(false, false, n, c, c, 1, a.dresid, c, w.wo, c, 0, a.dy, c)
		k.attentionBackward(a.dqkv, a.datt, a.dy, la.att, la.qkv)
		k.ropeBackward(a.dqkv)
		gemm.Gemm(true, false, 3*c, c, n, 1, a.dqkv, 3*c, la.n1Out, c, 1, gw.qkv, c)
		gemm.Gemm(false, false, n, c, 3*c, 1, a.dqkv, 3*c, w.qkv, c, 0, a.dnorm, c)
		k.rmsnormBackward(a.dresid, gw.n1, a.dnorm, x, w.n1, la.n1Rstd)
	}
	k.encoderBackward(m.g.emb, a.dresid, m.tokens)
	return nil
}

// headBackward is the backward pass of the loss and the LM head, shared by both
// architectures: the logits become their gradient in place, the head's weight gradient is
// added (into the token embedding's when tied), the gradient at the final norm's output
// goes to a.dnorm, and the residual-stream gradient a.dresid is cleared.
func (m *Model[T]) headBackward() {
	n, c, v := m.n, m.cfg.Dim, m.cfg.Vocab
	a := &m.act
	m.k.crossEntropyBackward(a.logits, m.targets)
	dlogits := a.logits
	gemm.Gemm(true, false, v, c, n, 1, dlogits, v, a.nfOut, c, 1, m.g.head, c)
	gemm.Gemm(false, false, n, c, v, 1, dlogits, v, m.p.head, c, 0, a.dnorm, c)
	clear(a.dresid)
}
