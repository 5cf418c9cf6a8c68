package cuda

// The products of the lt path (FastEnv "lt", lt.go) as cuBLASLt takes them, kept free of
// cgo so that they are tested without a GPU: the column-major form of a row-major product,
// the alignments its pointers promise, and the key under which the algorithm chosen for it
// is kept.

// ltType is the element type of a matrix of a cuBLASLt product.
type ltType uint8

const (
	ltF32  ltType = iota // float32
	ltBF16               // bfloat16
)

// size is the bytes of one element.
func (t ltType) size() int {
	if t == ltBF16 {
		return 2
	}
	return 4
}

// ltProduct is D = alpha·op(A)·op(B) + beta·C over count row-major matrices, op(A) m×k,
// op(B) k×n and C, D m×n, the i-th at A + i·sa, B + i·sb, C + i·sc, D + i·sd (strides and
// leading dimensions in elements). A and B are bfloat16; C and D are both cType (cuBLASLt
// takes C and D of one type when A and B are bfloat16). C may be D, as for a product that
// accumulates into its output, or another matrix, as for a residual added on the way.
type ltProduct struct {
	tA, tB             bool
	m, n, k            int
	lda, ldb, ldc, ldd int
	sa, sb, sc, sd     int
	count              int
	cType              ltType
}

// ltKey is what the algorithm cuBLASLt's heuristic picks for a product depends on: its
// shape and types, and the alignment of its four pointers (the heuristic assumes 256 bytes
// unless told less, and a view into the flat parameter buffer has less). The engine keeps
// the algorithm of each key, so a product picks the same algorithm at every step.
type ltKey struct {
	p                              ltProduct
	alignA, alignB, alignC, alignD uint32
}

// ltMaxAlign is the alignment cuBLASLt's heuristic assumes by default, and the most a key
// records.
const ltMaxAlign = 256

// ptrAlign is the largest power of two, at most ltMaxAlign, that divides p and every
// step of stride·size bytes from it, for each stride given (elements of size bytes): the
// alignment every row of every matrix of a batch keeps. cuBLASLt's alignment requirement
// covers the leading dimension as well as the pointer ("buffer pointer, leading
// dimension, and possibly other strides", cublasLt.h), so a key's alignment counts both.
func ptrAlign(p uint64, size int, strides ...int) uint32 {
	a := uint64(ltMaxAlign)
	for _, st := range strides {
		if v := uint64(st) * uint64(size); v != 0 {
			a = min(a, v&-v)
		}
	}
	if p != 0 {
		a = min(a, p&-p)
	}
	return uint32(a)
}

// key returns the key of the product on pointers a, b, c and d.
func (p ltProduct) key(a, b, c, d uint64) ltKey {
	cs := p.cType.size()
	return ltKey{p: p,
		alignA: ptrAlign(a, 2, p.sa, p.lda), alignB: ptrAlign(b, 2, p.sb, p.ldb),
		alignC: ptrAlign(c, cs, p.sc, p.ldc), alignD: ptrAlign(d, cs, p.sd, p.ldd)}
}

// ltLayout is a column-major matrix as cuBLASLt's layouts describe it: rows, columns and
// leading dimension as stored, and the stride between the matrices of a batch.
type ltLayout struct {
	rows, cols, ld, stride int
}

// ltColumnMajor is a product in cuBLASLt's column-major terms: D (M×N) = opA(A)·opB(B) +
// beta·C, with K the inner dimension.
type ltColumnMajor struct {
	transA, transB bool
	m, n, k        int
	a, b, c, d     ltLayout
}

// columnMajor returns the product in column-major terms. A row-major matrix is its
// transpose in column-major, so the row-major D = op(A)·op(B) is the column-major
// Dᵀ = op(B)ᵀ·op(A)ᵀ: cuBLASLt's A is our B and its B our A, each transposed as ours is,
// M = n and N = m.
func (p ltProduct) columnMajor() ltColumnMajor {
	cm := ltColumnMajor{transA: p.tB, transB: p.tA, m: p.n, n: p.m, k: p.k}
	cm.a = ltLayout{rows: p.n, cols: p.k, ld: p.ldb, stride: p.sb}
	if p.tB {
		cm.a.rows, cm.a.cols = p.k, p.n
	}
	cm.b = ltLayout{rows: p.k, cols: p.m, ld: p.lda, stride: p.sa}
	if p.tA {
		cm.b.rows, cm.b.cols = p.m, p.k
	}
	cm.c = ltLayout{rows: p.n, cols: p.m, ld: p.ldc, stride: p.sc}
	cm.d = ltLayout{rows: p.n, cols: p.m, ld: p.ldd, stride: p.sd}
	return cm
}
