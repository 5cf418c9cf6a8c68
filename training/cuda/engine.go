//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"os"
	"sync"

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
// memory. Its methods must not be called concurrently. Separate engines share the GPU and
// run at once, each on a stream and cuBLAS handle of its own (stream.go), each locking only
// its own work.
type Engine struct {
	st     *stream
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
	embIdx          cu.DevicePtr // (3n+2) int32: embedIndex of the tokens (FastEnv "embed")
	embSeen         []int32      // (vocabulary) embedIndex's scratch, zero between calls
	losses          cu.DevicePtr // (n) float64
	lossHost        []float64    // (n) pinned: Forward's losses, copied back
	pin             staging      // the pinned buffers tokens go through (pinned.go)
	queue           lossQueue    // the losses of micro-batches accumulated (accumulate.go)
	queued          bool         // the pass running is an Accumulate's: its losses stay queued
	capturing       bool         // the passes running are being captured (graph.go)
	graph           microGraph   // Accumulate's micro-batch graph (FastEnv "graph")

	allocs []cu.DevicePtr
	ready  bool // a Forward has run whose activations Backward may use
	closed bool
	bytes  int // device memory held

	counting bool // NeedBytes: mk adds up sizes and allocates nothing

	bf      bf16
	fast    fastPaths // the fast paths on (FastEnv)
	ceFused bool      // the last Forward ran the fused cross-entropy's loss kernel
	// logits16: the last Forward's head product wrote the logits in bfloat16 (FastEnv
	// "logits16", crossentropy.go).
	logits16 bool
	// copies16: the engine holds the bfloat16 copies of the round path; roundFused: the
	// last Forward's producers wrote them.
	copies16, roundFused bool
	// flash: the engine runs attention on the flash path (flash.go), fixed when it is made.
	flash bool
	// roundPasses counts the rounding passes of activation operands issued (tests: the
	// fast paths leave none in a LLaMA micro-batch).
	roundPasses int

	prof *profiler // the timing mode (ProfileEnv), nil when off
}

var _ backend.Engine = (*Engine)(nil)

// fastFromEnv is FastEnv's setting, read once per process.
var fastFromEnv = sync.OnceValues(func() (fastPaths, error) { return parseFast(os.Getenv(FastEnv)) })
var _ backend.DeviceOptimizers = (*Engine)(nil)

// init registers a backend of the catalog for each precision of the family, and what its
// trials need of a GPU's memory, by which a worker admits them.
func init() {
	for _, b := range backend.Family(family) {
		backend.Register(b.Name, func(cfg model.Config, batch, seqLen int) (backend.Engine, error) {
			fast, err := trialPaths(b.Name, os.Getenv(FastEnv))
			if err != nil {
				return nil, err
			}
			e, err := newNamedEngine(b.Name, cfg, batch, seqLen, b.Precision, fast)
			if err != nil {
				return nil, err
			}
			return e, nil
		})
		backend.RegisterNeed(b.Name, func(cfg model.Config, batch, seqLen int) int64 {
			// the paths the trial's engine is made with: its backend's (a flash trial
			// stores no attention probabilities), not those of the environment alone
			fast, err := trialPaths(b.Name, os.Getenv(FastEnv))
			if err != nil {
				return NeedBytes(cfg, batch, seqLen, b.Precision) // the engine refuses the same error
			}
			return needBytes(cfg, batch, seqLen, b.Precision, fast)
		})
	}
	backend.RegisterFault(isStickyError)
}

// stickyErrors are the driver's results that leave the context unusable, so that every
// later call fails the same way (CUDA's programming guide: the process must end).
var stickyErrors = []error{
	cu.IllegalAddress, cu.LaunchFailed, cu.EccUncorrectable, cu.IllegalInstruction,
	cu.MisalignedAddress, cu.HardwareStackError, cu.Assert, cu.InvalidAddressSpace, cu.InvalidPc,
	cu.LaunchTimeout, cu.ContextIsDestroyed,
}

