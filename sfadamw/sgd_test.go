package sfadamw

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// randomQuadratic returns a symmetric positive semi-definite H = Q diag(eig) Qᵀ with a random
// rotation Q, and a random linear term g.
func randomQuadratic(rng *rand.Rand, eig []float64) (*mat.SymDense, []float64) {
	n := len(eig)
	a := mat.NewDense(n, n, nil)
	for i := range n {
		for j := range n {
			a.Set(i, j, rng.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(a)
	var q mat.Dense
	qr.QTo(&q)
	h := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			var s float64
			for k := range n {
				s += q.At(i, k) * eig[k] * q.At(j, k)
			}
			h.SetSym(i, j, s)
		}
	}
	g := make([]float64, n)
	for i := range g {
		g[i] = rng.NormFloat64()
	}
	return h, g
}

// runQuadratic runs SF-(Precond)GD(W) on f(w) = ½wᵀHw + gᵀw and returns the largest |x_t|
// over the last 100 of the given steps (Inf if the run overflowed).
func runQuadratic(t *testing.T, cfg SGDConfig, h *mat.SymDense, lin []float64, steps int) float64 {
	t.Helper()
	n := len(lin)
	w := make([]float64, n)
	for i := range w {
		w[i] = 1
	}
	o, err := NewSGD(cfg, w)
	if err != nil {
		t.Fatal(err)
	}
	grad, x := make([]float64, n), make([]float64, n)
	gv := mat.NewVecDense(n, grad)
	var worst float64
	for s := 1; s <= steps; s++ {
		gv.MulVec(h, mat.NewVecDense(n, w))
		for i := range grad {
			grad[i] += lin[i]
		}
		o.Step(grad)
		if s > steps-100 {
			o.X(x)
			for _, v := range x {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return math.Inf(1)
				}
				worst = math.Max(worst, math.Abs(v))
			}
		}
	}
	return worst
}

// TestProposition41 checks the stability threshold of SF-GD on quadratics: the iterates
// diverge when λ1(H) > 2/((1−β)γ) and stay bounded below it, for several β.
func TestProposition41(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, beta := range []float64{0, 0.5, 0.9, 0.95} {
		const gamma = 0.1
		threshold := 2 / ((1 - beta) * gamma)
		for _, r := range []float64{0.95, 1.05} {
			eig := []float64{r * threshold, 0.5 * threshold, 0.1 * threshold, 1, 0.2}
			h, lin := randomQuadratic(rng, eig)
			cfg := SGDConfig{SFConfig: SFConfig{LR: gamma, Beta: beta}}
			got := runQuadratic(t, cfg, h, lin, 3000)
			diverged := got > 1e8
			if diverged != (r > 1) {
				t.Errorf("β=%g, λ1 = %.2f × 2/((1−β)γ): max |x| over the last steps = %.3g, diverged = %v, want %v",
					beta, r, got, diverged, r > 1)
			}
		}
	}
}

// TestProposition42 checks the threshold of SF-PrecondGDW, Δ = P⁻¹∇f(y) + λy: divergence
// when λ1(P⁻¹H) > 2/((1−β)γ) − λ, boundedness below. λ1(P⁻¹H) is computed independently
// as the top eigenvalue of the symmetric P^{-1/2} H P^{-1/2}.
func TestProposition42(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 6
	for _, tc := range []struct{ beta, wd float64 }{{0.9, 0.1}, {0.5, 0.5}, {0.95, 0.0}} {
		eig := []float64{40, 15, 7, 3, 1, 0.3}
		h, lin := randomQuadratic(rng, eig)
		p := make([]float64, n)
		for i := range p {
			p[i] = 0.5 + 2*rng.Float64()
		}
		s := mat.NewSymDense(n, nil)
		for i := range n {
			for j := i; j < n; j++ {
				s.SetSym(i, j, h.At(i, j)/math.Sqrt(p[i]*p[j]))
			}
		}
		var es mat.EigenSym
		if !es.Factorize(s, false) {
			t.Fatal("eigen decomposition failed")
		}
		vals := es.Values(nil)
		lam1 := vals[len(vals)-1]
		for _, r := range []float64{0.95, 1.05} {
			// choose γ so that λ1(P⁻¹H) = r · (2/((1−β)γ) − λ)
			gamma := 2 / ((1 - tc.beta) * (lam1/r + tc.wd))
			cfg := SGDConfig{SFConfig: SFConfig{LR: gamma, Beta: tc.beta}, WeightDecay: tc.wd, Precond: p}
			got := runQuadratic(t, cfg, h, lin, 3000)
			if diverged := got > 1e8; diverged != (r > 1) {
				t.Errorf("β=%g λ=%g, λ1(P⁻¹H) = %.2f × threshold: max |x| = %.3g, diverged = %v, want %v",
					tc.beta, tc.wd, r, got, diverged, r > 1)
			}
		}
	}
}

// TestSGDMatchesAlgorithm checks the generic recursion against the transcription of
// Algorithm 1 with the AdamW direction replaced by the plain gradient: SF-SGD with weight
// decay λ is Algorithm 1 with g/(√v̂+ε) replaced by g.
func TestSGDMatchesAlgorithm(t *testing.T) {
	const n, steps = 9, 300
	cfg := SGDConfig{SFConfig: SFConfig{LR: 0.05, Beta: 0.8, WarmupSteps: 30, C: 12}, WeightDecay: 0.05}
	w := initialPoint(n)
	o, err := NewSGD(cfg, w)
	if err != nil {
		t.Fatal(err)
	}
	x, z := initialPoint(n), initialPoint(n)
	y := initialPoint(n)
	g, ox := make([]float64, n), make([]float64, n)
	var sumSq float64
	for s := 1; s <= steps; s++ {
		testGrad(y, g)
		o.Step(g)
		gamma := cfg.LR * math.Min(1, float64(s)/float64(cfg.WarmupSteps))
		for i := range z {
			z[i] -= gamma * (g[i] + cfg.WeightDecay*y[i])
		}
		sumSq += gamma * gamma
		c := math.Min(gamma*gamma/sumSq*(1-cfg.Beta)*cfg.C, 1)
		for i := range x {
			x[i] = (1-c)*x[i] + c*z[i]
			y[i] = (1-cfg.Beta)*z[i] + cfg.Beta*x[i]
		}
	}
	o.X(ox)
	if d := math.Max(maxRelDiff(w, y), maxRelDiff(ox, x)); d > 1e-11 {
		t.Errorf("SF-SGD differs from the SF recursion by %.3g", d)
	}
}
