//go:build amd64 && !purego

package native

import (
	"os"

	"golang.org/x/sys/cpu"
)

// The float32 row kernels of kernels_amd64.s (AVX-512F, 16 lanes) and kernels_avx2_amd64.s
// (AVX2 and FMA, 8 lanes), used by the primitives of vec.go when T is float32. The two sets
// give the same bits: each element goes through the same operations in the same order
// (fused multiply-adds, e^x and erf from the same polynomials), and every reduction sums in
// the same 16 lanes (element i in lane i mod 16; AVX2 keeps them in two registers) reduced
// by the same tree. The portable loops of spec32.go compute the same operations in Go, so
// all three families give the same bits (TestKernelSetsBitwise, TestTrainingBitwise), and
// a run gives one result on every machine.
//
// The set is selected at start-up: AVX-512 where the CPU and the operating system support
// AVX-512F, AVX2 where they support AVX2 and FMA, the portable loops otherwise.
// SFSWEEP_KERNELS=go selects the portable loops (as in package sfadamw) and
// SFSWEEP_KERNELS=avx2 the AVX2 kernels on an AVX-512 machine; building with -tags purego
// leaves the assembly out.

var (
	hasAVX512 = cpu.X86.HasAVX512F
	hasAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA
)

// simd selects the assembly kernels; avx512 selects, among them, the AVX-512 set over the
// AVX2 one.
var simd, avx512 = selectKernels(os.Getenv("SFSWEEP_KERNELS"))

// selectKernels returns simd and avx512 for the value of SFSWEEP_KERNELS on this CPU.
func selectKernels(env string) (simd, avx512 bool) {
	switch {
	case env == "go":
		return false, false
	case hasAVX512 && env != "avx2":
		return true, true
	case hasAVX2:
		return true, false
	}
	return false, false
}

// Every pointer addresses at least n float32 values.

//go:noescape
func softmax32(x *float32, n int) (mx, sum float32)

//go:noescape
func softmaxBackward32(dp, p *float32, n int, scale float32)

//go:noescape
func swigluForward32(out, gate, u *float32, n int)

//go:noescape
func swigluBackward32(dg, du, dout, gate, u *float32, n int)

//go:noescape
func sumSquares32(x *float32, n int) float32

//go:noescape
func scaleMul32(out, x, w *float32, n int, s float32)

//go:noescape
func rmsnormBackward32(dx, dwPart, dout, x, w *float32, n int, rs, invC float32)

//go:noescape
func rope32(x, cos, sin *float32, heads, d int)

//go:noescape
func scale32(x *float32, n int, s float32)

//go:noescape
func matmul32(c *float32, ldc int, a *float32, rsA, csA int, b *float32, ldb int, m, n, k int, alpha float32)

//go:noescape
func transpose32(dst, src *float32, rows, cols, lds int)

// The GELU kernels of kernels_gelu_amd64.s and kernels_avx2_amd64.s: erf from
// Abramowitz & Stegun 7.1.26 (absolute error ≤ 1.5e-7), not math.Erf.

// geluForward32 sets out = x·Φ(x) with the selected kernel set.
func geluForward32(out, x *float32, n int) {
	if avx512 {
		geluForward32AVX512(out, x, n)
		return
	}
	geluForward32AVX2(out, x, n)
}

// geluBackward32 sets dx = dout·(Φ(x) + x·φ(x)) with the selected kernel set.
func geluBackward32(dx, dout, x *float32, n int) {
	if avx512 {
		geluBackward32AVX512(dx, dout, x, n)
		return
	}
	geluBackward32AVX2(dx, dout, x, n)
}

//go:noescape
func geluForward32AVX512(out, x *float32, n int)

//go:noescape
func geluBackward32AVX512(dx, dout, x *float32, n int)

// The AVX2 kernels of kernels_avx2_amd64.s, with the signatures and the semantics of the
// AVX-512 ones above.

//go:noescape
func softmax32AVX2(x *float32, n int) (mx, sum float32)

//go:noescape
func softmaxBackward32AVX2(dp, p *float32, n int, scale float32)

//go:noescape
func swigluForward32AVX2(out, gate, u *float32, n int)

//go:noescape
func swigluBackward32AVX2(dg, du, dout, gate, u *float32, n int)

//go:noescape
func sumSquares32AVX2(x *float32, n int) float32

//go:noescape
func scaleMul32AVX2(out, x, w *float32, n int, s float32)

//go:noescape
func rmsnormBackward32AVX2(dx, dwPart, dout, x, w *float32, n int, rs, invC float32)

//go:noescape
func rope32AVX2(x, cos, sin *float32, heads, d int)

//go:noescape
func scale32AVX2(x *float32, n int, s float32)

//go:noescape
func matmul32AVX2(c *float32, ldc int, a *float32, rsA, csA int, b *float32, ldb int, m, n, k int, alpha float32)

//go:noescape
func transpose32AVX2(dst, src *float32, rows, cols, lds int)

//go:noescape
func geluForward32AVX2(out, x *float32, n int)

//go:noescape
func geluBackward32AVX2(dx, dout, x *float32, n int)
