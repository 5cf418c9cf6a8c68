//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/model"
)

// family is the cuda backends' family in training/backend's catalog: one engine whose
// precision of matrix products the backend's name chooses.
const family = "cuda"

// The precisions of the engine's matrix products (backend.Precision):
//   - FP32: cuBLAS SGEMMs in full float32;
//   - TF32: cuBLAS runs the GEMMs on TF32 tensor cores (inputs rounded to 10-bit
//     mantissas, float32 accumulation);
//   - BF16: every matrix product (the linear layers and both products of attention) runs on
//     bfloat16 operands with float32 accumulation and float32 outputs, as torch.autocast
//     with dtype bfloat16 does; parameters, gradients, the other ops and the optimizers
//     stay float32 (the master weights).

// bf16 is the state of an engine in bf16 mode: a bfloat16 copy of the parameters, made
// again when they have changed, and two scratch buffers for the activation operands of a
// product.
type bf16 struct {
	on     bool
	params cu.DevicePtr // (size) bfloat16 copy of the parameters
	stale  bool         // the parameters changed since the copy
	a, b   cu.DevicePtr // scratch for the operands A and B, cap elements each
	cap    int
}

// Engine is the CUDA engine for one model configuration (LLaMA or GPT-2) and micro-batch
// shape: a backend.Engine whose parameters, gradients and activations live in device
// memory. Its methods must not be called concurrently; separate engines may share the GPU.
type Engine struct {
	d      *device
	prec   backend.Precision
	name   string // the backend's name in the catalog, for errors
	cfg    model.Config
	layout model.Layout
	b, t   int // micro-batch shape
	n      int // rows, b·t
	gpt2   bool

	params, grads cu.DevicePtr
	p, g          weights

	act             activations
	cos, sin, nsin  cu.DevicePtr // RoPE tables (t, D/2); nsin = −sin
	tokens, targets cu.DevicePtr // (n) int32
	losses          cu.DevicePtr // (n) float64
	lossHost        []float64
	hostTokens      []int32 // the last Forward's tokens and targets
	hostTargets     []int32

	allocs []cu.DevicePtr
	ready  bool // a Forward has run whose activations Backward may use
	closed bool
	bytes  int // device memory held

	counting bool // NeedBytes: mk adds up sizes and allocates nothing

	bf bf16
}

// weights are the device addresses of the tensors of one flat buffer in Layout order; qkv
// is wq|wk|wv as one (3C,C) matrix and w13 is w1|w3 as one (2F,C) matrix, as in
// training/native. For GPT-2, emb is transformer.wte and head the same tensor (tied), norm
// and normB are ln_f, w13 is mlp.c_fc (F,C), and the layers have biases.
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
	logits cu.DevicePtr // (N,V): logits, then probabilities, then their gradient

	dresid, dnorm, dqkv cu.DevicePtr // (N,C), (N,C), (N,3C)
	datt                cu.DevicePtr // (B,H,T,T)
	dy, dgu, dh         cu.DevicePtr // (N,C), (N,2F) (GPT-2: (N,F)), (N,F)
	dwPart              cu.DevicePtr // (chunks,C) partial sums of a norm-weight gradient
	dbPart              cu.DevicePtr // GPT-2: (chunks,max(3C,F)) partial sums of a bias gradient
	q, k, v, hy         cu.DevicePtr // (B,H,T,D) each: q, k, v and the heads' outputs
	dq, dk, dv          cu.DevicePtr // (B,H,T,D) each
}

type layerActs struct {
	n1Rstd, n1Out cu.DevicePtr // (N), (N,C)
	qkv           cu.DevicePtr // (N,3C), q and k rotated
	att           cu.DevicePtr // (B,H,T,T) attention probabilities
	y             cu.DevicePtr // (N,C)
	n2Rstd, n2Out cu.DevicePtr // (N), (N,C)
	gu, h         cu.DevicePtr // (N,2F), (N,F); GPT-2: c_fc output (N,F) and its GELU

	n1Mean, n2Mean cu.DevicePtr // (N) GPT-2 only
}

