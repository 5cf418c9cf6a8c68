//go:build cuda

package cuda

/*
#cgo LDFLAGS: -lcublas -lcuda
#include <cuda.h>
#include <cublas_v2.h>

// gorgonia.org/cu/blas binds a handle to no stream and wraps neither the math mode, the
// workspace nor the strided-batched GEMMs, so the engine calls cuBLAS here.

static int sfsweepBlasCreate(cublasHandle_t *h) { return (int)cublasCreate(h); }

static int sfsweepBlasDestroy(cublasHandle_t h) { return (int)cublasDestroy(h); }

// sfsweepBlasBind sends the handle's work to stream s, with the given workspace: after
// cublasSetStream, which resets the workspace to the library's shared pool.
static int sfsweepBlasBind(cublasHandle_t h, void *s, unsigned long long work, size_t bytes) {
	cublasStatus_t st = cublasSetStream(h, (cudaStream_t)s);
	if (st != CUBLAS_STATUS_SUCCESS)
		return (int)st;
	return (int)cublasSetWorkspace(h, (void *)work, bytes);
}

static int sfsweepSetTF32(cublasHandle_t h, int on) {
	return (int)cublasSetMathMode(h, on ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
}

static int sfsweepSgemm(cublasHandle_t h, int ta, int tb, int m, int n, int k, float alpha,
		unsigned long long a, int lda, unsigned long long b, int ldb, float beta,
		unsigned long long c, int ldc) {
	return (int)cublasSgemm(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
		m, n, k, &alpha, (const float *)a, lda, (const float *)b, ldb, &beta, (float *)c, ldc);
}

static int sfsweepSgemmStridedBatched(cublasHandle_t h, int ta, int tb, int m, int n, int k, float alpha,
		unsigned long long a, int lda, long long sa, unsigned long long b, int ldb, long long sb,
		float beta, unsigned long long c, int ldc, long long sc, int count) {
	return (int)cublasSgemmStridedBatched(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
		tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &alpha, (const float *)a, lda, sa,
		(const float *)b, ldb, sb, &beta, (float *)c, ldc, sc, count);
}

// sfsweepGemmBF16 is the mixed-precision GEMM (count = 1) or strided-batched GEMM: A and B
// bfloat16, C float32, products accumulated in float32 on the tensor cores.
static int sfsweepGemmBF16(cublasHandle_t h, int ta, int tb, int m, int n, int k, float alpha,
		unsigned long long a, int lda, long long sa, unsigned long long b, int ldb, long long sb,
		float beta, unsigned long long c, int ldc, long long sc, int count) {
	cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
	if (count == 1)
		return (int)cublasGemmEx(h, opa, opb, m, n, k, &alpha, (const void *)a,
			CUDA_R_16BF, lda, (const void *)b, CUDA_R_16BF, ldb, &beta, (void *)c, CUDA_R_32F, ldc,
			CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP);
	return (int)cublasGemmStridedBatchedEx(h, opa, opb, m, n, k, &alpha,
		(const void *)a, CUDA_R_16BF, lda, sa, (const void *)b, CUDA_R_16BF, ldb, sb, &beta,
		(void *)c, CUDA_R_32F, ldc, sc, count, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP);
}
*/
import "C"

import (
	"fmt"

	"gorgonia.org/cu"
	cublas "gorgonia.org/cu/blas"
)

// The engine's matrix products, on cuBLAS with a handle per engine.
//
// Why a trial's products are the same bits alone or beside others: cuBLAS promises
// bitwise-identical results from run to run on GPUs of one architecture and SM count with
// one library version, but only while a single stream is active; with several concurrent
// streams it may pick other internal implementations, because the routines of streams
// running in parallel then share the library's default workspace pool. It names as the
// remedies a handle per stream and a workspace per stream set with cublasSetWorkspace.
// Each engine has both: its handle sees only its own stream and its own workspace of a
// fixed size, with the same configuration (pointer mode host, the math mode of its
// precision, the default atomics mode: off) as every other engine's handle. What cuBLAS
// chooses for a product then depends on the product's shape, the GPU and that handle's
// fixed state, none of which another engine changes; and the engine's products run in
// stream order, each after the kernel that wrote its operands.

// handle is an engine's cuBLAS handle, bound to its stream with a workspace of its own.
type handle struct {
	h    C.cublasHandle_t
	work cu.DevicePtr // the workspace, size bytes
	size int
	tf32 bool // the math mode currently set on the handle
}

// workspaceBytes is the workspace of a handle on a GPU of compute capability major.x: what
// cuBLAS recommends for cublasSetWorkspace, 32 MiB on Hopper and later, 4 MiB before
// (training/backend.WorkspaceBytes reserves it per trial).
func workspaceBytes(major int) int {
	if major >= 9 {
		return 32 << 20
	}
	return 4 << 20
}

