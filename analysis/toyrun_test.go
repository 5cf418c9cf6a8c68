package analysis

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/fielderr"
)

// refToyRun is a direct transcription of Algorithm 1 / Algorithm 2 of the paper on the toy
// model, independent of package sfadamw, returning x_t, y_t, z_t for t = 1..T+1.
func refToyRun(cfg ToyConfig) (xs, ys, zs []Vec2) {
	x, z := cfg.Init, cfg.Init
	var v Vec2
	var sumLR2 float64
	for t := 1; t <= cfg.Steps+1; t++ {
		var y Vec2
		for i := range 2 {
			y[i] = (1-cfg.Beta1)*z[i] + cfg.Beta1*x[i]
		}
		xs, ys, zs = append(xs, x), append(ys, y), append(zs, z)
		if t > cfg.Steps {
			break
		}
		g := ToyGrad(y)
		lr := cfg.LR
		if cfg.WarmupSteps > 0 {
			lr *= math.Min(1, float64(t)/float64(cfg.WarmupSteps))
		}
		sumLR2 += lr * lr
		c := lr * lr / sumLR2
		if cfg.C > 0 {
			c = math.Min(c*(1-cfg.Beta1)*cfg.C, 1)
		}
		for i := range 2 {
			v[i] = cfg.Beta2*v[i] + (1-cfg.Beta2)*g[i]*g[i]
			vhat := v[i] / (1 - math.Pow(cfg.Beta2, float64(t)))
			z[i] -= lr*g[i]/(math.Sqrt(vhat)+cfg.Eps) + lr*cfg.WeightDecay*y[i]
			x[i] = (1-c)*x[i] + c*z[i]
		}
	}
	return xs, ys, zs
}

