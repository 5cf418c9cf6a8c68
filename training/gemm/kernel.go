package gemm

import "github.com/sfsweep/sfsweep/internal/fp32"

// A kernel is one register-blocked micro-kernel together with the cache blocking and the
// packing routines that feed it. The blocked driver (driver.go) is written against this
// description, so the SIMD kernels and the portable Go kernel share all the loop logic.
type kernel[T Float] struct {
	name   string
	mr, nr int // the micro-tile: mr rows of C by nr columns

	// Cache blocking: kc is the depth of a packed panel, mc the rows of a packed block of A
	// (a multiple of mr), nc the columns of a packed panel of B (a multiple of nr).
	kc, mc, nc int

	// micro computes the mr×nr tile c = alpha·Ã·B̃ + beta·c, or c = alpha·Ã·B̃ without reading
	// c when beta0, where Ã is a packed sliver of A (kc×mr: element (i, p) at a[p·mr+i]) and
	// B̃ a packed sliver of B (kc×nr: element (p, j) at b[p·nr+j]); c is row-major with
	// leading dimension ldc. Every element is one chain of multiply-adds in increasing p.
	micro func(kc int, a, b, c []T, ldc int, alpha, beta T, beta0 bool)

	// packA packs rows [i0, i0+mc) and columns [p0, p0+kc) of op(A) into mr-row slivers:
	// sliver s at dst[s·aStride(mr, kc):], element (i, p) at [p·mr+i], rows past mc zero. m
	// is the number of rows of op(A) (how far past i0+mc it may read).
	packA func(dst, a []T, lda int, transA bool, m, i0, p0, mc, kc int)

	// packB packs rows [p0, p0+kc) and columns [j0, j0+nc) of op(B) into nr-column slivers:
	// sliver t at dst[t·nr·kc:], element (p, j) at [p·nr+j], columns past nc zero. n is the
	// number of columns of op(B).
	packB func(dst, b []T, ldb int, transB bool, n, p0, j0, kc, nc int)
}

// aStride is the distance between packed slivers of A: a sliver and one cache line (of
// float32), so that packing, which writes to all slivers of a block in turn, does not map
// them all to the same few sets of the L1 cache.
func aStride(mr, kc int) int { return mr*kc + 16 }

// goKernel32 and goKernel64 are the portable kernels: a 4×4 tile in scalar Go.
var (
	goKernel32 = &kernel[float32]{
		name: "go", mr: 4, nr: 4, kc: 256, mc: 128, nc: 2048,
		micro: micro4x4f32,
		packA: packAGo[float32](4),
		packB: packBGo[float32](4),
	}
	goKernel64 = &kernel[float64]{
		name: "go", mr: 4, nr: 4, kc: 256, mc: 64, nc: 1024,
		micro: micro4x4[float64],
		packA: packAGo[float64](4),
		packB: packBGo[float64](4),
	}
)

// kernel32 is the float32 kernel in use: the widest the CPU supports (chosen at start-up on
// amd64), or goKernel32.
var kernel32 = goKernel32

