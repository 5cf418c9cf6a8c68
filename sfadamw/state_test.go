package sfadamw

import (
	"math"
	"slices"
	"testing"

	"github.com/sfsweep/sfsweep/internal/par"
)

// stepper is what the resume test needs of an optimizer.
type stepper interface {
	Step(grad []float32)
	State() State[float32]
	Restore(State[float32]) error
}

func f32Grad(w, g []float32) {
	for i := range w {
		g[i] = float32(0.5+float64(i%7))*w[i] + float32(math.Cos(float64(w[i])+float64(i)))
	}
}

// TestResumeIsBitwise runs each optimizer for 2k steps straight, and again as k steps,
// export, a fresh optimizer restored from the export (and the saved parameters), k steps;
// the parameters and every state vector must be bitwise identical.
func TestResumeIsBitwise(t *testing.T) {
	const n, k = 70_001, 25 // large enough for the parallel path
	makers := map[string]func(p []float32) stepper{
		"sfadamw": func(p []float32) stepper {
			o, _ := New(Config{LR: 0.01, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1, WarmupSteps: 10}, p)
			return o
		},
		"sfadamw-refined": func(p []float32) stepper {
			o, _ := New(Config{LR: 0.01, Beta1: 0.5, Beta2: 0.99, Eps: 1e-8, C: 50, GradClip: 1}, p)
			return o
		},
		"sfadamw-beta1-0": func(p []float32) stepper { o, _ := New(Config{LR: 0.01, Beta2: 0.99, Eps: 1e-8}, p); return o },
		"sfadamw-keepx": func(p []float32) stepper {
			o, _ := New(Config{LR: 0.01, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, KeepX: true}, p)
			return o
		},
		"adamw": func(p []float32) stepper {
			o, _ := NewAdamW(AdamWConfig{Schedule: Schedule{Kind: WSD, Peak: 0.01, WarmupSteps: 5, DecayStart: 30, DecaySteps: 15}, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1, GradClip: 1}, p)
			return o
		},
		"sf-sgd": func(p []float32) stepper {
			o, _ := NewSGD[float32](SGDConfig{SFConfig: SFConfig{LR: 0.01, Beta: 0.9, WarmupSteps: 5, C: 30}, WeightDecay: 0.1}, p)
			return o
		},
	}
	for name, mk := range makers {
		t.Run(name, func(t *testing.T) {
			start := make([]float32, n)
			for i := range start {
				start[i] = float32(math.Sin(float64(i)))
			}
			g := make([]float32, n)
			straight := slices.Clone(start)
			a := mk(straight)
			for range 2 * k {
				f32Grad(straight, g)
				a.Step(g)
			}
			resumed := slices.Clone(start)
			b := mk(resumed)
			for range k {
				f32Grad(resumed, g)
				b.Step(g)
			}
			saved, savedParams := b.State(), slices.Clone(resumed)
			// keep stepping the original to prove the export is a deep copy
			for range 3 {
				f32Grad(resumed, g)
				b.Step(g)
			}
			params := savedParams
			c := mk(params)
			if err := c.Restore(saved); err != nil {
				t.Fatal(err)
			}
			for range k {
				f32Grad(params, g)
				c.Step(g)
			}
			if !slices.Equal(straight, params) {
				t.Fatal("parameters after resume differ from the uninterrupted run")
			}
			sa, sc := a.State(), c.State()
			if sa.Step != sc.Step || sa.SumLR2 != sc.SumLR2 || sa.LastC != sc.LastC || sa.MaxLR != sc.MaxLR {
				t.Fatalf("scalars differ: %+v vs %+v", scalarsOf(sa), scalarsOf(sc))
			}
			for i := range sa.Vectors {
				if !slices.Equal(sa.Vectors[i].Data, sc.Vectors[i].Data) {
					t.Fatalf("state vector %q differs after resume", sa.Vectors[i].Name)
				}
			}
		})
	}
}