// normRows is the number of rows per partial sum of a norm-weight gradient.
const normRows = 32

// embBuckets is the number of threads per column of the embedding-gradient scatter.
const embBuckets = 32

var _ backend.Engine = (*Engine)(nil)
var _ backend.DeviceOptimizers = (*Engine)(nil)

func init() {
	for _, b := range backend.Family(family) {
		backend.Register(b.Name, func(cfg model.Config, batch, seqLen int) (backend.Engine, error) {
			e, err := New(cfg, batch, seqLen, b.Precision)
			if err != nil {
				return nil, err
			}
			return e, nil
		})
	}
}

// New returns an engine for cfg on micro-batches of batch sequences of seqLen tokens
// (seqLen ≤ cfg.Context) on GPU 0, whose matrix products have precision p (one of the
// family's: FP32, TF32 or BF16). Its parameters are zero until WriteParams.
func New(cfg model.Config, batch, seqLen int, p backend.Precision) (*Engine, error) {
	name, err := backend.Resolve(family, p)
	if err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	if batch < 1 {
		return nil, fmt.Errorf("cuda: batch = %d, must be ≥ 1", batch)
	}
	if seqLen < 1 || seqLen > cfg.Context {
		return nil, fmt.Errorf("cuda: seqLen = %d, must be in [1, %d] (the context)", seqLen, cfg.Context)
	}
	d, err := getDevice()
	if err != nil {
		return nil, err
	}
	unlock := d.lock()
	defer unlock()
	e := &Engine{d: d, prec: p, name: name, cfg: cfg, layout: cfg.Layout(), b: batch, t: seqLen, n: batch * seqLen, gpt2: cfg.Arch == model.GPT2,
		bf: bf16{on: p == backend.BF16, stale: true}, lossHost: make([]float64, batch*seqLen), hostTokens: make([]int32, batch*seqLen), hostTargets: make([]int32, batch*seqLen)}
	if err := e.allocate(); err != nil {
		e.free()
		return nil, e.oom(err)
	}
	return e, nil
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
	c := &Engine{cfg: cfg, layout: cfg.Layout(), b: batch, t: seqLen, n: batch * seqLen, gpt2: cfg.Arch == model.GPT2, counting: true, bf: bf16{on: p == backend.BF16}}
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
		Backend: e.name, Need: NeedBytes(e.cfg, e.b, e.t, e.prec), Total: total, Free: free, Err: err,
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
		if err := htod(t.dst, t.src); err != nil {
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
			n1Rstd: a(n), n1Out: a(n * c), qkv: a(n * 3 * c), att: a(bhtt), y: a(n * c),
			n2Rstd: a(n), n2Out: a(n * c), gu: a(n * gu), h: a(n * f),
		}
		if e.gpt2 {
			la.n1Mean, la.n2Mean = a(n), a(n)
		}
		s.layers = append(s.layers, la)
	}
	s.nfRstd, s.nfOut, s.logits = a(n), a(n*c), a(n*v)
	if e.gpt2 {
		s.nfMean = a(n)
		s.dbPart = a(blocks(n, normRows) * max(3*c, f))
	}
	s.dresid, s.dnorm, s.dqkv, s.datt = a(n*c), a(n*c), a(n*3*c), a(bhtt)
	s.dy, s.dgu, s.dh = a(n*c), a(n*gu), a(n*f)
	s.dwPart = a(blocks(n, normRows) * c)
	s.q, s.k, s.v, s.hy = a(n*c), a(n*c), a(n*c), a(n*c)
	s.dq, s.dk, s.dv = a(n*c), a(n*c), a(n*c)
	if e.bf.on {
		// The largest activation operand of a product: the logits' gradient, the attention
		// probabilities, or a layer's widest activation.
		e.bf.cap = max(n*v, bhtt, n*max(3*c, gu, f))
		e.bf.params, e.bf.a, e.bf.b = a(size, 2), a(e.bf.cap, 2), a(e.bf.cap, 2)
	}
	if err != nil {
		return err
	}
	e.p, e.g = e.views(e.params), e.views(e.grads)
	return nil
}

