package sfadamw

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/sfsweep/sfsweep/fielderr"
)

// TestAlgorithm1ByHand checks two steps of SF-AdamW on f(w) = w²/2 from x_1 = 1 against
// values worked out by hand from the paper's Algorithm 1 (γ = 0.1, β1 = 0.5, β2 = 0.9).
func TestAlgorithm1ByHand(t *testing.T) {
	o, w, z2 := firstStepByHand(t)
	want := map[string][2]float64{"y2": {w[0], z2}, "z2": {o.Z()[0], z2}, "c2": {o.LastC(), 1}}
	// Step 2: g = y_2, v_2 = 0.9·0.1 + 0.1·y_2², v̂ = v_2/(1−0.81), z_3 = z_2 − 0.1·g/(√v̂+ε),
	// c_3 = 1/2, x_3 = (x_2 + z_3)/2, y_3 = (z_3 + x_3)/2.
	g := w[0]
	o.Step([]float64{g})
	v2 := 0.9*0.1 + 0.1*g*g
	z3 := z2 - 0.1*g/(math.Sqrt(v2/0.19)+handEps)
	x3 := (z2 + z3) / 2
	y3 := (z3 + x3) / 2
	x := []float64{0}
	o.X(x)
	want["z3"] = [2]float64{o.Z()[0], z3}
	want["x3"] = [2]float64{x[0], x3}
	want["y3"] = [2]float64{w[0], y3}
	want["c3"] = [2]float64{o.LastC(), 0.5}
	for name, p := range want {
		if math.Abs(p[0]-p[1]) > 1e-15 {
			t.Errorf("%s = %.17g, want %.17g (by hand)", name, p[0], p[1])
		}
	}
}

// handEps is the ε of the steps worked out by hand.
const handEps = 1e-8

// firstStepByHand takes the first step of TestAlgorithm1ByHand: from y_1 = 1, g = 1,
// v_1 = 0.1, v̂ = 1, z_2 = 1 − 0.1/(1+ε), c_2 = 1, x_2 = z_2, y_2 = z_2. It returns the
// optimizer, its parameters (y_2) and z_2.
func firstStepByHand(t *testing.T) (*SFAdamW[float64], []float64, float64) {
	t.Helper()
	w := []float64{1}
	o, err := New(Config{LR: 0.1, Beta1: 0.5, Beta2: 0.9, Eps: handEps}, w)
	if err != nil {
		t.Fatal(err)
	}
	o.Step([]float64{w[0]})
	return o, w, 1 - 0.1/(1+handEps)
}

// referenceCases are the configurations checked against the transcription of Algorithms 1–2.
var referenceCases = []struct {
	name string
	cfg  Config
}{
	{"vanilla", Config{LR: 0.05, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1, WarmupSteps: 20}},
	{"vanilla-beta1-0.1", Config{LR: 0.05, Beta1: 0.1, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1, WarmupSteps: 10}},
	{"refined-C50", Config{LR: 0.05, Beta1: 0.95, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1, WarmupSteps: 20, C: 50}},
	{"refined-C200-capped", Config{LR: 0.02, Beta1: 0.9, Beta2: 0.999, Eps: 1e-6, C: 200}},
	{"beta1-0", Config{LR: 0.05, Beta1: 0, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1, WarmupSteps: 5}},
	{"keepx", Config{LR: 0.05, Beta1: 0.5, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1, KeepX: true}},
}

