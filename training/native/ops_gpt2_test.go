package native

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The GPT-2 ops' backward against central differences of L = Σ g·op(x), as in ops_test.go.

func TestLayerNormBackward(t *testing.T) {
	const n, c, eps = 5, 7, 1e-5
	for _, tc := range []struct {
		name   string
		xScale float64 // typical |x − mean|
		h      float64 // difference step
	}{
		{"unit rows", 1, fdStep},
		{"rows where ε matters", 3e-3, 1e-7}, // var(x) ≈ ε
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 3))
			x, w, b, g := randn(n*c, tc.xScale, rng), randn(c, 1, rng), randn(c, 1, rng), randn(n*c, 1, rng)
			for i := range x {
				x[i] += 0.5 // a row mean far from zero
			}
			out, mean, rstd := make([]float64, n*c), make([]float64, n), make([]float64, n)
			loss := func() float64 { layernormForward(out, mean, rstd, x, w, b, c, eps); return dot(g, out) }
			loss()
			dx, dw, db := randn(n*c, 1, rng), make([]float64, c), make([]float64, c)
			dx0 := append([]float64(nil), dx...)
			layernormBackward(dx, dw, db, g, x, w, mean, rstd, c)
			for i := range dx {
				dx[i] -= dx0[i] // layernormBackward adds
			}
			fdCheckStep(t, "dx", x, dx, loss, tc.h)
			fdCheck(t, "dw", w, dw, loss)
			fdCheck(t, "db", b, db, loss)
		})
	}
}

// TestLayerNormForward checks the normalised rows: mean 0 and biased variance 1/(1+ε/var)
// with w = 1, b = 0.
func TestLayerNormForward(t *testing.T) {
	const n, c, eps = 3, 9, 1e-5
	rng := rand.New(rand.NewPCG(4, 4))
	x := randn(n*c, 2, rng)
	w, b := make([]float64, c), make([]float64, c)
	for i := range w {
		w[i] = 1
	}
	out, mean, rstd := make([]float64, n*c), make([]float64, n), make([]float64, n)
	layernormForward(out, mean, rstd, x, w, b, c, eps)
	for r := range n {
		var mu, v, mo, vo float64
		for i := range c {
			mu += x[r*c+i] / c
			mo += out[r*c+i] / c
		}
		for i := range c {
			v += (x[r*c+i] - mu) * (x[r*c+i] - mu) / c
			vo += (out[r*c+i] - mo) * (out[r*c+i] - mo) / c
		}
		if math.Abs(mo) > 1e-12 || math.Abs(vo-v/(v+eps)) > 1e-12 || math.Abs(mean[r]-mu) > 1e-12 {
			t.Errorf("row %d: output mean %g, variance %g (want %g), saved mean %g (want %g)", r, mo, vo, v/(v+eps), mean[r], mu)
		}
	}
}

func TestGELU(t *testing.T) {
	// values of torch.nn.GELU() (exact erf form), Φ from math.Erf written out
	for _, x := range []float64{-3, -1, -0.5, 0, 0.5, 1, 3} {
		out := []float64{0}
		geluForward(out, []float64{x})
		want := x * 0.5 * math.Erfc(-x/math.Sqrt2)
		if math.Abs(out[0]-want) > 1e-15 {
			t.Errorf("gelu(%g) = %.17g, want %.17g", x, out[0], want)
		}
	}
	// gelu(1) = Φ(1) = 0.8413447460685429 in the exact form; the tanh approximation gives
	// 0.8411919906082768, so this pins the form
	out := []float64{0}
	geluForward(out, []float64{1})
	if math.Abs(out[0]-0.8413447460685429) > 1e-15 {
		t.Errorf("gelu(1) = %.17g, want 0.8413447460685429 (exact erf form)", out[0])
	}
}

func TestGELUBackward(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	const n = 40
	x, g := randn(n, 2, rng), randn(n, 1, rng)
	out := make([]float64, n)
	loss := func() float64 { geluForward(out, x); return dot(g, out) }
	loss()
	dx := make([]float64, n)
	geluBackward(dx, g, x)
	fdCheck(t, "dx", x, dx, loss)
}