// zeroAll clears the parameters and gradients: cuMemAlloc does not, and the gradients must
// start at zero.
func (e *Engine) zeroAll(size int) error {
	if err := e.zero(e.params, size); err != nil {
		return err
	}
	return e.zero(e.grads, size)
}

func (e *Engine) views(buf cu.DevicePtr) weights {
	v := func(name string) cu.DevicePtr {
		t, ok := e.layout.Tensor(name)
		if !ok {
			panic("cuda: no tensor " + name)
		}
		return off(buf, t.Offset)
	}
	if e.gpt2 {
		wte := v("transformer.wte.weight")
		w := weights{emb: wte, head: wte, wpe: v("transformer.wpe.weight"),
			norm: v("transformer.ln_f.weight"), normB: v("transformer.ln_f.bias")}
		for i := range e.cfg.Layers {
			p := fmt.Sprintf("transformer.h.%d.", i)
			w.layers = append(w.layers, layerWeights{
				n1: v(p + "ln_1.weight"), n1b: v(p + "ln_1.bias"),
				qkv: v(p + "attn.c_attn.weight"), qkvB: v(p + "attn.c_attn.bias"),
				wo: v(p + "attn.c_proj.weight"), woB: v(p + "attn.c_proj.bias"),
				n2: v(p + "ln_2.weight"), n2b: v(p + "ln_2.bias"),
				w13: v(p + "mlp.c_fc.weight"), fcB: v(p + "mlp.c_fc.bias"),
				w2: v(p + "mlp.c_proj.weight"), projB: v(p + "mlp.c_proj.bias"),
			})
		}
		return w
	}
	w := weights{emb: v("emb.weight"), norm: v("norm.weight"), head: v("head.weight")}
	for i := range e.cfg.Layers {
		p := fmt.Sprintf("blocks.%d.", i)
		// wq, wk, wv and w1, w3 are adjacent in the layout (training/native checks it).
		w.layers = append(w.layers, layerWeights{
			n1: v(p + "n1.weight"), qkv: v(p + "att.wq.weight"), wo: v(p + "att.wo.weight"),
			n2: v(p + "n2.weight"), w13: v(p + "mlp.w1.weight"), w2: v(p + "mlp.w2.weight"),
		})
	}
	return w
}

func htod[T any](dst cu.DevicePtr, src []T) error {
	if len(src) == 0 {
		return nil
	}
	n := int64(len(src)) * int64(unsafe.Sizeof(src[0]))
	if err := cu.MemcpyHtoD(dst, unsafe.Pointer(&src[0]), n); err != nil {
		return fmt.Errorf("cuda: copying %d bytes to the device: %w", n, err)
	}
	return nil
}

func dtoh[T any](dst []T, src cu.DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	n := int64(len(dst)) * int64(unsafe.Sizeof(dst[0]))
	if err := cu.MemcpyDtoH(unsafe.Pointer(&dst[0]), src, n); err != nil {
		return fmt.Errorf("cuda: copying %d bytes from the device: %w", n, err)
	}
	return nil
}

func dtod(dst, src cu.DevicePtr, n int) error {
	if err := cu.MemcpyDtoD(dst, src, int64(4*n)); err != nil {
		return fmt.Errorf("cuda: copying %d bytes on the device: %w", 4*n, err)
	}
	return nil
}

func (e *Engine) zero(p cu.DevicePtr, n int) error {
	if err := cu.MemsetD32(p, 0, int64(n)); err != nil {
		return fmt.Errorf("cuda: clearing %d elements: %w", n, err)
	}
	return nil
}

func (e *Engine) free() {
	for _, p := range e.allocs {
		_ = cu.MemFree(p)
	}
	e.allocs = nil
}

var errClosed = errors.New("cuda: the engine is closed")

// Config returns the model configuration.
func (e *Engine) Config() model.Config { return e.cfg }

