package sfadamw

import (
	"errors"
	"math"
	"testing"

	"github.com/sfsweep/sfsweep/fielderr"
)

// FuzzConfig checks, for arbitrary hyperparameters, that Validate never panics, that every
// rejection names a field, and that every accepted configuration is in range and gives an
// optimizer whose first step from finite inputs stays finite.
func FuzzConfig(f *testing.F) {
	f.Add(2e-3, 0.95, 0.99, 1e-8, 0.1, 50, 0.0, 0.0)
	f.Add(-1.0, 1.0, 0.5, 0.0, -1.0, -3, -2.0, math.NaN())
	f.Add(math.Inf(1), math.NaN(), 0.999, 1e-30, 1e30, 0, 1e300, 1.0)
	f.Fuzz(func(t *testing.T, lr, b1, b2, eps, wd float64, warmup int, c, clip float64) {
		cfg := Config{LR: lr, Beta1: b1, Beta2: b2, Eps: eps, WeightDecay: wd, WarmupSteps: warmup, C: c, GradClip: clip}
		err := cfg.Validate()
		if err != nil {
			var ce *fielderr.Error
			if !errors.As(err, &ce) || ce.Field == "" || ce.Reason == "" {
				t.Fatalf("rejection without a field and reason: %v", err)
			}
			return
		}
		ok := lr > 0 && !math.IsInf(lr, 0) && b1 >= 0 && b1 < 1 && b2 >= 0 && b2 < 1 && eps > 0 && !math.IsInf(eps, 0) &&
			wd >= 0 && !math.IsInf(wd, 0) && warmup >= 0 && c >= 0 && !math.IsInf(c, 0) && clip >= 0 && !math.IsInf(clip, 0)
		if !ok {
			t.Fatalf("accepted out-of-range config %+v", cfg)
		}
		w := []float64{1, -1}
		o, err := New(cfg, w)
		if err != nil {
			t.Fatalf("New rejected a valid config: %v", err)
		}
		o.Step([]float64{0.5, -0.25})
		if lr < 1e100 && wd < 1e100 && eps > 1e-300 {
			for _, v := range w {
				if math.IsNaN(v) {
					t.Fatalf("first step gave NaN for %+v", cfg)
				}
			}
		}
	})
}