func TestBiasBackward(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	const n, w = 5, 7
	x, b, g := randn(n*w, 1, rng), randn(w, 1, rng), randn(n*w, 1, rng)
	out := make([]float64, n*w)
	loss := func() float64 { copy(out, x); biasForward(out, b); return dot(g, out) }
	loss()
	db := make([]float64, w)
	biasBackward(db, g)
	fdCheck(t, "db", b, db, loss)
}

func TestPositionBackward(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	const nb, nt, ctx, c = 3, 4, 6, 5
	x, wpe, g := randn(nb*nt*c, 1, rng), randn(ctx*c, 1, rng), randn(nb*nt*c, 1, rng)
	out := make([]float64, len(x))
	loss := func() float64 {
		copy(out, x)
		positionForward(out[:5*c], wpe, 0, nt, c) // two ranges, as the pool splits rows
		positionForward(out[5*c:], wpe, 5, nt, c)
		return dot(g, out)
	}
	loss()
	dwpe := make([]float64, ctx*c)
	positionBackward(dwpe, g, nb, nt, c, 0, 1)
	positionBackward(dwpe, g, nb, nt, c, 1, nt)
	fdCheck(t, "dwpe", wpe, dwpe, loss)
	for i := nt * c; i < ctx*c; i++ { // positions beyond seqLen get nothing
		if dwpe[i] != 0 {
			t.Fatalf("dwpe[%d] = %g, want 0", i, dwpe[i])
		}
	}
}

// TestGELUFloat32 compares the float32 GELU (the AVX-512 kernel where it runs) with the
// float64 one over [−12, 12], for lengths that exercise the tail mask.
func TestGELUFloat32(t *testing.T) {
	for _, n := range []int{1, 15, 16, 17, 2401} {
		x32, x64 := make([]float32, n), make([]float64, n)
		g32, g64 := make([]float32, n), make([]float64, n)
		for i := range n {
			x := -12 + 24*float64(i)/float64(max(n-1, 1))
			x32[i], x64[i] = float32(x), float64(float32(x))
			g := 1 + 0.5*math.Sin(float64(i))
			g32[i], g64[i] = float32(g), float64(float32(g))
		}
		o32, o64 := make([]float32, n), make([]float64, n)
		geluForward(o32, x32)
		geluForward(o64, x64)
		d32, d64 := make([]float32, n), make([]float64, n)
		geluBackward(d32, g32, x32)
		geluBackward(d64, g64, x64)
		var worstF, worstB float64
		for i := range n {
			// |x|·1.5e-7 from erf, plus float32 rounding of the result
			ef := math.Abs(float64(o32[i])-o64[i]) / (1e-7*math.Abs(x64[i]) + 2e-7*math.Abs(o64[i]) + 1e-30)
			eb := math.Abs(float64(d32[i])-d64[i]) / (2e-7*math.Abs(g64[i]) + 2e-7*math.Abs(d64[i]) + 1e-30)
			worstF, worstB = max(worstF, ef), max(worstB, eb)
			if ef > 1 || eb > 1 || math.IsNaN(float64(o32[i])) || math.IsNaN(float64(d32[i])) {
				t.Fatalf("n %d, x = %g: gelu %g (float64 %g), gradient %g (float64 %g)", n, x64[i], o32[i], o64[i], d32[i], d64[i])
			}
		}
		t.Logf("n %d (simd %v): worst error / tolerance: forward %.2f, backward %.2f", n, simd, worstF, worstB)
	}
	for _, x := range []float32{0, -1e30, 1e30, -200, 200} {
		out, dx := []float32{0}, []float32{0}
		geluForward(out, []float32{x})
		geluBackward(dx, []float32{1}, []float32{x})
		want, wantD := float32(0), float32(0)
		if x > 0 {
			want, wantD = x, 1
		}
		if x == 0 {
			wantD = 0.5
		}
		if out[0] != want || dx[0] != wantD {
			t.Errorf("gelu(%g) = %g, gradient %g; want %g, %g", x, out[0], dx[0], want, wantD)
		}
	}
}