// Batch returns the number of sequences of a micro-batch.
func (e *Engine) Batch() int { return e.b }

// SeqLen returns the number of tokens of each sequence.
func (e *Engine) SeqLen() int { return e.t }

// NumParams returns the length of the parameter and gradient buffers.
func (e *Engine) NumParams() int { return e.layout.Size }

// DeviceBytes returns the device memory the engine holds: parameters, gradients,
// activations, scratch, and the state of the optimizers made from it.
func (e *Engine) DeviceBytes() int { return e.bytes }

// ReadParams copies the parameters into dst.
func (e *Engine) ReadParams(dst []float32) error {
	return e.copyOut("cuda: ReadParams", dst, e.params)
}

// ReadGrads copies the gradients into dst.
func (e *Engine) ReadGrads(dst []float32) error {
	return e.copyOut("cuda: ReadGrads", dst, e.grads)
}

func (e *Engine) copyOut(what string, dst []float32, src cu.DevicePtr) error {
	if err := backend.CheckLen(what, len(dst), e.layout.Size); err != nil {
		return err
	}
	if e.closed {
		return errClosed
	}
	unlock := e.d.lock()
	defer unlock()
	return dtoh(dst, src)
}

// WriteParams replaces the parameters with src.
func (e *Engine) WriteParams(src []float32) error {
	if err := backend.CheckLen("cuda: WriteParams", len(src), e.layout.Size); err != nil {
		return err
	}
	if e.closed {
		return errClosed
	}
	unlock := e.d.lock()
	defer unlock()
	e.bf.stale = true
	return htod(e.params, src)
}

// ZeroGrad sets every gradient to zero. A device failure here surfaces at the next call
// that returns an error.
func (e *Engine) ZeroGrad() {
	if e.closed {
		return
	}
	unlock := e.d.lock()
	defer unlock()
	_ = e.zero(e.grads, e.layout.Size)
}

// Close frees the engine's device memory.
func (e *Engine) Close() error {
	if e.closed {
		return nil
	}
	unlock := e.d.lock()
	defer unlock()
	e.closed = true
	e.ready = false
	if err := cu.Synchronize(); err != nil {
		e.free()
		return fmt.Errorf("cuda: Close: %w", err)
	}
	e.free()
	return nil
}

// Forward runs the model on tokens and returns the mean cross-entropy of predicting
// targets; both hold batch·seqLen token ids, row-major by (sequence, position).
func (e *Engine) Forward(tokens, targets []int32) (float64, error) {
	e.ready = false
	if e.closed {
		return 0, errClosed
	}
	if err := backend.CheckBatch("cuda", tokens, targets, e.n, e.cfg.Vocab); err != nil {
		return 0, err
	}
	unlock := e.d.lock()
	defer unlock()
	copy(e.hostTokens, tokens)
	copy(e.hostTargets, targets)
	forward := e.forward
	if e.gpt2 {
		forward = e.forwardGPT2
	}
	if err := forward(); err != nil {
		return 0, fmt.Errorf("cuda: Forward: %w", err)
	}
	var sum float64
	for _, l := range e.lossHost {
		sum += l
	}
	e.ready = true
	return sum / float64(e.n), nil
}

// Backward adds the gradient of the last Forward's mean loss to the gradients. Each
// Forward allows one Backward.
func (e *Engine) Backward() error {
	if e.closed {
		return errClosed
	}
	if !e.ready {
		return errors.New("cuda: Backward needs a successful Forward since the last Backward")
	}
	e.ready = false
	unlock := e.d.lock()
	defer unlock()
	backward := e.backward
	if e.gpt2 {
		backward = e.backwardGPT2
	}
	if err := backward(); err != nil {
		return fmt.Errorf("cuda: Backward: %w", err)
	}
	return nil
}

// run is a sequence of device operations that stops at the first error.
type run struct {
	d   *device
	e   *Engine
	err error
}

