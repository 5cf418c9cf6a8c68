package cuda

import (
	"math/rand/v2"
	"testing"
)

// ltRowMajor is the product as the engine means it, on row-major matrices in memory.
func ltRowMajor(p ltProduct, alpha, beta float64, a, b, c, d []float64) {
	for z := range p.count {
		for i := range p.m {
			for j := range p.n {
				var s float64
				for kk := range p.k {
					ai, bi := z*p.sa+i*p.lda+kk, z*p.sb+kk*p.ldb+j
					if p.tA {
						ai = z*p.sa + kk*p.lda + i
					}
					if p.tB {
						bi = z*p.sb + j*p.ldb + kk
					}
					x, y := a[ai], b[bi]
					s += x * y
				}
				d[z*p.sd+i*p.ldd+j] = alpha*s + beta*c[z*p.sc+i*p.ldc+j]
			}
		}
	}
}

// ltEmulate is cuBLASLt's matmul on the column-major description, as its documentation
// defines it: D = alpha·opA(A)·opB(B) + beta·C, element (i, j) of a layout at i + j·ld.
func ltEmulate(t *testing.T, cm ltColumnMajor, count int, alpha, beta float64, a, b, c, d []float64) {
	t.Helper()
	shape := func(name string, l ltLayout, trans bool, rows, cols int) {
		if trans {
			rows, cols = cols, rows
		}
		if l.rows != rows || l.cols != cols || l.ld < l.rows {
			t.Fatalf("%s: layout %+v, op %v, wants %d×%d", name, l, trans, rows, cols)
		}
	}
	shape("A", cm.a, cm.transA, cm.m, cm.k)
	shape("B", cm.b, cm.transB, cm.k, cm.n)
	shape("C", cm.c, false, cm.m, cm.n)
	shape("D", cm.d, false, cm.m, cm.n)
	at := func(l ltLayout, z, i, j int) int { return z*l.stride + i + j*l.ld }
	for z := range count {
		for i := range cm.m {
			for j := range cm.n {
				var s float64
				for kk := range cm.k {
					ai, bi := at(cm.a, z, i, kk), at(cm.b, z, kk, j)
					if cm.transA {
						ai = at(cm.a, z, kk, i)
					}
					if cm.transB {
						bi = at(cm.b, z, j, kk)
					}
					x, y := a[ai], b[bi]
					s += x * y
				}
				d[at(cm.d, z, i, j)] = alpha*s + beta*c[at(cm.c, z, i, j)]
			}
		}
	}
}

// The column-major form of a product computes the product, for every transposition, with
// padded leading dimensions, batches and a C apart from D.
func TestLtColumnMajor(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	fill := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(rng.IntN(17) - 8)
		}
		return v
	}
	for _, tA := range []bool{false, true} {
		for _, tB := range []bool{false, true} {
			for _, count := range []int{1, 3} {
				m, n, k := 5, 7, 4
				p := ltProduct{tA: tA, tB: tB, m: m, n: n, k: k, count: count}
				ar, ac, br, bc := m, k, k, n
				if tA {
					ar, ac = k, m
				}
				if tB {
					br, bc = n, k
				}
				p.lda, p.ldb, p.ldc, p.ldd = ac+1, bc+2, n+3, n
				p.sa, p.sb, p.sc, p.sd = ar*p.lda+1, br*p.ldb, m*p.ldc+2, m*p.ldd
				a, b, c := fill(count*p.sa), fill(count*p.sb), fill(count*p.sc)
				want, got := make([]float64, count*p.sd), make([]float64, count*p.sd)
				ltRowMajor(p, 2, 0.5, a, b, c, want)
				ltEmulate(t, p.columnMajor(), count, 2, 0.5, b, a, c, got) // cuBLASLt's A is our B
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("tA %v, tB %v, count %d: D[%d] = %v, want %v", tA, tB, count, i, got[i], want[i])
					}
				}
			}
		}
	}
}

func TestPtrAlign(t *testing.T) {
	for _, tc := range []struct {
		p            uint64
		stride, size int
		want         uint32
	}{
		{0x7f0000000000, 0, 2, 256},
		{0x7f0000000000, 64 * 64, 2, 256},
		{0x7f0000000004, 0, 4, 4},
		{0x7f0000000040, 0, 2, 64},
		{0x7f0000000000, 3, 2, 2},   // odd batch stride of bfloat16
		{0x7f0000000000, 12, 4, 16}, // 48-byte stride
		{0, 0, 4, 256},
	} {
		if got := ptrAlign(tc.p, tc.size, tc.stride); got != tc.want {
			t.Errorf("ptrAlign(%#x, %d, %d) = %d, want %d", tc.p, tc.size, tc.stride, got, tc.want)
		}
	}
	// a key tells apart products whose pointers differ in alignment only
	p := ltProduct{m: 8, n: 8, k: 8, lda: 8, ldb: 8, ldc: 8, ldd: 8, count: 1}
	if p.key(256, 256, 256, 256) == p.key(256, 258, 256, 256) {
		t.Error("keys of B aligned to 256 and to 2 bytes are equal")
	}
	if p.key(256, 256, 256, 256) != p.key(512, 1024, 256, 768) {
		t.Error("keys of pointers aligned to 256 bytes differ")
	}
	// and counts the leading dimensions: rows of 37 bfloat16 values start 2 bytes apart,
	// rows of 40 float32 values 32 bytes apart, whatever the pointers
	q := ltProduct{m: 8, n: 37, k: 37, lda: 37, ldb: 37, ldc: 40, ldd: 40, count: 1}
	if k := q.key(256, 256, 256, 256); k.alignA != 2 || k.alignB != 2 || k.alignC != 32 || k.alignD != 32 {
		t.Errorf("alignments %d, %d, %d, %d of leading dimensions 37, 37, 40, 40; want 2, 2, 32, 32", k.alignA, k.alignB, k.alignC, k.alignD)
	}
}
