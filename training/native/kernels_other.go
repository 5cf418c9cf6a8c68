//go:build !amd64 || purego

package native

// simd is false where there are no assembly kernels; the stubs below are never called.
var simd = false

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
