package analysis

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sfsweep/sfsweep/sfadamw"
)

func TestWeightsSumToOne(t *testing.T) {
	tests := []struct {
		name string
		c    []float64
		beta float64
	}{
		{"vanilla beta=0", VanillaC(100), 0},
		{"vanilla beta=0.9", VanillaC(1000), 0.9},
		{"vanilla beta=0.999", VanillaC(5000), 0.999},
		{"refined C=50", RefinedC(1000, 0.9, 50), 0.9},
		{"refined C=200 beta=0.1", RefinedC(1000, 0.1, 200), 0.1},
		{"refined C=1 beta=0.5", RefinedC(300, 0.5, 1), 0.5},
		{"single", []float64{1}, 0.3},
		{"c=1 twice", []float64{1, 0.5, 1, 0.25}, 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Weights(tt.c, tt.beta)
			if err != nil {
				t.Fatal(err)
			}
			var sum float64
			for i, v := range a {
				if v < 0 || math.IsNaN(v) {
					t.Fatalf("alpha_%d = %v", i+1, v)
				}
				sum += v
			}
			if math.Abs(sum-1) > 1e-12 {
				t.Errorf("sum of weights = %.16g, want 1", sum)
			}
		})
	}
}

// TestWeightsRecursion checks Weights against the paper's recursion
// x_t = ((1−c_t)(1−β)x_{t−1} + c_t y_t)/((1−c_t)(1−β) + c_t) applied to unit vectors y_t = e_t,
// which yields each α_t directly (O(T²), independent of the suffix products).
func TestWeightsRecursion(t *testing.T) {
	for _, beta := range []float64{0, 0.5, 0.95} {
		c := RefinedC(60, beta, 7)
		c[10], c[20] = 1, 0 // any admissible c_t, including the extremes
		x := make([]float64, len(c))
		for tt := range c {
			den := (1-c[tt])*(1-beta) + c[tt]
			for i := range tt {
				x[i] *= (1 - c[tt]) * (1 - beta) / den
			}
			x[tt] = c[tt] / den
		}
		a, err := Weights(c, beta)
		if err != nil {
			t.Fatal(err)
		}
		for i := range a {
			if math.Abs(a[i]-x[i]) > 1e-14 {
				t.Errorf("beta=%v: alpha_%d = %v, recursion gives %v", beta, i+1, a[i], x[i])
			}
		}
	}
}

func TestWeightsInvalid(t *testing.T) {
	tests := []struct {
		name string
		c    []float64
		beta float64
	}{
		{"empty", nil, 0.5},
		{"c1 not one", []float64{0.5, 0.5}, 0.5},
		{"c above one", []float64{1, 1.5}, 0.5},
		{"c negative", []float64{1, -0.1}, 0.5},
		{"c NaN", []float64{1, math.NaN()}, 0.5},
		{"beta one", []float64{1}, 1},
		{"beta NaN", []float64{1}, math.NaN()},
	}
	for _, tt := range tests {
		if _, err := Weights(tt.c, tt.beta); err == nil {
			t.Errorf("%s: Weights accepted c=%v beta=%v", tt.name, tt.c, tt.beta)
		}
	}
}

// TestApproxWeights bounds the error of the closed form α_t ≈ (C/T)(t/T)^{C−1} (paper
// appendix C.4). Measured total-variation distances are ≈ 0.32·C/T for C ≥ 5 (C = 200:
// 0.052–0.063 at T = 1000, 0.010–0.013 at T = 5000) and ≤ 0.98e-3 at T = 1000 for C ≤ 2;
// the test holds every case to TV ≤ 0.35·max(C, 3)/T, i.e. O(C/T), and checks the error
// shrinks about fivefold from T = 1000 to T = 5000.
func TestApproxWeights(t *testing.T) {
	for _, beta := range []float64{0.1, 0.5, 0.9, 0.95, 0.98} {
		cases := []struct {
			name string
			c    func(T int) []float64
			C    float64
		}{{"vanilla", VanillaC, 1 / (1 - beta)}}
		for _, C := range []float64{1, 2, 5, 20, 50, 200} {
			cases = append(cases, struct {
				name string
				c    func(T int) []float64
				C    float64
			}{"refined", func(T int) []float64 { return RefinedC(T, beta, C) }, C})
		}
		for _, cs := range cases {
			var tv [2]float64
			for i, T := range []int{1000, 5000} {
				a, err := Weights(cs.c(T), beta)
				if err != nil {
					t.Fatal(err)
				}
				tv[i] = TotalVariation(a, ApproxWeights(T, cs.C))
				if bound := 0.35 * math.Max(cs.C, 3) / float64(T); tv[i] > bound {
					t.Errorf("%s beta=%v C=%v T=%d: TV = %.4g > %.4g", cs.name, beta, cs.C, T, tv[i], bound)
				}
			}
			if r := tv[0] / tv[1]; r < 3.5 {
				t.Errorf("%s beta=%v C=%v: TV shrinks only %.3gx from T=1000 to 5000", cs.name, beta, cs.C, r)
			}
		}
	}
}

