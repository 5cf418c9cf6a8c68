//go:build amd64 && !purego

package native

import (
	"os"

	"golang.org/x/sys/cpu"
)

// The AVX-512F float32 row kernels of kernels_amd64.s, used by the primitives of vec.go
// when T is float32. They compute what the portable loops compute, but not bit for bit:
// they use fused multiply-adds, sum in 16 lanes, and take e^x from a polynomial (relative
// error about 2 ulp) instead of math.Exp. Results remain deterministic.
//
// They are selected at start-up where the CPU and the operating system support AVX-512F.
// SFSWEEP_KERNELS=go selects the portable loops instead (as in package sfadamw), and
// building with -tags purego leaves the assembly out.

var simd = cpu.X86.HasAVX512F && os.Getenv("SFSWEEP_KERNELS") != "go"

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

// The GELU kernels of kernels_gelu_amd64.s: erf from Abramowitz & Stegun 7.1.26 (absolute
// error ≤ 1.5e-7), not math.Erf.

//go:noescape
func geluForward32(out, x *float32, n int)

//go:noescape
func geluBackward32(dx, dout, x *float32, n int)