// newHandle creates a handle whose work goes to stream s, with a workspace of size bytes.
// The context must be current.
func newHandle(s cu.Stream, size int) (handle, error) {
	var h C.cublasHandle_t
	if st := C.sfsweepBlasCreate(&h); st != 0 {
		return handle{}, fmt.Errorf("cuda: cublasCreate: %v", cublas.Status(st))
	}
	work, err := alloc(size, 1)
	if err != nil {
		C.sfsweepBlasDestroy(h)
		return handle{}, fmt.Errorf("cuda: cuBLAS workspace: %w", err)
	}
	cs := streamHandle(s)
	if st := C.sfsweepBlasBind(h, cs, C.ulonglong(work), C.size_t(size)); st != 0 {
		C.sfsweepBlasDestroy(h)
		_ = cu.MemFree(work)
		return handle{}, fmt.Errorf("cuda: binding the cuBLAS handle to its stream: %v", cublas.Status(st))
	}
	return handle{h: h, work: work, size: size}, nil
}

// destroy releases the handle, then its workspace.
func (b *handle) destroy() error {
	var err error
	if st := C.sfsweepBlasDestroy(b.h); st != 0 {
		err = fmt.Errorf("cuda: cublasDestroy: %v", cublas.Status(st))
	}
	if ferr := cu.MemFree(b.work); err == nil && ferr != nil {
		err = fmt.Errorf("cuda: freeing the cuBLAS workspace: %w", ferr)
	}
	b.h, b.work = nil, 0
	return err
}

// setTF32 sets the math mode of the stream's cuBLAS handle.
func (st *stream) setTF32(on bool) error {
	if st.blas.tf32 == on {
		return nil
	}
	if s := C.sfsweepSetTF32(st.blas.h, cbool(on)); s != 0 {
		return fmt.Errorf("cuda: cublasSetMathMode: %v", cublas.Status(s))
	}
	st.blas.tf32 = on
	return nil
}

// gemm is training/gemm.Gemm on the device: C = alpha·op(A)·op(B) + beta·C with row-major
// m×n C, op(A) m×k and op(B) k×n. cuBLAS is column-major, so it computes Cᵀ = op(B)ᵀ·op(A)ᵀ.
func (st *stream) gemm(tA, tB bool, m, n, k int, alpha float32, a cu.DevicePtr, lda int, b cu.DevicePtr, ldb int, beta float32, c cu.DevicePtr, ldc int) error {
	s := C.sfsweepSgemm(st.blas.h, cbool(tB), cbool(tA), C.int(n), C.int(m), C.int(k), C.float(alpha),
		C.ulonglong(b), C.int(ldb), C.ulonglong(a), C.int(lda), C.float(beta), C.ulonglong(c), C.int(ldc))
	if s != 0 {
		return fmt.Errorf("cuda: cublasSgemm(%v, %v, m=%d, n=%d, k=%d): %v", tA, tB, m, n, k, cublas.Status(s))
	}
	return nil
}

// gemmBF16 is gemmBatched (gemm for count = 1) on bfloat16 operands a and b: C stays
// float32 and the products accumulate in float32 on the tensor cores.
func (st *stream) gemmBF16(tA, tB bool, m, n, k int, alpha float32, a cu.DevicePtr, lda, sa int, b cu.DevicePtr, ldb, sb int, beta float32, c cu.DevicePtr, ldc, sc, count int) error {
	s := C.sfsweepGemmBF16(st.blas.h, cbool(tB), cbool(tA), C.int(n), C.int(m), C.int(k), C.float(alpha),
		C.ulonglong(b), C.int(ldb), C.longlong(sb), C.ulonglong(a), C.int(lda), C.longlong(sa),
		C.float(beta), C.ulonglong(c), C.int(ldc), C.longlong(sc), C.int(count))
	if s != 0 {
		return fmt.Errorf("cuda: cublasGemmEx bf16 (%v, %v, m=%d, n=%d, k=%d, count=%d): %v", tA, tB, m, n, k, count, cublas.Status(s))
	}
	return nil
}

// gemmBatched is gemm over count matrices at strides sa, sb, sc (in elements).
func (st *stream) gemmBatched(tA, tB bool, m, n, k int, alpha float32, a cu.DevicePtr, lda, sa int, b cu.DevicePtr, ldb, sb int, beta float32, c cu.DevicePtr, ldc, sc, count int) error {
	s := C.sfsweepSgemmStridedBatched(st.blas.h, cbool(tB), cbool(tA), C.int(n), C.int(m), C.int(k), C.float(alpha),
		C.ulonglong(b), C.int(ldb), C.longlong(sb), C.ulonglong(a), C.int(lda), C.longlong(sa),
		C.float(beta), C.ulonglong(c), C.int(ldc), C.longlong(sc), C.int(count))
	if s != 0 {
		return fmt.Errorf("cuda: cublasSgemmStridedBatched(%v, %v, m=%d, n=%d, k=%d, count=%d): %v", tA, tB, m, n, k, count, cublas.Status(s))
	}
	return nil
}

func cbool(t bool) C.int {
	if t {
		return 1
	}
	return 0
}
