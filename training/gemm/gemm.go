// Package gemm is the general matrix multiply under the native training engine:
// C = α·op(A)·op(B) + β·C on row-major buffers, with op(X) = X or Xᵀ.
//
// Results are deterministic: every element of C is accumulated by one goroutine in a fixed
// order of k, so the same inputs give the same bits whatever the number of workers.
package gemm

// Float is the element type: float32 for training, float64 for gradient checks.
type Float interface{ ~float32 | ~float64 }

// Gemm computes C = alpha·op(A)·op(B) + beta·C for row-major matrices, where op(A) is m×k
// (A is m×k with leading dimension lda, or k×m when transA), op(B) is k×n (B is k×n with
// leading dimension ldb, or n×k when transB), and C is m×n with leading dimension ldc.
// beta = 0 overwrites C (NaNs in C are not propagated).
func Gemm[T Float](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	checkArgs(transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// gemm is the implementation in use; the naive loop until a blocked kernel replaces it.
func gemm[T Float](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	Naive(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
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
