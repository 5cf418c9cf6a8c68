//go:build cuda

package cuda

/*
#cgo LDFLAGS: -lcublasLt
#include <stdint.h>
#include <cublasLt.h>

// gorgonia.org/cu has no binding of cuBLASLt, so the engine calls it here.

// sfsweepLtPlan is a product's descriptors and the algorithm chosen for it.
typedef struct {
	cublasLtMatmulDesc_t op;
	cublasLtMatrixLayout_t l[4]; // A, B, C, D
	cublasLtMatmulAlgo_t algo;
} sfsweepLtPlan;

static int sfsweepLtCreate(cublasLtHandle_t *h) { return (int)cublasLtCreate(h); }

static int sfsweepLtDestroy(cublasLtHandle_t h) { return (int)cublasLtDestroy(h); }

static void sfsweepLtPlanFree(sfsweepLtPlan *p) {
	for (int i = 0; i < 4; i++)
		if (p->l[i]) cublasLtMatrixLayoutDestroy(p->l[i]);
	if (p->op) cublasLtMatmulDescDestroy(p->op);
}

// sfsweepLtPlanMake makes the descriptors of a column-major product (lay: rows, columns,
// leading dimension and batch stride of A, B, C and D; types: 1 for bfloat16, 0 for
// float32) and asks the heuristic for its best algorithm within work bytes of workspace,
// told the pointers' alignments (align: A, B, C, D). On failure the plan holds what was
// made, for sfsweepLtPlanFree.
static int sfsweepLtPlanMake(cublasLtHandle_t h, sfsweepLtPlan *p, int ta, int tb,
		const int *type, const long long *lay, int count, const unsigned *align, size_t work) {
	cublasStatus_t st = cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
	if (st) return (int)st;
	cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
	if ((st = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa))) return (int)st;
	if ((st = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb))) return (int)st;
	for (int i = 0; i < 4; i++) {
		const long long *v = lay + 4 * i;
		if ((st = cublasLtMatrixLayoutCreate(&p->l[i], type[i] ? CUDA_R_16BF : CUDA_R_32F,
				(uint64_t)v[0], (uint64_t)v[1], (int64_t)v[2]))) return (int)st;
		if (count > 1) {
			int32_t n = count;
			int64_t s = v[3];
			if ((st = cublasLtMatrixLayoutSetAttribute(p->l[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &n, sizeof n))) return (int)st;
			if ((st = cublasLtMatrixLayoutSetAttribute(p->l[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &s, sizeof s))) return (int)st;
		}
	}
	cublasLtMatmulPreference_t pref;
	if ((st = cublasLtMatmulPreferenceCreate(&pref))) return (int)st;
	uint64_t ws = work;
	st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
	const cublasLtMatmulPreferenceAttributes_t attr[4] = {
		CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
		CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
	for (int i = 0; i < 4 && !st; i++) {
		uint32_t a = align[i];
		st = cublasLtMatmulPreferenceSetAttribute(pref, attr[i], &a, sizeof a);
	}
	cublasLtMatmulHeuristicResult_t res;
	int found = 0;
	if (!st)
		st = cublasLtMatmulAlgoGetHeuristic(h, p->op, p->l[0], p->l[1], p->l[2], p->l[3], pref, 1, &res, &found);
	cublasLtMatmulPreferenceDestroy(pref);
	if (st) return (int)st;
	if (found < 1 || res.state != CUBLAS_STATUS_SUCCESS) return (int)CUBLAS_STATUS_NOT_SUPPORTED;
	p->algo = res.algo;
	return 0;
}

static int sfsweepLtMatmul(cublasLtHandle_t h, const sfsweepLtPlan *p, float alpha, unsigned long long a,
		unsigned long long b, float beta, unsigned long long c, unsigned long long d,
		unsigned long long work, size_t bytes, void *s) {
	return (int)cublasLtMatmul(h, p->op, &alpha, (const void *)a, p->l[0], (const void *)b, p->l[1], &beta,
		(const void *)c, p->l[2], (void *)d, p->l[3], &p->algo, (void *)work, bytes, (cudaStream_t)s);
}
*/
import "C"

import (
	"fmt"

	"gorgonia.org/cu"
	cublas "gorgonia.org/cu/blas"
)