func TestRunToyMatchesAlgorithm1(t *testing.T) {
	tests := []struct {
		name string
		cfg  ToyConfig
	}{
		{"vanilla", DefaultToyConfig(0.9)},
		{"beta1=0.1", DefaultToyConfig(0.1)},
		{"warmup+wd", ToyConfig{Beta1: 0.5, Beta2: 0.99, LR: 0.02, Eps: 1e-8, WeightDecay: 0.01, WarmupSteps: 50, Steps: 300, Init: Vec2{2, 2}}},
		{"refined", ToyConfig{Beta1: 0.9, Beta2: 0.999, LR: 0.01, Eps: 1e-6, C: 50, Steps: 300, Init: Vec2{1.5, -0.5}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// At the Edge of Stability the period-two oscillation amplifies rounding
			// differences between two exact implementations (measured: 2e-8 after 2000
			// steps); over the first 500 steps they stay at 6e-15.
			tt.cfg.Steps = min(tt.cfg.Steps, 500)
			run, err := RunToy(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			xs, ys, zs := refToyRun(tt.cfg)
			steps := append(append([]ToyStep(nil), run.Steps...), run.Final)
			if len(steps) != len(xs) {
				t.Fatalf("%d states recorded, want %d", len(steps), len(xs))
			}
			const tol = 1e-12
			var worst float64
			defer func() { t.Logf("max deviation from Algorithm 1: %.3g", worst) }()
			for i, s := range steps {
				for k := range 2 {
					worst = math.Max(worst, math.Max(math.Abs(s.X[k]-xs[i][k]), math.Max(math.Abs(s.Y[k]-ys[i][k]), math.Abs(s.Z[k]-zs[i][k]))))
					if math.Abs(s.X[k]-xs[i][k]) > tol || math.Abs(s.Y[k]-ys[i][k]) > tol || math.Abs(s.Z[k]-zs[i][k]) > tol {
						t.Fatalf("step %d: (x, y, z) = (%v, %v, %v), Algorithm 1 gives (%v, %v, %v)", s.T, s.X, s.Y, s.Z, xs[i], ys[i], zs[i])
					}
				}
				if s.T != i+1 {
					t.Fatalf("state %d has t = %d", i, s.T)
				}
			}
			if s := run.Steps[0]; s.CNext != 1 {
				t.Errorf("c_2 = %v, want 1 (x_2 = z_2)", s.CNext)
			}
		})
	}
}

// meanDist returns the mean of f over the second half of the run.
func meanSecondHalf(run *ToyRun, f func(ToyStep) float64) float64 {
	var s float64
	half := run.Steps[len(run.Steps)/2:]
	for _, st := range half {
		s += f(st)
	}
	return s / float64(len(half))
}

// TestToyFinding checks the qualitative finding of the paper's fig:toy_model with the default
// settings: y oscillates (period two) around the river for every β1, with its centre on the
// river, while x drifts off the river for β1 ∈ {0.1, 0.5} and stays close for β1 = 0.9.
//
// Measured (γ = 0.03, 2000 steps, second half of the run): mean river distance of x is
// 0.098, 0.037, 0.0015 and of y 0.014, 0.008, 0.0014 for β1 = 0.1, 0.5, 0.9; the sign of
// w⁽¹⁾w⁽²⁾ − 1 at y flips on ≥ 96% of the steps.
func TestToyFinding(t *testing.T) {
	dist := map[float64][2]float64{}
	for _, b1 := range DefaultToyBeta1s {
		run, err := RunToy(DefaultToyConfig(b1))
		if err != nil {
			t.Fatal(err)
		}
		dx := meanSecondHalf(run, func(s ToyStep) float64 { return s.DistX })
		dy := meanSecondHalf(run, func(s ToyStep) float64 { return s.DistY })
		dist[b1] = [2]float64{dx, dy}
		// The centre of the oscillation: average consecutive y's, which cancels a
		// period-two oscillation, and measure its distance from the river.
		var dc float64
		flips, n := 0, 0
		half := run.Steps[len(run.Steps)/2:]
		for i := 1; i < len(half); i++ {
			a, b := half[i-1].Y, half[i].Y
			dc += RiverDistance(Vec2{(a[0] + b[0]) / 2, (a[1] + b[1]) / 2})
			if (a[0]*a[1]-1)*(b[0]*b[1]-1) < 0 {
				flips++
			}
			n++
		}
		dc /= float64(n)
		t.Logf("beta1=%v: mean dist x=%.4g y=%.4g centre of y=%.3g flips=%d/%d", b1, dx, dy, dc, flips, n)
		if dy > 0.02 {
			t.Errorf("beta1=%v: y is %.4g from the river on average, want < 0.02", b1, dy)
		}
		if dc > dy/3 {
			t.Errorf("beta1=%v: centre of the y oscillation %.3g from the river, want < %.3g (a third of y's)", b1, dc, dy/3)
		}
		if flips < 9*n/10 {
			t.Errorf("beta1=%v: y crosses the river on %d of %d steps, want a period-two oscillation (≥ 90%%)", b1, flips, n)
		}
	}
	if dist[0.1][0] < 0.05 || dist[0.5][0] < 0.02 {
		t.Errorf("x should drift off the river for beta1 ∈ {0.1, 0.5}: mean distances %.4g, %.4g", dist[0.1][0], dist[0.5][0])
	}
	if dist[0.9][0] > dist[0.1][0]/20 || dist[0.9][0] > 0.005 {
		t.Errorf("x should stay on the river for beta1 = 0.9: mean distance %.4g (beta1 = 0.1: %.4g)", dist[0.9][0], dist[0.1][0])
	}
	for _, b1 := range []float64{0.1, 0.5} {
		if dist[b1][1] > dist[b1][0]/3 {
			t.Errorf("beta1=%v: y (%.4g) should be much closer to the river than x (%.4g)", b1, dist[b1][1], dist[b1][0])
		}
	}
}

func TestToyConfigValidate(t *testing.T) {
	base := DefaultToyConfig(0.9)
	tests := []struct {
		name  string
		edit  func(*ToyConfig)
		field string
	}{
		{"lr zero", func(c *ToyConfig) { c.LR = 0 }, "lr"},
		{"lr negative", func(c *ToyConfig) { c.LR = -1 }, "lr"},
		{"lr NaN", func(c *ToyConfig) { c.LR = math.NaN() }, "lr"},
		{"beta1 one", func(c *ToyConfig) { c.Beta1 = 1 }, "beta1"},
		{"beta1 negative", func(c *ToyConfig) { c.Beta1 = -0.1 }, "beta1"},
		{"beta1 NaN", func(c *ToyConfig) { c.Beta1 = math.NaN() }, "beta1"},
		{"beta2 above", func(c *ToyConfig) { c.Beta2 = 1.5 }, "beta2"},
		{"eps zero", func(c *ToyConfig) { c.Eps = 0 }, "eps"},
		{"C negative", func(c *ToyConfig) { c.C = -2 }, "c"},
		{"C NaN", func(c *ToyConfig) { c.C = math.NaN() }, "c"},
		{"wd negative", func(c *ToyConfig) { c.WeightDecay = -1 }, "weight_decay"},
		{"warmup negative", func(c *ToyConfig) { c.WarmupSteps = -3 }, "warmup_steps"},
		{"steps zero", func(c *ToyConfig) { c.Steps = 0 }, "steps"},
		{"init NaN", func(c *ToyConfig) { c.Init[1] = math.NaN() }, "init[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base
			tt.edit(&cfg)
			_, err := RunToy(cfg)
			var ce *fielderr.Error
			if !errors.As(err, &ce) {
				t.Fatalf("RunToy error = %v, want a *fielderr.Error", err)
			}
			if ce.Field != tt.field || !strings.Contains(err.Error(), tt.field+" = ") {
				t.Errorf("error %q names field %q, want %q", err, ce.Field, tt.field)
			}
			if ce.Reason == "" {
				t.Errorf("error %q does not state the valid range", err)
			}
		})
	}
	if err := base.Validate(); err != nil {
		t.Errorf("default config invalid: %v", err)
	}
}