// TestMatchesReferenceTrajectory runs the y-form optimizer and the line-by-line x/y/z
// transcription of Algorithms 1 and 2 side by side, each on its own trajectory. The horizon
// uses γ ≤ 0.01 because at larger steps Adam's g/(√v̂+ε) amplifies rounding differences
// chaotically once gradient components oscillate around zero (measured at γ = 0.05, β1 = 0.5:
// 1e-15 at step 50, 1e-3 by step 150; at γ = 0.01: ≤ 2e-13 up to step 350).
// TestMatchesReferenceEveryStep covers the large steps.
func TestMatchesReferenceTrajectory(t *testing.T) {
	for _, tc := range referenceCases {
		t.Run(tc.name, func(t *testing.T) {
			const n, steps = 37, 200
			cfg := tc.cfg
			cfg.LR = math.Min(cfg.LR, 0.01) // below the chaotic regime
			w := initialPoint(n)
			ref := newRef(cfg, w)
			o, err := New(cfg, w)
			if err != nil {
				t.Fatal(err)
			}
			g, x := make([]float64, n), make([]float64, n)
			for s := 1; s <= steps; s++ {
				testGrad(w, g)
				o.Step(g)
				testGrad(ref.y, g) // the reference takes its own gradient at its own y
				ref.step(g)
				if math.Abs(o.LastC()-ref.lastC) > 1e-15 {
					t.Fatalf("step %d: c = %g, reference %g", s, o.LastC(), ref.lastC)
				}
			}
			o.X(x)
			for name, pair := range map[string][2][]float64{"y": {w, ref.y}, "z": {o.Z(), ref.z}, "x": {x, ref.x}} {
				if d := maxRelDiff(pair[0], pair[1]); d > 1e-11 {
					t.Errorf("%s differs from Algorithm 1/2 by %.3g (relative) after %d steps", name, d, steps)
				}
			}
		})
	}
}

// TestMatchesReferenceEveryStep follows the reference for 400 steps and, before every step,
// loads the reference's exact state (y into the parameters; z, v, x and the scalars through
// Restore), so each step of the optimizer is compared with Algorithm 1/2 from the same point.
func TestMatchesReferenceEveryStep(t *testing.T) {
	for _, tc := range referenceCases {
		t.Run(tc.name, func(t *testing.T) {
			const n, steps = 37, 400
			w := initialPoint(n)
			ref := newRef(tc.cfg, w)
			o, err := New(tc.cfg, w)
			if err != nil {
				t.Fatal(err)
			}
			g, x := make([]float64, n), make([]float64, n)
			var worst float64
			for s := 1; s <= steps; s++ {
				copy(w, ref.y)
				st := State[float64]{Algorithm: "sfadamw", Step: int64(ref.t), SumLR2: ref.sumSq}
				if tc.cfg.Beta1 > 0 {
					st.Vectors = append(st.Vectors, Vector[float64]{"z", ref.z})
				}
				if tc.cfg.Beta1 == 0 || tc.cfg.KeepX {
					st.Vectors = append(st.Vectors, Vector[float64]{"x", ref.x})
				}
				st.Vectors = append(st.Vectors, Vector[float64]{"v", ref.v})
				if err := o.Restore(st); err != nil {
					t.Fatal(err)
				}
				testGrad(ref.y, g)
				o.Step(g)
				ref.step(g)
				o.X(x)
				for _, d := range []float64{maxRelDiff(w, ref.y), maxRelDiff(o.Z(), ref.z), maxRelDiff(x, ref.x)} {
					worst = math.Max(worst, d)
				}
			}
			// x recovered as (y − (1−β1)z)/β1 loses log10(1/β1) digits.
			tol := 1e-14
			if tc.cfg.Beta1 > 0 && !tc.cfg.KeepX {
				tol /= tc.cfg.Beta1
			}
			if worst > tol {
				t.Errorf("worst one-step difference from Algorithm 1/2 over %d steps: %.3g (relative), want ≤ %.1g", steps, worst, tol)
			}
		})
	}
}

// TestRefinedWithVanillaC checks that refined SF-AdamW with C = 1/(1−β1) follows the vanilla
// trajectory (to rounding: (1−β1)·C is not exactly 1 in floating point), and that Canonical
// identifies the two.
func TestRefinedWithVanillaC(t *testing.T) {
	for _, b1 := range []float64{0.1, 0.5, 0.9, 0.95, 0.98} {
		base := Config{LR: 0.03, Beta1: b1, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1, WarmupSteps: 25}
		refined := base
		refined.C = 1 / (1 - b1)
		wa, wb := initialPoint(20), initialPoint(20)
		a, _ := New(base, wa)
		b, _ := New(refined, wb)
		g := make([]float64, 20)
		for s := 0; s < 500; s++ {
			testGrad(wa, g)
			a.Step(g)
			testGrad(wb, g)
			b.Step(g)
		}
		if d := maxRelDiff(wa, wb); d > 1e-12 {
			t.Errorf("β1=%g: refined with C=1/(1−β1) differs from vanilla by %.3g", b1, d)
		}
		if !refined.IsVanilla() || !reflect.DeepEqual(refined.Canonical(), base) {
			t.Errorf("β1=%g: Canonical(%+v) = %+v, want the vanilla config", b1, refined, refined.Canonical())
		}
		other := base
		other.C = 1/(1-b1) + 7
		if other.IsVanilla() || other.Canonical().C != other.C {
			t.Errorf("β1=%g: C=%g treated as vanilla", b1, other.C)
		}
	}
}