// isStickyError reports whether err holds one of stickyErrors: a device fault
// (backend.IsDeviceFault) that ends the worker process.
func isStickyError(err error) bool {
	for _, s := range stickyErrors {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// New returns an engine for cfg on micro-batches of batch sequences of seqLen tokens
// (seqLen ≤ cfg.Context) on GPU 0, whose matrix products have precision p (one of the
// family's: FP32, TF32 or BF16), with the fast paths FastEnv names, every one of them
// allowed: the engine of this package's tests and benchmarks. A trial's engine comes from
// the backend registry, whose arithmetic is its backend's alone (trialPaths). Its
// parameters are zero until WriteParams.
func New(cfg model.Config, batch, seqLen int, p backend.Precision) (*Engine, error) {
	fast, err := fastFromEnv()
	if err != nil {
		return nil, err
	}
	return newEngine(cfg, batch, seqLen, p, fast)
}

// newEngine is New with the fast paths given: the engine may later run any subset of them.
func newEngine(cfg model.Config, batch, seqLen int, p backend.Precision, fast fastPaths) (*Engine, error) {
	name, err := backend.Resolve(family, p)
	if err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	return newNamedEngine(name, cfg, batch, seqLen, p, fast)
}

// newNamedEngine is newEngine as the catalog's backend called name.
func newNamedEngine(name string, cfg model.Config, batch, seqLen int, p backend.Precision, fast fastPaths) (*Engine, error) {
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
	if k := d.missing(fastKernels(fast)); k != "" {
		return nil, fmt.Errorf("cuda: fast paths %s (%s) need kernel %s, which the loaded PTX lacks: build kernels.cu (docs/gpu.md) and set %s", fast, FastEnv, k, PTXEnv)
	}
	e := &Engine{prec: p, name: name, cfg: cfg, layout: cfg.Layout(), b: batch, t: seqLen, n: batch * seqLen, gpt2: cfg.Arch == model.GPT2,
		bf: bf16{on: p == backend.BF16, stale: true}, fast: fast}
	deviceWide.Lock()
	defer deviceWide.Unlock()
	st, err := d.newStream()
	if err != nil {
		defer d.bind()()
		return nil, e.oom(err)
	}
	e.st = st
	unlock := st.lock()
	defer unlock()
	err = e.allocate()
	if err == nil {
		err = e.allocHost()
	}
	if err != nil {
		_ = st.sync() // the clearing of what was allocated may be in flight
		e.free()
		err = e.oom(err)
		_ = st.close()
		return nil, err
	}
	e.startProfile()
	return e, nil
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
	unlock := e.st.lock()
	defer unlock()
	return dtoh(e.st, dst, src)
}

// WriteParams replaces the parameters with src.
func (e *Engine) WriteParams(src []float32) error {
	if err := backend.CheckLen("cuda: WriteParams", len(src), e.layout.Size); err != nil {
		return err
	}
	if e.closed {
		return errClosed
	}
	unlock := e.st.lock()
	defer unlock()
	e.bf.stale = true
	return htod(e.st, e.params, src)
}

// ZeroGrad sets every gradient to zero and forgets the losses accumulated and not read. A
// device failure here surfaces at the next call that returns an error.
func (e *Engine) ZeroGrad() {
	if e.closed {
		return
	}
	unlock := e.st.lock()
	defer unlock()
	e.queue.reset()
	defer e.call(PhaseUpdate, Optimizer, false)()
	_ = e.st.zero(e.grads, e.layout.Size)
}

// Close frees the engine's device memory, stream and cuBLAS handle.
func (e *Engine) Close() error {
	if e.closed {
		return nil
	}
	unlock := e.st.lock()
	defer unlock()
	deviceWide.Lock()
	defer deviceWide.Unlock()
	e.closed = true
	e.ready = false
	if err := e.st.sync(); err != nil {
		e.free()
		_ = e.st.close()
		return fmt.Errorf("cuda: Close: %w", err)
	}
	e.endProfile()
	e.free()
	if err := e.st.close(); err != nil {
		return fmt.Errorf("cuda: Close: %w", err)
	}
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
	unlock := e.st.lock()
	defer unlock()
	if err := e.stage(tokens, targets); err != nil {
		return 0, fmt.Errorf("cuda: Forward: %w", err)
	}
	if err := e.forwardPass(); err != nil {
		return 0, fmt.Errorf("cuda: Forward: %w", err)
	}
	e.ready = true
	return meanRows(e.lossHost), nil
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
	unlock := e.st.lock()
	defer unlock()
	if err := e.backwardPass(); err != nil {
		return fmt.Errorf("cuda: Backward: %w", err)
	}
	if err := e.st.sync(); err != nil {
		return fmt.Errorf("cuda: Backward: %w", err)
	}
	return nil
}