// micro4x4 is the portable micro-kernel for a 4×4 tile (see kernel.micro).
func micro4x4[T Float](kc int, a, b, c []T, ldc int, alpha, beta T, beta0 bool) {
	var c00, c01, c02, c03, c10, c11, c12, c13 T
	var c20, c21, c22, c23, c30, c31, c32, c33 T
	a, b = a[:4*kc], b[:4*kc]
	for p := 0; p+4 <= len(a); p += 4 {
		aa, bb := a[p:p+4:p+4], b[p:p+4:p+4]
		b0, b1, b2, b3 := bb[0], bb[1], bb[2], bb[3]
		a0 := aa[0]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		a1 := aa[1]
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		a2 := aa[2]
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		a3 := aa[3]
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	store4(c[0*ldc:], alpha, beta, beta0, c00, c01, c02, c03)
	store4(c[1*ldc:], alpha, beta, beta0, c10, c11, c12, c13)
	store4(c[2*ldc:], alpha, beta, beta0, c20, c21, c22, c23)
	store4(c[3*ldc:], alpha, beta, beta0, c30, c31, c32, c33)
}

// micro4x4f32 is the portable float32 micro-kernel for a 4×4 tile, with the SIMD kernels'
// arithmetic: each element one chain of fused multiply-adds in increasing p from 0, scaled
// by alpha, then added to beta·c by one fused multiply-add. It gives their bits.
func micro4x4f32(kc int, a, b, c []float32, ldc int, alpha, beta float32, beta0 bool) {
	var acc [4][4]float32
	a, b = a[:4*kc], b[:4*kc]
	for p := 0; p+4 <= len(a); p += 4 {
		aa, bb := a[p:p+4:p+4], b[p:p+4:p+4]
		for i, ai := range aa {
			row := &acc[i]
			for j, bj := range bb {
				r, ok := fp32.Quick(ai, bj, row[j])
				if !ok {
					r = fp32.FMA(ai, bj, row[j])
				}
				row[j] = r
			}
		}
	}
	for i := range acc {
		ci := c[i*ldc : i*ldc+4 : i*ldc+4]
		for j, s := range acc[i] {
			s *= alpha
			if !beta0 {
				s = fp32.FMA(beta, ci[j], s)
			}
			ci[j] = s
		}
	}
}

// store4 writes alpha·(s0, s1, s2, s3) (+ beta·c) to c[0:4].
func store4[T Float](c []T, alpha, beta T, beta0 bool, s0, s1, s2, s3 T) {
	c = c[:4:4]
	if beta0 {
		c[0], c[1], c[2], c[3] = alpha*s0, alpha*s1, alpha*s2, alpha*s3
		return
	}
	c[0] = alpha*s0 + beta*c[0]
	c[1] = alpha*s1 + beta*c[1]
	c[2] = alpha*s2 + beta*c[2]
	c[3] = alpha*s3 + beta*c[3]
}

// packAGo returns a portable kernel.packA for slivers of mr rows.
func packAGo[T Float](mr int) func(dst, a []T, lda int, transA bool, m, i0, p0, mc, kc int) {
	return func(dst, a []T, lda int, transA bool, m, i0, p0, mc, kc int) {
		for s := 0; s*mr < mc; s++ {
			d := dst[s*aStride(mr, kc):][:mr*kc]
			packStrided(d, mr, a, lda, transA, i0+s*mr, p0, min(mr, mc-s*mr), mr, kc)
		}
	}
}

// packBGo returns a portable kernel.packB for slivers of nr columns. Packing B is packing
// A for the transposed problem: op(B) column j is row j of op(B)ᵀ.
func packBGo[T Float](nr int) func(dst, b []T, ldb int, transB bool, n, p0, j0, kc, nc int) {
	return func(dst, b []T, ldb int, transB bool, n, p0, j0, kc, nc int) {
		for t := 0; t*nr < nc; t++ {
			d := dst[t*nr*kc : (t+1)*nr*kc]
			packStrided(d, nr, b, ldb, !transB, j0+t*nr, p0, min(nr, nc-t*nr), nr, kc)
		}
	}
}

// packStrided packs rows [i0, i0+r) and columns [p0, p0+kc) of op(X) (X itself, or Xᵀ when
// trans) transposed into d: element (i, p) goes to d[p·ldd+i], and d[p·ldd+i] = 0 for
// r ≤ i < w.
func packStrided[T Float](d []T, ldd int, x []T, ldx int, trans bool, i0, p0, r, w, kc int) {
	d = d[:(kc-1)*ldd+w]
	if trans {
		// op(X)(i, p) = x[p·ldx+i]: each p is a contiguous run of r elements.
		for p := 0; p < kc; p++ {
			src := x[(p0+p)*ldx+i0:][:r]
			dp := d[p*ldd : p*ldd+w]
			copy(dp, src)
			clear(dp[r:])
		}
		return
	}
	// op(X)(i, p) = x[i·ldx+p]: each row is contiguous; scatter it with stride ldd.
	for i := 0; i < r; i++ {
		src := x[(i0+i)*ldx+p0:][:kc]
		for p, v := range src {
			d[p*ldd+i] = v
		}
	}
	if r < w {
		for p := 0; p < kc; p++ {
			clear(d[p*ldd+r : p*ldd+w])
		}
	}
}