// newRun starts a sequence of operations of the engine; in bf16 mode it first brings the
// bfloat16 copy of the parameters up to date.
func (e *Engine) newRun() *run {
	r := &run{d: e.d, e: e}
	if e.bf.on && e.bf.stale {
		r.launch("to_bf16", lin(e.layout.Size), blk, e.bf.params, e.params, int64(e.layout.Size))
		e.bf.stale = r.err != nil
	}
	return r
}

func (r *run) launch(name string, grid, block dim, args ...any) {
	if r.err == nil {
		r.err = r.d.launch(name, grid, block, args...)
	}
}

func (r *run) gemm(tA, tB bool, m, n, k int, alpha float32, a cu.DevicePtr, lda int, b cu.DevicePtr, ldb int, beta float32, c cu.DevicePtr, ldc int) {
	if r.e != nil && r.e.bf.on {
		r.gemmBatched(tA, tB, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1)
		return
	}
	if r.err == nil {
		r.err = r.d.gemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}
}

func (r *run) gemmBatched(tA, tB bool, m, n, k int, alpha float32, a cu.DevicePtr, lda, sa int, b cu.DevicePtr, ldb, sb int, beta float32, c cu.DevicePtr, ldc, sc, count int) {
	if r.e != nil && r.e.bf.on {
		ar, br := m, k // rows of A and B as stored
		if tA {
			ar = k
		}
		if tB {
			br = n
		}
		a = r.operand(a, (count-1)*sa+ar*lda, r.e.bf.a)
		b = r.operand(b, (count-1)*sb+br*ldb, r.e.bf.b)
		if r.err == nil {
			r.err = r.d.gemmBF16(tA, tB, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, count)
		}
		return
	}
	if r.err == nil {
		r.err = r.d.gemmBatched(tA, tB, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, count)
	}
}

// operand returns the bfloat16 form of the n float32 elements at p: its place in the
// bfloat16 copy of the parameters for a weight, else p rounded into scratch.
func (r *run) operand(p cu.DevicePtr, n int, scratch cu.DevicePtr) cu.DevicePtr {
	e := r.e
	if p >= e.params && p < e.params+cu.DevicePtr(4*e.layout.Size) {
		return e.bf.params + (p-e.params)/2
	}
	if n > e.bf.cap && r.err == nil {
		r.err = fmt.Errorf("bf16 operand of %d elements, scratch holds %d", n, e.bf.cap)
	}
	r.launch("to_bf16", lin(n), blk, scratch, p, int64(n))
	return scratch
}

func (r *run) do(f func() error) {
	if r.err == nil {
		r.err = f()
	}
}

// Thread-block shapes: rowWarps rows per block for the kernels with a warp per row.
const (
	threads  = 256
	rowWarps = threads / 32
)

func lin(n int) dim  { return dim{x: blocks(n, threads)} }
func rows(n int) dim { return dim{x: blocks(n, rowWarps)} }

var blk = dim{x: threads}