// TestReformulationSFy checks the paper's reformulation (SF_y): with m_t = (1−c_t)m_{t−1} + Δ_t,
// y_{t+1} = y_t − γ[β c_{t+1} m_t + (1−β)Δ_t], and x_t is the weighted average
// x_t = ((1−c_t)(1−β)x_{t−1} + c_t y_t)/((1−c_t)(1−β) + c_t), for SF-AdamW's direction.
func TestReformulationSFy(t *testing.T) {
	const n, steps = 11, 300
	for _, cfg := range []Config{
		{LR: 0.05, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1},
		{LR: 0.05, Beta1: 0.5, Beta2: 0.95, Eps: 1e-8, C: 30},
	} {
		w := initialPoint(n)
		o, _ := New(cfg, w)
		b, b2 := cfg.Beta1, cfg.Beta2
		// independent SF_y state
		y := append([]float64(nil), w...)
		xs := append([]float64(nil), w...)
		m, v := make([]float64, n), make([]float64, n)
		g, delta, x := make([]float64, n), make([]float64, n), make([]float64, n)
		cPrev := 1.0 // c_1 = 1: x_1 = y_1
		for s := 1; s <= steps; s++ {
			testGrad(y, g)
			for i := range g {
				v[i] = b2*v[i] + (1-b2)*g[i]*g[i]
				delta[i] = g[i]/(math.Sqrt(v[i]/(1-math.Pow(b2, float64(s))))+cfg.Eps) + cfg.WeightDecay*y[i]
			}
			o.Step(g)
			c := o.LastC() // c_{t+1}
			for i := range y {
				m[i] = (1-cPrev)*m[i] + delta[i]
				y[i] -= cfg.LR * (b*c*m[i] + (1-b)*delta[i])
				xs[i] = ((1-c)*(1-b)*xs[i] + c*y[i]) / ((1-c)*(1-b) + c)
			}
			cPrev = c
		}
		o.X(x)
		if d := maxRelDiff(w, y); d > 1e-11 {
			t.Errorf("%+v: y differs from the SF_y reformulation by %.3g", cfg, d)
		}
		if d := maxRelDiff(x, xs); d > 1e-11 {
			t.Errorf("%+v: x differs from the weighted average of y by %.3g", cfg, d)
		}
	}
}

// TestFloat32TracksFloat64 runs the same problem in both precisions.
func TestFloat32TracksFloat64(t *testing.T) {
	const n, steps = 64, 200
	cfg := Config{LR: 0.01, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1, WarmupSteps: 10, C: 50}
	w64 := initialPoint(n)
	w32 := make([]float32, n)
	for i, v := range w64 {
		w32[i] = float32(v)
	}
	o64, _ := New(cfg, w64)
	o32, _ := New(cfg, w32)
	g64, g32, tmp := make([]float64, n), make([]float32, n), make([]float64, n)
	for s := 0; s < steps; s++ {
		testGrad(w64, g64)
		o64.Step(g64)
		for i, v := range w32 {
			tmp[i] = float64(v)
		}
		testGrad(tmp, g64)
		for i, v := range g64 {
			g32[i] = float32(v)
		}
		o32.Step(g32)
	}
	for i := range w64 {
		if d := math.Abs(w64[i] - float64(w32[i])); d > 1e-4 {
			t.Fatalf("param %d: float32 %g vs float64 %g", i, w32[i], w64[i])
		}
	}
}

