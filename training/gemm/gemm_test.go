package gemm

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// modelCases are shapes of the training engine: linear layers of the tiny and small LLaMA
// models (forward X·Wᵀ, input gradient dY·W, weight gradient dW += dYᵀ·X) and attention
// heads. The biggest are left out of -short runs.
func modelCases(short bool) []gemmCase {
	cs := []gemmCase{
		{transB: true, m: 2048, n: 344, k: 128, alpha: 1},                        // tiny SwiGLU up
		{m: 2048, n: 128, k: 344, alpha: 1},                                      // tiny SwiGLU down, dX
		{transA: true, m: 344, n: 128, k: 2048, alpha: 1, beta: 1},               // tiny dW
		{transB: true, m: 128, n: 128, k: 32, alpha: 0.125},                      // tiny attention scores
		{m: 128, n: 32, k: 128, alpha: 1},                                        // tiny attention P·V
		{transA: true, m: 256, n: 64, k: 256, alpha: 1, beta: 1},                 // small attention dV
		{transB: true, m: 256, n: 256, k: 64, alpha: 0.125, nanC: true},          // small attention scores
		{transB: true, m: 2048, n: 512, k: 128, alpha: 1, padA: 128},             // tiny LM head
		{transB: true, m: 512, n: 1024, k: 384, alpha: 1},                        // small SwiGLU up (rows cut)
		{transA: true, m: 384, n: 384, k: 2048, alpha: 1, beta: 1},               // small dW
		{transA: true, transB: true, m: 200, n: 300, k: 100, alpha: -1, beta: 2}, // TT
	}
	if !short {
		cs = append(cs,
			gemmCase{transB: true, m: 2048, n: 1024, k: 384, alpha: 1}, // small SwiGLU up
			gemmCase{m: 2048, n: 384, k: 1024, alpha: 1},               // small SwiGLU down, dX
		)
	}
	return cs
}

func TestModelShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, cs := range modelCases(testing.Short()) {
		o := cs.operands(rng).rounded()
		a, b, c := to32(o.a), to32(o.b), to32(o.c)
		Gemm(cs.transA, cs.transB, cs.m, cs.n, cs.k, float32(cs.alpha), a, o.lda, b, o.ldb, float32(cs.beta), c, o.ldc)
		check(t, cs, o, to64(c), 24)
	}
}

// TestGemmFloat64 runs the public entry point in float64 on shapes around the blocking.
func TestGemmFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, cs := range []gemmCase{
		{m: 3, n: 4, k: 5, alpha: 1},
		{transA: true, m: 65, n: 66, k: 257, alpha: 0.5, beta: -1, padA: 1},
		{transB: true, m: 130, n: 33, k: 40, alpha: 1, nanC: true},
		{transA: true, transB: true, m: 31, n: 1030, k: 9, alpha: 2, beta: 1, padC: 3},
	} {
		o := cs.operands(rng)
		c := append([]float64(nil), o.c...)
		Gemm(cs.transA, cs.transB, cs.m, cs.n, cs.k, cs.alpha, o.a, o.lda, o.b, o.ldb, cs.beta, c, o.ldc)
		check(t, cs, o, c, 53)
	}
}

// TestNamedFloatTypes checks that types defined on float32 and float64 take the fast paths
// correctly.
func TestNamedFloatTypes(t *testing.T) {
	type f32 float32
	type f64 float64
	rng := rand.New(rand.NewPCG(9, 10))
	cs := gemmCase{transB: true, m: 40, n: 50, k: 60, alpha: 1, beta: 0.5}
	o := cs.operands(rng).rounded()
	a32, b32, c32 := make([]f32, len(o.a)), make([]f32, len(o.b)), make([]f32, len(o.c))
	for i, v := range o.a {
		a32[i] = f32(v)
	}
	for i, v := range o.b {
		b32[i] = f32(v)
	}
	for i, v := range o.c {
		c32[i] = f32(v)
	}
	Gemm(cs.transA, cs.transB, cs.m, cs.n, cs.k, 1, a32, o.lda, b32, o.ldb, 0.5, c32, o.ldc)
	got := make([]float64, len(c32))
	for i, v := range c32 {
		got[i] = float64(v)
	}
	check(t, cs, o, got, 24)

	c64 := make([]f64, len(o.c))
	a64, b64 := make([]f64, len(o.a)), make([]f64, len(o.b))
	for i := range o.a {
		a64[i] = f64(o.a[i])
	}
	for i := range o.b {
		b64[i] = f64(o.b[i])
	}
	for i := range o.c {
		c64[i] = f64(o.c[i])
	}
	Gemm(cs.transA, cs.transB, cs.m, cs.n, cs.k, 1, a64, o.lda, b64, o.ldb, 0.5, c64, o.ldc)
	for i, v := range c64 {
		got[i] = float64(v)
	}
	check(t, cs, o, got, 53)
}

func TestArgumentChecks(t *testing.T) {
	buf := make([]float32, 100)
	for _, tc := range []struct {
		name string
		f    func()
		want string
	}{
		{"negative", func() { Gemm(false, false, -1, 2, 2, 1, buf, 2, buf, 2, 0, buf, 2) }, "negative dimension"},
		{"short A", func() { Gemm(false, false, 10, 2, 10, 1, buf[:99], 10, buf, 2, 0, buf, 2) }, "A is too short"},
		{"short Aᵀ", func() { Gemm(true, false, 10, 2, 10, 1, buf[:99], 10, buf, 2, 0, buf, 2) }, "A is too short"},
		{"short B", func() { Gemm(false, false, 2, 10, 10, 1, buf, 10, buf[:99], 10, 0, buf, 10) }, "B is too short"},
		{"short Bᵀ", func() { Gemm(false, true, 2, 10, 10, 1, buf, 10, buf[:99], 10, 0, buf, 10) }, "B is too short"},
		{"short C", func() { Gemm(false, false, 10, 10, 2, 1, buf, 2, buf, 10, 0, buf[:99], 10) }, "C is too short"},
		{"lda", func() { Gemm(false, false, 2, 2, 5, 1, buf, 4, buf, 2, 0, buf, 2) }, "leading dimension of A"},
		{"ldb", func() { Gemm(false, true, 2, 2, 5, 1, buf, 5, buf, 4, 0, buf, 2) }, "leading dimension of B"},
		{"ldc", func() { Gemm(false, false, 2, 3, 5, 1, buf, 5, buf, 3, 0, buf, 2) }, "leading dimension of C"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, tc.want) {
					t.Errorf("panic %v, want one containing %q", r, tc.want)
				}
			}()
			tc.f()
		})
	}
	// Exactly long enough buffers are accepted.
	Gemm(false, false, 10, 10, 10, 1, buf, 10, buf, 10, 0, make([]float32, 100), 10)
}
