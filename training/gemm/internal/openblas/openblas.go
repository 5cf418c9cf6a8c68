//go:build openblas && cgo

// Package openblas binds OpenBLAS's cblas_sgemm for the benchmarks of package gemm, which
// compare with it when built with -tags openblas (and cgo), for example
//
//	apt-get install -y libopenblas-dev
//	OPENBLAS_CORETYPE=SkylakeX OPENBLAS_NUM_THREADS=2 \
//		go test ./training/gemm -tags openblas -run '^$' -bench . -count 3
//
// OPENBLAS_CORETYPE=SkylakeX selects OpenBLAS's AVX-512 kernels on machines whose
// virtual CPU it does not recognise.
package openblas

/*
#cgo LDFLAGS: -lopenblas
#include <cblas.h>
*/
import "C"

import "unsafe"

// Sgemm computes C = alpha·op(A)·op(B) + beta·C with cblas_sgemm on row-major data,
// with the arguments of gemm.Gemm (not checked: the caller must).
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	tr := func(t bool) C.enum_CBLAS_TRANSPOSE {
		if t {
			return C.CblasTrans
		}
		return C.CblasNoTrans
	}
	ptr := func(x []float32) *C.float {
		if len(x) == 0 {
			return nil
		}
		return (*C.float)(unsafe.Pointer(&x[0]))
	}
	C.cblas_sgemm(C.CblasRowMajor, tr(transA), tr(transB), C.blasint(m), C.blasint(n), C.blasint(k),
		C.float(alpha), ptr(a), C.blasint(lda), ptr(b), C.blasint(ldb), C.float(beta), ptr(c), C.blasint(ldc))
}
