//go:build !amd64 || purego

package native

// simd and avx512 are false where there are no assembly kernels; the stubs below are never
// called.
var (
	hasAVX512, hasAVX2 = false, false
	simd, avx512       = false, false
)

func softmax32(x *float32, n int) (mx, sum float32)                              { panic("no simd") }
func softmaxBackward32(dp, p *float32, n int, scale float32)                     { panic("no simd") }
func swigluForward32(out, gate, u *float32, n int)                               { panic("no simd") }
func swigluBackward32(dg, du, dout, gate, u *float32, n int)                     { panic("no simd") }
func sumSquares32(x *float32, n int) float32                                     { panic("no simd") }
func scaleMul32(out, x, w *float32, n int, s float32)                            { panic("no simd") }
func rmsnormBackward32(dx, dwPart, dout, x, w *float32, n int, rs, invC float32) { panic("no simd") }
func rope32(x, cos, sin *float32, heads, d int)                                  { panic("no simd") }
func scale32(x *float32, n int, s float32)                                       { panic("no simd") }

func matmul32(c *float32, ldc int, a *float32, rsA, csA int, b *float32, ldb int, m, n, k int, alpha float32) {
	panic("no simd")
}

func transpose32(dst, src *float32, rows, cols, lds int) { panic("no simd") }

func geluForward32(out, x *float32, n int)       { panic("no simd") }
func geluBackward32(dx, dout, x *float32, n int) { panic("no simd") }

func softmax32AVX2(x *float32, n int) (mx, sum float32)          { panic("no simd") }
func softmaxBackward32AVX2(dp, p *float32, n int, scale float32) { panic("no simd") }
func swigluForward32AVX2(out, gate, u *float32, n int)           { panic("no simd") }
func swigluBackward32AVX2(dg, du, dout, gate, u *float32, n int) { panic("no simd") }
func sumSquares32AVX2(x *float32, n int) float32                 { panic("no simd") }
func scaleMul32AVX2(out, x, w *float32, n int, s float32)        { panic("no simd") }
func rope32AVX2(x, cos, sin *float32, heads, d int)              { panic("no simd") }
func scale32AVX2(x *float32, n int, s float32)                   { panic("no simd") }

func rmsnormBackward32AVX2(dx, dwPart, dout, x, w *float32, n int, rs, invC float32) {
	panic("no simd")
}

func matmul32AVX2(c *float32, ldc int, a *float32, rsA, csA int, b *float32, ldb int, m, n, k int, alpha float32) {
	panic("no simd")
}

func transpose32AVX2(dst, src *float32, rows, cols, lds int) { panic("no simd") }

// selectKernels selects the portable loops whatever SFSWEEP_KERNELS says.
func selectKernels(env string) (simd, avx512 bool) { return false, false }
