//go:build cuda

package cuda

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/model"
)

// profiledRun trains an engine for cfg with the fast paths f three steps of one
// micro-batch with SF-AdamW and returns its losses, gradients and parameters, and its
// profile when the timing mode is on.
func profiledRun(t *testing.T, cfg model.Config, prec backend.Precision, f fastPaths) ([]float64, []float32, []float32, Profile, bool) {
	t.Helper()
	const batch, seqLen = 2, 32
	e, err := newEngine(cfg, batch, seqLen, prec, f)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	params := make([]float32, cfg.NumParams())
	model.Init(cfg, 3, params)
	if err := e.WriteParams(params); err != nil {
		t.Fatal(err)
	}
	opt, err := e.NewSFAdamW(sfadamw.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	n := batch * seqLen
	var losses []float64
	for step := range 3 {
		e.ZeroGrad()
		toks := randomTokens(n+1, cfg.Vocab, uint64(7+step))
		loss, err := e.Forward(toks[:n], toks[1:])
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Backward(); err != nil {
			t.Fatal(err)
		}
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		losses = append(losses, loss)
	}
	grads, got := make([]float32, len(params)), make([]float32, len(params))
	if err := e.ReadGrads(grads); err != nil {
		t.Fatal(err)
	}
	if err := e.ReadParams(got); err != nil {
		t.Fatal(err)
	}
	p, on := e.Profile()
	return losses, grads, got, p, on
}

// TestProfileChangesNoBit: the timing mode gives the losses, gradients and parameters of
// the engine without it, bit for bit, with no fast path and with FastEnv's, and charges
// every operation where the passes say (counted on the path without fast paths).
func TestProfileChangesNoBit(t *testing.T) {
	fast, err := fastFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		preset string
		prec   backend.Precision
	}{{"tiny-llama", backend.FP32}, {"tiny-llama", backend.BF16}, {"tiny-gpt2", backend.BF16}} {
		for _, f := range slices.Compact([]fastPaths{0, fast}) {
			paths := f.String()
			if f == 0 {
				paths = "none"
			}
			t.Run(tc.preset+"-"+string(tc.prec)+"/"+paths, func(t *testing.T) {
				cfg := preset(t, tc.preset)
				t.Setenv(ProfileEnv, "0")
				lossOff, gradOff, parOff, _, on := profiledRun(t, cfg, tc.prec, f)
				if on {
					t.Fatalf("%s=0: the timing mode is on", ProfileEnv)
				}
				out := filepath.Join(t.TempDir(), "profile.txt")
				t.Setenv(ProfileEnv, out)
				lossOn, gradOn, parOn, p, on := profiledRun(t, cfg, tc.prec, f)
				if !on {
					t.Fatalf("%s=%s: the timing mode is off", ProfileEnv, out)
				}
				for i := range lossOff {
					if math.Float64bits(lossOn[i]) != math.Float64bits(lossOff[i]) {
						t.Errorf("step %d: loss %v with the timing mode, %v without", i, lossOn[i], lossOff[i])
					}
				}
				if !slices.Equal(gradOn, gradOff) || !slices.Equal(parOn, parOff) {
					t.Error("the gradients or parameters differ with the timing mode")
				}
				// two steps after the first, each of one micro-batch
				if p.Warmup || p.Calls != [numPhases]int{2, 2, 2} {
					t.Errorf("calls = %v (warm-up %v), want [2 2 2] in the steady state", p.Calls, p.Warmup)
				}
				// per layer, attention's kernels and batched GEMMs, and in bf16 the rounding of
				// their operands: q, k, P, v forward; dY, v, P, dY, dS, k, dS, q backward; and
				// the activation operands of the linear layers and the head (a weight needs none)
				L, bf := cfg.Layers, 0
				if tc.prec == backend.BF16 {
					bf = 1
				}
				counts := []struct {
					ph   Phase
					c    Category
					want int // per call
				}{
					{PhaseForward, GEMM, 4*L + 1}, {PhaseBackward, GEMM, 8*L + 2},
					{PhaseForward, Attention, (5 + 4*bf) * L}, {PhaseBackward, Attention, (8 + 8*bf) * L},
					{PhaseForward, Round, bf * (4*L + 1)}, {PhaseBackward, Round, bf * (12*L + 3)},
					{PhaseForward, Head, 1}, {PhaseBackward, Head, 1},
					{PhaseForward, Transfer, 3}, {PhaseUpdate, Optimizer, 2}, // ZeroGrad and Step
				}
				if f != 0 {
					// the counts are those of the path without fast paths, which drop and fuse
					// operations
					counts = nil
				}
				for _, w := range counts {
					if got := p.Ops[w.ph][w.c] / max(p.Calls[w.ph], 1); got != w.want {
						t.Errorf("phase %d: %v ops per call = %d, want %d", w.ph, w.c, got, w.want)
					}
				}
				for _, c := range []Category{Attention, Head, Norms, Elementwise, GEMM, Embedding} {
					if p.MS[PhaseForward][c] <= 0 || p.MS[PhaseBackward][c] <= 0 {
						t.Errorf("%v: %v ms forward, %v backward; want both > 0", c, p.MS[PhaseForward][c], p.MS[PhaseBackward][c])
					}
				}
				if p.MS[PhaseUpdate][Optimizer] <= 0 {
					t.Error("no time charged to the optimizer")
				}
				b, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(b), "cuda profile: device ms per call (2 forwards, 2 backwards, 2 steps;") {
					t.Errorf("%s holds no profile:\n%s", out, b)
				}
				t.Logf("\n%s", b)
			})
		}
	}
}