func (e *Engine) forward() error {
	n, c, f, v := e.n, e.cfg.Dim, e.cfg.Hidden, e.cfg.Vocab
	eps := float32(e.cfg.NormEps)
	s := &e.act
	r := e.newRun()
	r.do(func() error { return e.d.setTF32(e.prec == backend.TF32) })
	r.do(func() error { return htod(e.tokens, e.hostTokens) })
	r.do(func() error { return htod(e.targets, e.hostTargets) })
	r.launch("encoder_forward", lin(n*c), blk, s.resid[0], e.tokens, e.p.emb, n, c)
	for l, w := range e.p.layers {
		la := &s.layers[l]
		x, mid, out := s.resid[2*l], s.resid[2*l+1], s.resid[2*l+2]
		// attention: mid = x + Wo·Attn(RoPE(Wqkv·n1(x)))
		r.launch("rmsnorm_forward", rows(n), blk, la.n1Out, la.n1Rstd, x, w.n1, n, c, eps)
		r.gemm(false, true, n, 3*c, c, 1, la.n1Out, c, w.qkv, c, 0, la.qkv, 3*c)
		e.rope(r, la.qkv, e.sin)
		e.attentionForward(r, la)
		r.do(func() error { return dtod(mid, x, n*c) })
		r.gemm(false, true, n, c, c, 1, la.y, c, w.wo, c, 1, mid, c)
		// MLP: out = mid + W2·swiglu(W13·n2(mid))
		r.launch("rmsnorm_forward", rows(n), blk, la.n2Out, la.n2Rstd, mid, w.n2, n, c, eps)
		r.gemm(false, true, n, 2*f, c, 1, la.n2Out, c, w.w13, c, 0, la.gu, 2*f)
		r.launch("swiglu_forward", lin(n*f), blk, la.h, la.gu, n, f)
		r.do(func() error { return dtod(out, mid, n*c) })
		r.gemm(false, true, n, c, f, 1, la.h, f, w.w2, f, 1, out, c)
	}
	r.launch("rmsnorm_forward", rows(n), blk, s.nfOut, s.nfRstd, s.resid[2*e.cfg.Layers], e.p.norm, n, c, eps)
	r.gemm(false, true, n, v, c, 1, s.nfOut, c, e.p.head, c, 0, s.logits, v)
	r.launch("crossentropy_forward", dim{x: n}, dim{x: 512}, s.logits, e.losses, e.targets, n, v)
	r.do(func() error { return dtoh(e.lossHost, e.losses) })
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
	r.launch("permute", lin(e.n*e.cfg.Dim), blk, s.q, s.k, s.v, la.qkv, b, t, nh, d)
	r.gemmBatched(false, true, t, t, d, scale, s.q, d, td, s.k, d, td, 0, la.att, t, tt, bh)
	r.launch("softmax_causal", rows(bh*t), blk, la.att, bh*t, t)
	r.gemmBatched(false, false, t, d, t, 1, la.att, t, tt, s.v, d, td, 0, s.hy, d, td, bh)
	r.launch("unpermute", lin(e.n*e.cfg.Dim), blk, la.y, s.hy, b, t, nh, d, 0)
}

// attentionBackward writes the gradients of q, k and v into s.dqkv (overwriting it) from
// the gradient s.dy of the heads' outputs.
func (e *Engine) attentionBackward(r *run, la *layerActs) {
	s := &e.act
	b, t, nh, d := e.b, e.t, e.cfg.Heads, e.cfg.HeadDim()
	bh, td, tt := b*nh, t*d, t*t
	scale := float32(1 / math.Sqrt(float64(d)))
	r.launch("permute", lin(e.n*e.cfg.Dim), blk, s.q, s.k, s.v, la.qkv, b, t, nh, d)
	r.launch("unpermute", lin(e.n*e.cfg.Dim), blk, s.hy, s.dy, b, t, nh, d, 1)
	// dP = dY·Vᵀ, dV = Pᵀ·dY
	r.gemmBatched(false, true, t, t, d, 1, s.hy, d, td, s.v, d, td, 0, s.datt, t, tt, bh)
	r.gemmBatched(true, false, t, d, t, 1, la.att, t, tt, s.hy, d, td, 0, s.dv, d, td, bh)
	// dS = scale·P⊙(dP − rowsum(P⊙dP)), then dQ = dS·K, dK = dSᵀ·Q
	r.launch("softmax_causal_backward", rows(bh*t), blk, s.datt, la.att, bh*t, t, scale)
	r.gemmBatched(false, false, t, d, t, 1, s.datt, t, tt, s.k, d, td, 0, s.dq, d, td, bh)
	r.gemmBatched(true, false, t, d, t, 1, s.datt, t, tt, s.q, d, td, 0, s.dk, d, td, bh)
	r.launch("permute_backward", lin(e.n*e.cfg.Dim), blk, s.dqkv, s.dq, s.dk, s.dv, b, t, nh, d)
}