// TestWeightsMatchOptimizer runs the Schedule-Free recursion of package sfadamw on random
// directions and checks that its averaged iterate x_{T+1} is Σ α_t y_t with the weights
// computed from the c_t the optimizer reports (c_1 = 1, c_{t+1} = LastC() of step t).
func TestWeightsMatchOptimizer(t *testing.T) {
	tests := []struct {
		name string
		cfg  sfadamw.SFConfig
	}{
		{"vanilla", sfadamw.SFConfig{LR: 0.1, Beta: 0.9}},
		{"vanilla beta=0.1", sfadamw.SFConfig{LR: 0.05, Beta: 0.1}},
		{"warmup", sfadamw.SFConfig{LR: 0.1, Beta: 0.5, WarmupSteps: 40}},
		{"refined", sfadamw.SFConfig{LR: 0.1, Beta: 0.9, C: 20}},
		{"refined warmup", sfadamw.SFConfig{LR: 0.1, Beta: 0.95, C: 200, WarmupSteps: 25}},
		{"keepx", sfadamw.SFConfig{LR: 0.1, Beta: 0.7, C: 3, KeepX: true}},
	}
	const n, T = 5, 300
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			params := make([]float64, n)
			for i := range params {
				params[i] = rng.NormFloat64()
			}
			opt, err := sfadamw.NewSF(tt.cfg, params)
			if err != nil {
				t.Fatal(err)
			}
			ys := [][]float64{append([]float64(nil), params...)}
			cs := []float64{1}
			delta := make([]float64, n)
			for range T {
				for i := range delta {
					delta[i] = rng.NormFloat64()
				}
				opt.Update(delta)
				ys = append(ys, append([]float64(nil), params...))
				cs = append(cs, opt.LastC())
			}
			alpha, err := Weights(cs, tt.cfg.Beta)
			if err != nil {
				t.Fatal(err)
			}
			x := make([]float64, n)
			opt.X(x)
			// The paper's c_t = 1/t, shifted by one step from Algorithm 1's c_{t+1} = 1/t,
			// must not match: this guards the test against being insensitive to the c's.
			if tt.cfg.C == 0 && tt.cfg.WarmupSteps == 0 {
				shifted, _ := Weights(VanillaC(T+1), tt.cfg.Beta)
				var off float64
				for i := range n {
					var avg float64
					for t := range ys {
						avg += shifted[t] * ys[t][i]
					}
					off = math.Max(off, math.Abs(avg-x[i]))
				}
				if off < 1e-6 {
					t.Errorf("weights with c_t = 1/t also match (diff %.3g); the check is insensitive", off)
				}
			}
			var worst float64
			defer func() { t.Logf("max |x_{T+1} − Σ α_t y_t| = %.3g", worst) }()
			for i := range n {
				var avg float64
				for t := range ys {
					avg += alpha[t] * ys[t][i]
				}
				d := math.Abs(avg - x[i])
				worst = math.Max(worst, d)
				if d > 1e-12*(1+math.Abs(x[i])) {
					t.Errorf("x_{T+1}[%d] = %.16g, Σ α_t y_t = %.16g (diff %.3g)", i, x[i], avg, d)
				}
			}
		})
	}
}
