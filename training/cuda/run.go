//go:build cuda

package cuda

import (
	"fmt"

	"gorgonia.org/cu"

	"github.com/sfsweep/sfsweep/training/backend"
)

// run is a sequence of device operations that stops at the first error.
type run struct {
	st  *stream
	e   *Engine
	err error

	region   Category // in the timing mode, what the operations are charged to while inRegion
	inRegion bool
	// pre maps a float32 operand to the bfloat16 copy its producer wrote, which a product
	// takes instead of rounding it (rounded, release).
	pre map[cu.DevicePtr]cu.DevicePtr
}

// newRun starts a sequence of operations of the engine; in bf16 mode it first brings the
// bfloat16 copy of the parameters up to date.
func (e *Engine) newRun() *run {
	r := &run{st: e.st, e: e}
	if e.bf.on && e.bf.stale {
		// remade once per step, after the optimizer changed the parameters
		r.charge(Optimizer)
		r.do(func() error {
			return r.st.launch("to_bf16", lin(e.layout.Size), blk, e.bf.params, e.params, int64(e.layout.Size))
		})
		e.bf.stale = r.err != nil
	}
	return r
}

// forwardRun starts a forward pass, on the micro-batch staged on the device (stage): the
// math mode of the engine's precision.
func (e *Engine) forwardRun() *run {
	r := e.newRun()
	r.do(func() error { return e.st.setTF32(e.prec == backend.TF32) })
	return r
}

func (r *run) launch(name string, grid, block dim, args ...any) {
	r.charge(categoryOf(name))
	if r.err == nil {
		r.err = r.st.launch(name, grid, block, args...)
	}
}

func (r *run) gemm(tA, tB bool, m, n, k int, alpha float32, a cu.DevicePtr, lda int, b cu.DevicePtr, ldb int, beta float32, c cu.DevicePtr, ldc int) {
	if r.e != nil && r.e.bf.on {
		r.gemmBatched(tA, tB, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1)
		return
	}
	r.charge(GEMM)
	if r.err == nil {
		r.err = r.st.gemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}
}

func (r *run) gemmBatched(tA, tB bool, m, n, k int, alpha float32, a cu.DevicePtr, lda, sa int, b cu.DevicePtr, ldb, sb int, beta float32, c cu.DevicePtr, ldc, sc, count int) {
	if r.e != nil && r.e.bf.on {
		a, b = r.operands(tA, tB, m, n, k, a, lda, sa, b, ldb, sb, count)
		r.charge(GEMM)
		if r.err != nil {
			return
		}
		if r.e.fast.has(fastLt) {
			p := ltProduct{tA: tA, tB: tB, m: m, n: n, k: k, lda: lda, ldb: ldb, ldc: ldc, ldd: ldc, sa: sa, sb: sb, sc: sc, sd: sc, count: count}
			r.err = r.st.gemmLt(p, alpha, a, b, beta, c, c)
			return
		}
		r.err = r.st.gemmBF16(tA, tB, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, count)
		return
	}
	r.charge(GEMM)
	if r.err == nil {
		r.err = r.st.gemmBatched(tA, tB, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, count)
	}
}

// gemmAdd is d = op(A)·op(B) + x, the residual x and d m×n with leading dimension n: on
// the lt path in bf16 mode one cuBLASLt product reads x where it is; otherwise x is copied
// into d and the product adds itself to it.
func (r *run) gemmAdd(tA, tB bool, m, n, k int, a cu.DevicePtr, lda int, b cu.DevicePtr, ldb int, x, d cu.DevicePtr) {
	e := r.e
	if !e.bf.on || !e.fast.has(fastLt) {
		r.doAs(Elementwise, func() error { return e.st.dtod(d, x, m*n) })
		r.gemm(tA, tB, m, n, k, 1, a, lda, b, ldb, 1, d, n)
		return
	}
	a, b = r.operands(tA, tB, m, n, k, a, lda, 0, b, ldb, 0, 1)
	r.charge(GEMM)
	if r.err == nil {
		p := ltProduct{tA: tA, tB: tB, m: m, n: n, k: k, lda: lda, ldb: ldb, ldc: n, ldd: n, count: 1}
		r.err = r.st.gemmLt(p, 1, a, b, 1, x, d)
	}
}