func TestRunToyDiverges(t *testing.T) {
	// A learning rate of 1e200 sends z to ~1e200 in one step; w⁽¹⁾w⁽²⁾ then overflows.
	cfg := DefaultToyConfig(0.1)
	cfg.LR, cfg.Steps = 1e200, 10
	run, err := RunToy(cfg)
	if err != nil {
		t.Fatalf("a diverging run is a result, got error %v", err)
	}
	if run.DivergedAt < 1 || run.DivergedAt > cfg.Steps+1 || len(run.Steps) != run.DivergedAt-1 {
		t.Fatalf("DivergedAt = %d with %d finite steps recorded", run.DivergedAt, len(run.Steps))
	}
	for _, st := range run.Steps {
		if !finite(st.X) || !finite(st.Y) || !finite(st.Z) {
			t.Fatalf("step %d recorded non-finite iterates", st.T)
		}
	}
	if sum := run.Summary(); sum.DivergedAt != run.DivergedAt {
		t.Errorf("summary DivergedAt = %d, want %d", sum.DivergedAt, run.DivergedAt)
	}
	if _, err := EoS(cfg); !errors.Is(err, ErrDiverged) {
		t.Errorf("EoS of a diverged run: error %v, want ErrDiverged", err)
	}
}

func TestToyRunWriters(t *testing.T) {
	cfg := DefaultToyConfig(0.5)
	cfg.Steps = 50
	run, err := RunToy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var j1, j2, c1, c2 bytes.Buffer
	if err := run.WriteJSON(&j1); err != nil {
		t.Fatal(err)
	}
	if err := run.WriteCSV(&c1); err != nil {
		t.Fatal(err)
	}
	again, _ := RunToy(cfg)
	again.WriteJSON(&j2)
	again.WriteCSV(&c2)
	if !bytes.Equal(j1.Bytes(), j2.Bytes()) || !bytes.Equal(c1.Bytes(), c2.Bytes()) {
		t.Error("outputs of two identical runs differ")
	}
	var back ToyRun
	if err := json.Unmarshal(j1.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Steps) != 50 || back.Steps[49] != run.Steps[49] || back.Config != cfg {
		t.Errorf("JSON round trip lost data")
	}
	recs, err := csv.NewReader(&c1).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 51 || strings.Join(recs[0], ",") != strings.Join(toyCSVHeader, ",") {
		t.Fatalf("CSV has %d rows, header %v", len(recs), recs[0])
	}
	for i, s := range run.Steps {
		y1, _ := strconv.ParseFloat(recs[i+1][3], 64)
		if got, _ := strconv.Atoi(recs[i+1][0]); got != s.T || y1 != s.Y[0] {
			t.Fatalf("CSV row %d = %v, want t=%d y1=%v", i+1, recs[i+1], s.T, s.Y[0])
		}
	}
}
