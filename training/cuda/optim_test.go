//go:build cuda

package cuda

import (
	"math"
	"slices"
	"testing"

	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/model"
)

// hostOpt is an sfadamw optimizer over host parameters, stepped with a given gradient.
type hostOpt interface {
	Step(grad []float32)
	State() sfadamw.State[float32]
	Restore(sfadamw.State[float32]) error
}

func TestOptimizersMatchCPU(t *testing.T) {
	cfg := preset(t, "tiny-llama")
	sf := sfadamw.DefaultConfig()
	sf.WarmupSteps = 3
	refined := sf
	refined.C, refined.GradClip = 200, 0.5
	aw := sfadamw.DefaultAdamWConfig(20) // gradient clipping at 1, cosine schedule
	for _, tc := range []struct {
		name string
		dev  func(e *Engine) (backend.Optimizer, error)
		host func(p []float32) (hostOpt, error)
	}{
		{"sfadamw", func(e *Engine) (backend.Optimizer, error) { return e.NewSFAdamW(sf) },
			func(p []float32) (hostOpt, error) { return sfadamw.New(sf, p) }},
		{"sfadamw-refined-clipped", func(e *Engine) (backend.Optimizer, error) { return e.NewSFAdamW(refined) },
			func(p []float32) (hostOpt, error) { return sfadamw.New(refined, p) }},
		{"adamw", func(e *Engine) (backend.Optimizer, error) { return e.NewAdamW(aw) },
			func(p []float32) (hostOpt, error) { return sfadamw.NewAdamW(aw, p) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const batch, seqLen = 2, 64
			e, err := New(cfg, batch, seqLen, backend.FP32)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			params := make([]float32, cfg.NumParams())
			model.Init(cfg, 2, params)
			if err := e.WriteParams(params); err != nil {
				t.Fatal(err)
			}
			dev, err := tc.dev(e)
			if err != nil {
				t.Fatal(err)
			}
			host, err := tc.host(params)
			if err != nil {
				t.Fatal(err)
			}
			grad, got := make([]float32, len(params)), make([]float32, len(params))
			n := batch * seqLen
			stepBoth := func(step int) {
				// the gradient at the device's parameters, used by both optimizers
				e.ZeroGrad()
				toks := randomTokens(n+1, cfg.Vocab, uint64(100+step))
				if _, err := e.Forward(toks[:n], toks[1:]); err != nil {
					t.Fatal(err)
				}
				if err := e.Backward(); err != nil {
					t.Fatal(err)
				}
				if err := e.ReadGrads(grad); err != nil {
					t.Fatal(err)
				}
				host.Step(grad)
				if err := dev.Step(); err != nil {
					t.Fatal(err)
				}
				if err := e.ReadParams(got); err != nil {
					t.Fatal(err)
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(params[i]) {
						t.Fatalf("step %d: parameter %d = %v on the device, %v on the host", step, i, got[i], params[i])
					}
				}
			}
			for step := range 5 {
				stepBoth(step)
			}
			equalStates(t, dev.State(), host.State())
			// The device's state restored on the host and the host's on the device: both
			// continue identically.
			host2, err := tc.host(params)
			if err != nil {
				t.Fatal(err)
			}
			if err := host2.Restore(dev.State()); err != nil {
				t.Fatal(err)
			}
			if err := dev.Restore(host.State()); err != nil {
				t.Fatal(err)
			}
			host = host2
			for step := 5; step < 8; step++ {
				stepBoth(step)
			}
			equalStates(t, dev.State(), host.State())
			bad := host.State()
			bad.Vectors = bad.Vectors[:1]
			if err := dev.Restore(bad); err == nil {
				t.Error("Restore of a state with a vector missing: no error")
			}
		})
	}
}

func equalStates(t *testing.T, a, b sfadamw.State[float32]) {
	t.Helper()
	if a.Algorithm != b.Algorithm || a.Step != b.Step || a.SumLR2 != b.SumLR2 || a.MaxLR != b.MaxLR ||
		a.LastLR != b.LastLR || a.LastC != b.LastC || len(a.Vectors) != len(b.Vectors) {
		t.Fatalf("device state %+v\nhost state %+v", strip(a), strip(b))
	}
	for i, v := range a.Vectors {
		w := b.Vectors[i]
		if v.Name != w.Name || !slices.Equal(v.Data, w.Data) {
			t.Fatalf("state vector %d: %q on the device, %q on the host, or their values differ", i, v.Name, w.Name)
		}
	}
}

func strip(s sfadamw.State[float32]) sfadamw.State[float32] {
	s.Vectors = nil
	return s
}