func TestValidate(t *testing.T) {
	good := DefaultConfig()
	if err := good.Validate(); err != nil {
		t.Fatalf("default config rejected: %v", err)
	}
	cases := []struct {
		field string
		mut   func(*Config)
	}{
		{"lr", func(c *Config) { c.LR = 0 }},
		{"lr", func(c *Config) { c.LR = -1e-3 }},
		{"lr", func(c *Config) { c.LR = math.NaN() }},
		{"beta1", func(c *Config) { c.Beta1 = 1 }},
		{"beta1", func(c *Config) { c.Beta1 = -0.1 }},
		{"beta1", func(c *Config) { c.Beta1 = math.NaN() }},
		{"beta2", func(c *Config) { c.Beta2 = 1.5 }},
		{"eps", func(c *Config) { c.Eps = 0 }},
		{"weight_decay", func(c *Config) { c.WeightDecay = -0.1 }},
		{"warmup_steps", func(c *Config) { c.WarmupSteps = -5 }},
		{"c", func(c *Config) { c.C = -1 }},
		{"c", func(c *Config) { c.C = math.Inf(1) }},
		{"grad_clip", func(c *Config) { c.GradClip = math.NaN() }},
	}
	for _, tc := range cases {
		cfg := good
		tc.mut(&cfg)
		err := cfg.Validate()
		var ce *fielderr.Error
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%+v: got %v, want a fielderr.Error for %s", cfg, err, tc.field)
			continue
		}
		if _, err := New(cfg, make([]float32, 4)); err == nil {
			t.Errorf("New accepted %+v", cfg)
		}
	}
}

func TestStateBytesPerParam(t *testing.T) {
	p := make([]float32, 8)
	sf, _ := New(DefaultConfig(), p)
	aw, _ := NewAdamW(DefaultAdamWConfig(100), make([]float32, 8))
	if sf.StateBytesPerParam() != aw.StateBytesPerParam() || sf.StateBytesPerParam() != 8 {
		t.Errorf("state bytes/param: SF-AdamW %d, AdamW %d; want both 8 (two float32 vectors)", sf.StateBytesPerParam(), aw.StateBytesPerParam())
	}
	keep := DefaultConfig()
	keep.KeepX = true
	sfx, _ := New(keep, make([]float32, 8))
	if sfx.StateBytesPerParam() != 12 {
		t.Errorf("with KeepX: %d bytes/param, want 12", sfx.StateBytesPerParam())
	}
	zero := DefaultConfig()
	zero.Beta1 = 0
	sf0, _ := New(zero, make([]float32, 8))
	if sf0.StateBytesPerParam() != 8 {
		t.Errorf("β1=0 (x stored instead of z): %d bytes/param, want 8", sf0.StateBytesPerParam())
	}
}

func TestStepAllocatesNothing(t *testing.T) {
	const n = 1 << 18 // large enough to run in parallel
	p, g := make([]float32, n), make([]float32, n)
	for i := range g {
		g[i] = float32(math.Sin(float64(i)))
	}
	clip := DefaultConfig()
	clip.GradClip = 1
	sf, _ := New(clip, p)
	aw, _ := NewAdamW(DefaultAdamWConfig(100), make([]float32, n))
	e, _ := NewEWA[float32](n, 0.99)
	sf.Step(g)
	e.Update(p)
	for name, f := range map[string]func(){
		"SFAdamW.Step": func() { sf.Step(g) },
		"AdamW.Step":   func() { aw.Step(g) },
		"EWA.Update":   func() { e.Update(p) },
		"UpdateEWAX":   func() { sf.UpdateEWAX(e) },
	} {
		if a := testing.AllocsPerRun(10, f); a != 0 {
			t.Errorf("%s allocates %.1f times per call", name, a)
		}
	}
}

// TestSetLR continues TestAlgorithm1ByHand's first step with γ_2 = 0.05 set by the caller:
// z moves by the new γ, and as upstream's schedulefree weighs each z by the largest γ so
// far, c_3 = γ_1²/(γ_1² + γ_1²) = 0.5 weighs it in x (γ_2²/(γ_1² + γ_2²) = 0.2 would be
// Algorithm 1 read with the decayed γ).
func TestSetLR(t *testing.T) {
	o, w, z2 := firstStepByHand(t)
	o.SetLR(0.05)
	g := w[0]
	o.Step([]float64{g})
	v2 := 0.9*0.1 + 0.1*g*g
	z3 := z2 - 0.05*g/(math.Sqrt(v2/0.19)+handEps)
	x3 := 0.5*z2 + 0.5*z3
	x := []float64{0}
	o.X(x)
	for name, p := range map[string][2]float64{"z3": {o.Z()[0], z3}, "x3": {x[0], x3}, "c3": {o.LastC(), 0.5}, "γ2": {o.LastLR(), 0.05}} {
		if math.Abs(p[0]-p[1]) > 1e-15 {
			t.Errorf("%s = %.17g, want %.17g (by hand)", name, p[0], p[1])
		}
	}
}