// gemmOut16 is d = op(A)·op(B) written in bfloat16 (m×n, leading dimension n), on
// cuBLASLt; bf16 mode only.
func (r *run) gemmOut16(tA, tB bool, m, n, k int, a cu.DevicePtr, lda int, b cu.DevicePtr, ldb int, d cu.DevicePtr) {
	a, b = r.operands(tA, tB, m, n, k, a, lda, 0, b, ldb, 0, 1)
	r.charge(GEMM)
	if r.err == nil {
		p := ltProduct{tA: tA, tB: tB, m: m, n: n, k: k, lda: lda, ldb: ldb, ldc: n, ldd: n, count: 1, cType: ltBF16}
		r.err = r.st.gemmLt(p, 1, a, b, 0, d, d)
	}
}

// operands returns the bfloat16 forms of a product's operands A and B (count matrices at
// strides sa and sb, op(A) m×k and op(B) k×n), rounding them into the scratch buffers
// where no copy is at hand.
func (r *run) operands(tA, tB bool, m, n, k int, a cu.DevicePtr, lda, sa int, b cu.DevicePtr, ldb, sb, count int) (cu.DevicePtr, cu.DevicePtr) {
	ar, br := m, k // rows of A and B as stored
	if tA {
		ar = k
	}
	if tB {
		br = n
	}
	return r.operand(a, (count-1)*sa+ar*lda, r.e.bf.a), r.operand(b, (count-1)*sb+br*ldb, r.e.bf.b)
}

// operand returns the bfloat16 form of the n float32 elements at p: its place in the
// bfloat16 copy of the parameters for a weight, else p rounded into scratch.
func (r *run) operand(p cu.DevicePtr, n int, scratch cu.DevicePtr) cu.DevicePtr {
	e := r.e
	if p >= e.params && p < e.params+cu.DevicePtr(4*e.layout.Size) {
		return e.bf.params + (p-e.params)/2
	}
	if q, ok := r.pre[p]; ok {
		return q
	}
	if n > e.bf.cap && r.err == nil {
		r.err = fmt.Errorf("bf16 operand of %d elements, scratch holds %d", n, e.bf.cap)
	}
	for src, q := range r.pre {
		if q == scratch && r.err == nil {
			r.err = fmt.Errorf("bf16 scratch still holds the operand of %#x", uint64(src))
		}
	}
	r.launch("to_bf16", lin(n), blk, scratch, p, int64(n))
	e.roundPasses++
	return scratch
}

// rounded records that q holds the bfloat16 form of the float32 operand p, written by p's
// producer: products take q for p until release(p).
func (r *run) rounded(p, q cu.DevicePtr) {
	if r.pre == nil {
		r.pre = map[cu.DevicePtr]cu.DevicePtr{}
	}
	r.pre[p] = q
}

// release ends rounded(p): q may be overwritten, and p is rounded again where a product
// reads it.
func (r *run) release(p cu.DevicePtr) { delete(r.pre, p) }

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

// embBuckets is the number of threads per column of the embedding-gradient scatter.
const embBuckets = 32

// embedOn reports whether the embed path is on: the engine was made with it (its index
// buffers exist) and runs it.
func (e *Engine) embedOn() bool { return e.fast.has(fastEmbed) && e.embIdx != 0 }

// embeddingBackward adds dresid, the gradient at the embeddings' output, into the
// embedding's gradient: with the embed path, a block per token of the micro-batch over the
// rows the host listed (encoder_backward_rows; its grid is fixed, so a captured graph
// serves any micro-batch); else a thread per column and bucket of tokens, each scanning
// every row. The same additions in the same order either way.
func (e *Engine) embeddingBackward(r *run, dresid cu.DevicePtr) {
	n, c := e.n, e.cfg.Dim
	if e.embedOn() {
		// a thread per column up to 1,024: a frequent token's rows are summed in sequence
		r.launch("encoder_backward_rows", dim{x: n}, dim{x: normThreads(c)}, e.g.emb, dresid, e.embIdx, n, c)
		return
	}
	r.launch("encoder_backward", lin(c*embBuckets), blk, e.g.emb, dresid, e.tokens, n, c, embBuckets)
}