// rmsnormBackward adds the input gradient to dx and the weight gradient to dw.
func (e *Engine) rmsnormBackward(r *run, dx, dw, dout, x, w, rstd cu.DevicePtr) {
	n, c := e.n, e.cfg.Dim
	chunks := blocks(n, normRows)
	r.launch("rmsnorm_backward_dx", rows(n), blk, dx, dout, x, w, rstd, n, c)
	r.launch("rmsnorm_backward_dw_part", dim{x: blocks(c, threads), y: chunks}, blk, e.act.dwPart, dout, x, rstd, n, c, normRows)
	r.launch("sum_rows_add", lin(c), blk, dw, e.act.dwPart, chunks, c)
}

// headBackward is the backward pass of the loss and the LM head, shared by both
// architectures (for GPT-2 the head is wte, so this is the first of the two contributions
// to its gradient): the logits become their gradient, the head's gradient is added, the
// gradient at the final norm's output goes to dnorm, and dresid is cleared.
func (e *Engine) headBackward(r *run) {
	n, c, v := e.n, e.cfg.Dim, e.cfg.Vocab
	s := &e.act
	r.do(func() error { return e.d.setTF32(e.prec == backend.TF32) })
	r.launch("crossentropy_backward", lin(n*v), blk, s.logits, e.targets, n, v, float32(1/float64(n)))
	r.gemm(true, false, v, c, n, 1, s.logits, v, s.nfOut, c, 1, e.g.head, c)
	r.gemm(false, false, n, c, v, 1, s.logits, v, e.p.head, c, 0, s.dnorm, c)
	r.do(func() error { return e.zero(s.dresid, n*c) })
}

func (e *Engine) backward() error {
	n, c, f := e.n, e.cfg.Dim, e.cfg.Hidden
	s := &e.act
	r := e.newRun()
	e.headBackward(r)
	e.rmsnormBackward(r, s.dresid, e.g.norm, s.dnorm, s.resid[2*e.cfg.Layers], e.p.norm, s.nfRstd)
	for l := e.cfg.Layers - 1; l >= 0; l-- {
		w, gw, la := &e.p.layers[l], &e.g.layers[l], &s.layers[l]
		x, mid := s.resid[2*l], s.resid[2*l+1]
		// MLP
		r.gemm(true, false, c, f, n, 1, s.dresid, c, la.h, f, 1, gw.w2, f)
		r.gemm(false, false, n, f, c, 1, s.dresid, c, w.w2, f, 0, s.dh, f)
		r.launch("swiglu_backward", lin(n*f), blk, s.dgu, s.dh, la.gu, n, f)
		r.gemm(true, false, 2*f, c, n, 1, s.dgu, 2*f, la.n2Out, c, 1, gw.w13, c)
		r.gemm(false, false, n, c, 2*f, 1, s.dgu, 2*f, w.w13, c, 0, s.dnorm, c)
		e.rmsnormBackward(r, s.dresid, gw.n2, s.dnorm, mid, w.n2, la.n2Rstd)
		// attention
		r.gemm(true, false, c, c, n, 1, s.dresid, c, la.y, c, 1, gw.wo, c)
		r.gemm(false, false, n, c, c, 1, s.dresid, c, w.wo, c, 0, s.dy, c)
		e.attentionBackward(r, la)
		e.rope(r, s.dqkv, e.nsin)
		r.gemm(true, false, 3*c, c, n, 1, s.dqkv, 3*c, la.n1Out, c, 1, gw.qkv, c)
		r.gemm(false, false, n, c, 3*c, 1, s.dqkv, 3*c, w.qkv, c, 0, s.dnorm, c)
		e.rmsnormBackward(r, s.dresid, gw.n1, s.dnorm, x, w.n1, la.n1Rstd)
	}
	r.launch("encoder_backward", lin(c*embBuckets), blk, e.g.emb, s.dresid, e.tokens, n, c, embBuckets)
	r.do(synchronize)
	return r.err
}

// synchronize waits for the device's work; an asynchronous failure of a kernel surfaces
// here.
func synchronize() error {
	if err := cu.Synchronize(); err != nil {
		return fmt.Errorf("synchronizing: %w", err)
	}
	return nil
}
