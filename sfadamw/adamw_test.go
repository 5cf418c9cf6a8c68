package sfadamw

import (
	"math"
	"testing"
)

// TestAdamWFirstStep checks the closed form of AdamW's first step: with bias correction,
// m̂_1/√v̂_1 = g/|g|, so p_1 = p_0(1−γλ) − γ g/(|g|+ε).
func TestAdamWFirstStep(t *testing.T) {
	p := []float64{1, -2, 0.5, 3}
	g := []float64{0.3, -4, 1e-3, 0}
	cfg := AdamWConfig{Schedule: Schedule{Kind: Constant, Peak: 0.01}, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1}
	want := make([]float64, len(p))
	for i := range p {
		want[i] = p[i]*(1-0.01*0.1) - 0.01*g[i]/(math.Abs(g[i])+1e-8)
	}
	o, err := NewAdamW(cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	o.Step(g)
	for i := range p {
		if math.Abs(p[i]-want[i]) > 1e-15 {
			t.Errorf("p[%d] = %.17g, want %.17g", i, p[i], want[i])
		}
	}
}

// TestAdamWMatchesPyTorchFormula compares many steps with torch.optim.AdamW's update written
// out directly (decay, moments, bias corrections, addcdiv), with a cosine schedule.
func TestAdamWMatchesPyTorchFormula(t *testing.T) {
	const n, steps = 13, 200
	cfg := AdamWConfig{Schedule: Schedule{Kind: Cosine, Peak: 0.01, WarmupSteps: 10, TotalSteps: steps, FinalFrac: 0.1},
		Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1}
	w := initialPoint(n)
	o, _ := NewAdamW(cfg, w)
	p := initialPoint(n)
	m, v, g := make([]float64, n), make([]float64, n), make([]float64, n)
	var worst float64
	for s := 1; s <= steps; s++ {
		copy(w, p) // compare one step at a time from the same point
		testGrad(p, g)
		o.Step(g)
		lr := cfg.Schedule.At(s)
		bc1 := 1 - math.Pow(0.9, float64(s))
		bc2 := 1 - math.Pow(0.95, float64(s))
		for i := range p {
			p[i] *= 1 - lr*0.1
			m[i] = 0.9*m[i] + 0.1*g[i]
			v[i] = 0.95*v[i] + 0.05*g[i]*g[i]
			p[i] -= lr / bc1 * m[i] / (math.Sqrt(v[i])/math.Sqrt(bc2) + 1e-8)
		}
		worst = math.Max(worst, maxRelDiff(w, p))
	}
	if worst > 1e-14 {
		t.Errorf("worst one-step difference from the PyTorch formula: %.3g", worst)
	}
}

func TestScheduleClosedForms(t *testing.T) {
	cos := Schedule{Kind: Cosine, Peak: 1e-3, WarmupSteps: 50, TotalSteps: 1050, FinalFrac: 0.1}
	lin := Schedule{Kind: Linear, Peak: 2, WarmupSteps: 10, TotalSteps: 110}
	wsd := Schedule{Kind: WSD, Peak: 1, WarmupSteps: 10, DecayStart: 500, DecaySteps: 100}
	sq := wsd
	sq.DecayShape = "sqrt"
	cst := Schedule{Kind: Constant, Peak: 3e-4, WarmupSteps: 4}
	cases := []struct {
		name string
		s    Schedule
		t    int
		want float64
	}{
		{"cos warmup", cos, 25, 0.5e-3},
		{"cos peak", cos, 50, 1e-3},
		{"cos half", cos, 550, (1e-3 + 1e-4) / 2},
		{"cos end", cos, 1050, 1e-4},
		{"cos past end", cos, 2000, 1e-4},
		{"lin half", lin, 60, 1},
		{"lin end", lin, 110, 0},
		{"wsd stable", wsd, 500, 1},
		{"wsd quarter", wsd, 525, 0.75},
		{"wsd end", wsd, 600, 0},
		{"wsd sqrt quarter", sq, 525, 0.5},
		{"const warmup", cst, 1, 0.75e-4},
		{"const", cst, 99, 3e-4},
	}
	for _, tc := range cases {
		if err := tc.s.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := tc.s.At(tc.t); math.Abs(got-tc.want) > 1e-15*math.Max(1, tc.want) {
			t.Errorf("%s: At(%d) = %g, want %g", tc.name, tc.t, got, tc.want)
		}
	}
	bad := []Schedule{
		{Kind: "step", Peak: 1},
		{Kind: Cosine, Peak: 1, WarmupSteps: 10, TotalSteps: 10},
		{Kind: Cosine, Peak: 1, TotalSteps: 10, FinalFrac: 2},
		{Kind: WSD, Peak: 1, WarmupSteps: 10, DecayStart: 5, DecaySteps: 1},
		{Kind: WSD, Peak: 1, DecayStart: 5},
		{Kind: Constant, Peak: -1},
	}
	for _, s := range bad {
		if s.Validate() == nil {
			t.Errorf("accepted %+v", s)
		}
	}
}

// TestGradientClipping checks the norm against a plain float64 sum, and that a clipped step
// equals an unclipped step with the gradient scaled to max_norm/(norm+1e-6).
func TestGradientClipping(t *testing.T) {
	const n = 100_003
	g := make([]float32, n)
	var want float64
	for i := range g {
		g[i] = float32(math.Sin(float64(i)*0.37) * 0.01)
		want += float64(g[i]) * float64(g[i])
	}
	want = math.Sqrt(want)
	if got := GradNorm(g); math.Abs(got-want) > 1e-12*want {
		t.Fatalf("GradNorm = %.15g, want %.15g", got, want)
	}
	const maxNorm = 0.5
	scale := float32(maxNorm / (want + 1e-6))
	scaled := make([]float32, n)
	for i := range g {
		scaled[i] = g[i] * scale
	}
	cfg := DefaultAdamWConfig(100)
	cfg.GradClip = maxNorm
	pa, pb := make([]float32, n), make([]float32, n)
	a, _ := NewAdamW(cfg, pa)
	cfg.GradClip = 0
	b, _ := NewAdamW(cfg, pb)
	for range 3 {
		a.Step(g)
		b.Step(scaled)
	}
	for i := range pa {
		if math.Abs(float64(pa[i]-pb[i])) > 1e-6*math.Max(1e-3, math.Abs(float64(pb[i]))) {
			t.Fatalf("param %d: clipped %g vs pre-scaled %g", i, pa[i], pb[i])
		}
	}
	if a.GradNorm() == 0 || math.Abs(a.GradNorm()-want) > 1e-12*want {
		t.Errorf("GradNorm() after step = %g, want %g", a.GradNorm(), want)
	}
}
