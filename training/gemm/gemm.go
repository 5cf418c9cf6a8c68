// Package gemm is the general matrix multiply under the native training engine:
// C = α·op(A)·op(B) + β·C on row-major buffers, with op(X) = X or Xᵀ.
//
// Results are deterministic: every element of C is accumulated by one goroutine in a fixed
// order of k, so the same inputs give the same bits whatever the number of workers.
//
// The implementation is a BLIS/GotoBLAS-style blocked product (driver.go): operands are
// packed into contiguous slivers and a register-blocked micro-kernel computes small tiles
// of C. float32 runs the widest micro-kernel the CPU supports — AVX-512 (14×32 tiles) or
// AVX2 with FMA (6×16) on amd64, selected at start-up, see kernels_amd64.go — and float64
// a portable Go kernel (4×4). Large products run on all CPUs (runtime.GOMAXPROCS), cutting
// the rows or columns of C, never the inner dimension; steady-state calls allocate
// nothing.
//
// Numerics: each element is a sum over k in increasing order, in blocks of a few hundred
// terms, accumulated in the element type with fused multiply-adds where the kernel uses
// them (the SIMD kernels do), then scaled by α and added to β·C. Results therefore differ
// from Naive by rounding only — at most about k·2⁻²³·Σ|a||b| in float32 — but they are not
// bitwise equal to it, and they differ between kernels (SFSWEEP_KERNELS=go, avx2, avx512).
package gemm

import (
	"unsafe"

	"github.com/sfsweep/sfsweep/internal/par"
)

// Float is the element type: float32 for training, float64 for gradient checks.
type Float interface{ ~float32 | ~float64 }

// Gemm computes C = alpha·op(A)·op(B) + beta·C for row-major matrices, where op(A) is m×k
// (A is m×k with leading dimension lda, or k×m when transA), op(B) is k×n (B is k×n with
// leading dimension ldb, or n×k when transB), and C is m×n with leading dimension ldc.
// beta = 0 overwrites C (NaNs in C are not propagated).
//
// Gemm is safe for concurrent use (on disjoint C), including from inside tasks of a
// par.Pool: it parallelises over its own pool, and a call that finds that pool busy
// runs on the calling goroutine. It panics if a dimension is negative, a leading dimension
// is smaller than its row length or a buffer is too short for its shape.
func Gemm[T Float](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	checkArgs(transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// gemm is the implementation behind Gemm: float32 (and any type with its layout) runs the
// widest micro-kernel the CPU supports, float64 the portable one.
func gemm[T Float](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if unsafe.Sizeof(alpha) == 4 {
		gemmWith(kernel32, pool(), transA, transB, m, n, k, as[float32](alpha), slice[float32](a), lda, slice[float32](b), ldb, as[float32](beta), slice[float32](c), ldc)
		return
	}
	gemmWith(goKernel64, pool(), transA, transB, m, n, k, as[float64](alpha), slice[float64](a), lda, slice[float64](b), ldb, as[float64](beta), slice[float64](c), ldc)
}

// as reinterprets x as a U of the same size.
func as[U, T Float](x T) U { return *(*U)(unsafe.Pointer(&x)) }

// slice reinterprets s as a slice of U of the same element size.
func slice[U, T Float](s []T) []U {
	return unsafe.Slice((*U)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}

// gemmWith is gemm with a given kernel and worker pool (nil: the calling goroutine only).
func gemmWith[T Float](kern *kernel[T], p *par.Pool, transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	switch {
	case m == 0 || n == 0:
	case k == 0:
		// C = alpha·0 + beta·C, as the reference computes it.
		var s T
		for i := range m {
			row := c[i*ldc : i*ldc+n]
			for j := range row {
				if beta == 0 {
					row[j] = alpha * s
				} else {
					row[j] = alpha*s + beta*row[j]
				}
			}
		}
	case m*n*k <= tinyMNK:
		Naive(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	default:
		blocked(kern, p, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}
}

// Naive is the textbook triple loop with the same contract as Gemm, accumulating each
// element in increasing k: the reference the fast paths are tested against.
func Naive[T Float](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	for i := range m {
		for j := range n {
			var s T
			for p := range k {
				var av, bv T
				if transA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if transB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += av * bv
			}
			if beta == 0 {
				c[i*ldc+j] = alpha * s
			} else {
				c[i*ldc+j] = alpha*s + beta*c[i*ldc+j]
			}
		}
	}
}

func checkArgs(transA, transB bool, m, n, k, la, lda, lb, ldb, lc, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic("gemm: negative dimension")
	}
	rowsA, colsA := m, k
	if transA {
		rowsA, colsA = k, m
	}
	rowsB, colsB := k, n
	if transB {
		rowsB, colsB = n, k
	}
	check := func(what string, rows, cols, ld, l int) {
		if rows == 0 || cols == 0 {
			return
		}
		if ld < cols {
			panic("gemm: leading dimension of " + what + " smaller than its row length")
		}
		if (rows-1)*ld+cols > l {
			panic("gemm: " + what + " is too short for its shape")
		}
	}
	check("A", rowsA, colsA, lda, la)
	check("B", rowsB, colsB, ldb, lb)
	check("C", m, n, ldc, lc)
}