func scalarsOf(s State[float32]) [5]float64 {
	return [5]float64{float64(s.Step), s.SumLR2, s.MaxLR, s.LastLR, s.LastC}
}

func TestRestoreRejectsMismatch(t *testing.T) {
	a, _ := New(DefaultConfig(), make([]float32, 10))
	b, _ := New(DefaultConfig(), make([]float32, 11))
	if err := b.Restore(a.State()); err == nil {
		t.Error("restored a state of 10 parameters into 11")
	}
	aw, _ := NewAdamW(DefaultAdamWConfig(10), make([]float32, 10))
	if err := a.Restore(aw.State()); err == nil {
		t.Error("restored an AdamW state into SF-AdamW")
	}
	keep := DefaultConfig()
	keep.KeepX = true
	k, _ := New(keep, make([]float32, 10))
	if err := k.Restore(a.State()); err == nil {
		t.Error("restored a state without x into an optimizer that keeps x")
	}
}

// TestIndependentOfWorkers runs the same steps on pools of 1, 2 and 3 workers: parameters,
// state and gradient norms must be bitwise identical.
func TestIndependentOfWorkers(t *testing.T) {
	const n = 200_000
	run := func(workers int) ([]float32, []float32, float64) {
		pool := par.NewPool(workers)
		defer pool.Close()
		p := make([]float32, n)
		for i := range p {
			p[i] = float32(math.Sin(float64(i) * 0.1))
		}
		cfg := DefaultConfig()
		cfg.GradClip = 0.5
		o, _ := New(cfg, p)
		o.pool, o.normer.pool = pool, pool
		e, _ := NewEWA[float32](n, 0.99)
		e.pool = pool
		g := make([]float32, n)
		for range 5 {
			f32Grad(p, g)
			o.Step(g)
			o.UpdateEWAX(e)
		}
		return p, e.Values(), o.GradNorm()
	}
	p1, e1, n1 := run(1)
	for _, w := range []int{2, 3} {
		p, e, nrm := run(w)
		if !slices.Equal(p, p1) || !slices.Equal(e, e1) || nrm != n1 {
			t.Errorf("%d workers differ from 1 worker (norm %v vs %v)", w, nrm, n1)
		}
	}
}

// TestEWA checks the average against its closed form e_T = d^{T−1} w_1 + (1−d) Σ_{t≥2} d^{T−t} w_t,
// and that EWA(x) computed without materialising x equals EWA of X().
func TestEWA(t *testing.T) {
	const n, T, d = 5, 40, 0.9
	e, err := NewEWA[float64](n, d)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, n)
	for s := 1; s <= T; s++ {
		w := make([]float64, n)
		for i := range w {
			w[i] = float64(s*s) + float64(i)
		}
		e.Update(w)
		for i := range want {
			if s == 1 {
				want[i] = math.Pow(d, T-1) * w[i]
			} else {
				want[i] += (1 - d) * math.Pow(d, float64(T-s)) * w[i]
			}
		}
	}
	if dd := maxRelDiff(e.Values(), want); dd > 1e-13 {
		t.Errorf("EWA differs from the closed form by %.3g", dd)
	}
	if _, err := NewEWA[float32](3, 1); err == nil {
		t.Error("accepted decay 1")
	}

	w := initialPoint(50)
	o, _ := New(Config{LR: 0.01, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8}, w)
	ex, _ := NewEWA[float64](50, DefaultEWADecay)
	ref, _ := NewEWA[float64](50, DefaultEWADecay)
	g, x := make([]float64, 50), make([]float64, 50)
	for range 100 {
		testGrad(w, g)
		o.Step(g)
		o.UpdateEWAX(ex)
		o.X(x)
		ref.Update(x)
	}
	if dd := maxRelDiff(ex.Values(), ref.Values()); dd > 1e-13 {
		t.Errorf("UpdateEWAX differs from EWA of X() by %.3g", dd)
	}
}