// The lt path (FastEnv "lt"): in bf16 mode the engine's products run on cuBLASLt instead
// of cublasGemmEx. cuBLASLt takes a C apart from D, so a residual added to a product's
// output is read where it is, instead of being copied into the output first (run.gemmAdd).
// Each engine has a cuBLASLt handle of its own and uses its cuBLAS handle's workspace: both
// run on the engine's stream, one product after another. The algorithm of a product is the
// heuristic's first for its shape, types and pointer alignments (ltKey), asked once and kept
// for the engine's life, so a product runs the same algorithm at every step, and cuBLAS's
// promise of the same bits run to run on one GPU and library holds for it as for GemmEx.

// ltHandle is an engine's cuBLASLt handle and the plans of the products it ran.
type ltHandle struct {
	h     C.cublasLtHandle_t
	plans map[ltKey]*C.sfsweepLtPlan
}

// newLt creates a cuBLASLt handle. The context must be current.
func newLt() (ltHandle, error) {
	var h C.cublasLtHandle_t
	if st := C.sfsweepLtCreate(&h); st != 0 {
		return ltHandle{}, fmt.Errorf("cuda: cublasLtCreate: %v", cublas.Status(st))
	}
	return ltHandle{h: h, plans: map[ltKey]*C.sfsweepLtPlan{}}, nil
}

// destroy frees the plans and the handle.
func (l *ltHandle) destroy() error {
	if l.h == nil {
		return nil
	}
	for _, p := range l.plans {
		C.sfsweepLtPlanFree(p)
	}
	l.plans = nil
	st := C.sfsweepLtDestroy(l.h)
	l.h = nil
	if st != 0 {
		return fmt.Errorf("cuda: cublasLtDestroy: %v", cublas.Status(st))
	}
	return nil
}

// plan returns the plan of key, making it on first use: host work only (descriptors and
// the heuristic's answer), nothing on the stream.
func (l *ltHandle) plan(key ltKey, work int) (*C.sfsweepLtPlan, error) {
	if p, ok := l.plans[key]; ok {
		return p, nil
	}
	cm := key.p.columnMajor()
	ct := C.int(key.p.cType)
	types := [4]C.int{C.int(ltBF16), C.int(ltBF16), ct, ct}
	var lay [16]C.longlong
	for i, m := range []ltLayout{cm.a, cm.b, cm.c, cm.d} {
		lay[4*i], lay[4*i+1], lay[4*i+2], lay[4*i+3] = C.longlong(m.rows), C.longlong(m.cols), C.longlong(m.ld), C.longlong(m.stride)
	}
	align := [4]C.uint{C.uint(key.alignB), C.uint(key.alignA), C.uint(key.alignC), C.uint(key.alignD)} // cuBLASLt's A is our B
	p := new(C.sfsweepLtPlan)
	if st := C.sfsweepLtPlanMake(l.h, p, cbool(cm.transA), cbool(cm.transB), &types[0], &lay[0], C.int(key.p.count), &align[0], C.size_t(work)); st != 0 {
		C.sfsweepLtPlanFree(p)
		return nil, fmt.Errorf("cuda: cuBLASLt plan of %+v: %v", key, cublas.Status(st))
	}
	l.plans[key] = p
	return p, nil
}

// gemmLt runs p on the stream: D = alpha·op(A)·op(B) + beta·C, A and B bfloat16.
func (st *stream) gemmLt(p ltProduct, alpha float32, a, b cu.DevicePtr, beta float32, c, d cu.DevicePtr) error {
	plan, err := st.lt.plan(p.key(uint64(a), uint64(b), uint64(c), uint64(d)), st.blas.size)
	if err != nil {
		return err
	}
	s := C.sfsweepLtMatmul(st.lt.h, plan, C.float(alpha), C.ulonglong(b), C.ulonglong(a), C.float(beta),
		C.ulonglong(c), C.ulonglong(d), C.ulonglong(st.blas.work), C.size_t(st.blas.size), streamHandle(st.s))
	if s != 0 {
		return fmt.Errorf("cuda: cublasLtMatmul(%v, %v, m=%d, n=%d, k=%d, count=%d): %v", p.tA, p.tB, p.m, p.n, p.k, p.count, cublas.Status(s))
	}
	return nil
}
