package oracle

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/sfsweep/sfsweep/training/model"
)

// testCase is one model size and batch shape the tests run.
type testCase struct {
	name          string
	cfg           model.Config
	batch, seqLen int
}

// testCases returns the configurations every cross-check runs: micro-llama with a sequence
// shorter than its context, a wider model with an odd head count, a vocabulary that is
// not a power of two and an untied head, micro-llama at its full context, a medium model whose sizes are
// large enough for blocked and parallel kernels and multiples of no usual tile size, and
// the degenerate case of one head and sequences of one token.
func testCases(t testing.TB) []testCase {
	t.Helper()
	micro, err := model.Preset("micro-llama")
	if err != nil {
		t.Fatal(err)
	}
	wide := model.Config{Arch: model.LLaMA, Vocab: 50, Dim: 24, Layers: 2, Heads: 3, Context: 8, Hidden: 40, Batch: 3, Untied: true}.WithDefaults()
	medium := model.Config{Arch: model.LLaMA, Vocab: 301, Dim: 60, Layers: 2, Heads: 5, Context: 40, Hidden: 164, Batch: 2}.WithDefaults()
	oneHead := model.Config{Arch: model.LLaMA, Vocab: 7, Dim: 4, Layers: 1, Heads: 1, Context: 4, Hidden: 3, Batch: 3}.WithDefaults()
	return []testCase{
		{"micro-llama/b2t5", micro, 2, 5},
		{"wide/b3t6", wide, 3, 6},
		{"micro-llama/b1t8", micro, 1, 8},
		{"medium/b2t37", medium, 2, 37},
		{"one-head/b3t1", oneHead, 3, 1},
	}
}

// gpt2TestCases returns the GPT-2 configurations: micro-gpt2 with a sequence shorter than
// its context, an odd one (odd head size 5, vocabulary 37, MLP width not 4d, sequence one
// short of the context, untied head, nanoGPT's biases), micro-gpt2 at its full context with one sequence, and a medium
// model large enough for the native engine's blocked and parallel kernels.
func gpt2TestCases(t testing.TB) []testCase {
	t.Helper()
	micro, err := model.Preset("micro-gpt2")
	if err != nil {
		t.Fatal(err)
	}
	odd := model.Config{Arch: model.GPT2, Vocab: 37, Dim: 15, Layers: 2, Heads: 3, Context: 9, Hidden: 44, Batch: 3, Untied: true, Biases: true}.WithDefaults()
	medium := model.Config{Arch: model.GPT2, Vocab: 301, Dim: 60, Layers: 2, Heads: 5, Context: 40, Hidden: 164, Batch: 2}.WithDefaults()
	return []testCase{
		{"micro-gpt2/b2t5", micro, 2, 5},
		{"odd-gpt2/b3t8", odd, 3, 8},
		{"micro-gpt2/b1t8", micro, 1, 8},
		{"medium-gpt2/b2t37", medium, 2, 37},
	}
}

// relErr returns max|a−b| / max|b|: the error of a relative to the scale of the tensor b.
func relErr(a, b []float64) float64 {
	var num, den float64
	for i := range b {
		num = math.Max(num, math.Abs(a[i]-b[i]))
		den = math.Max(den, math.Abs(b[i]))
	}
	if den == 0 {
		return num
	}
	return num / den
}

// TestLossMatchesReference compares the graph's loss with the plain-Go forward pass.
func TestLossMatchesReference(t *testing.T) {
	for _, tc := range append(testCases(t), gpt2TestCases(t)...) {
		for _, dt := range []struct {
			dtype tensor.Dtype
			tol   float64
		}{{tensor.Float64, 1e-12}, {tensor.Float32, 1e-5}} {
			t.Run(tc.name+"/"+dt.dtype.String(), func(t *testing.T) {
				m, err := New(tc.cfg, tc.batch, tc.seqLen, dt.dtype)
				if err != nil {
					t.Fatal(err)
				}
				for seed := range uint64(2) {
					params := testParams(tc.cfg, seed, 0.3)
					tokens, targets := testTokens(tc.cfg, seed, tc.batch, tc.seqLen)
					got, _, err := m.LossAndGrad(params, tokens, targets)
					if err != nil {
						t.Fatal(err)
					}
					want := refLoss(tc.cfg, params, tokens, targets, tc.batch, tc.seqLen)
					rel := math.Abs(got-want) / math.Abs(want)
					t.Logf("seed %d: loss %.15g, reference %.15g, relative difference %.2g", seed, got, want, rel)
					if rel > dt.tol {
						t.Errorf("seed %d: loss %.15g, reference %.15g: relative difference %.3g > %g", seed, got, want, rel, dt.tol)
					}
				}
			})
		}
	}
}

// TestGradientFiniteDifferences checks the symbolic gradient of every parameter tensor
// against central differences (step 1e-5) of the graph's own float64 loss, on up to
// `entries` elements per tensor (all of the small ones; for the embedding, elements of
// rows that occur in the batch). Tolerance: max|fd − g| ≤ 1e-7 · max|g| over the checked
// elements of each tensor; measured ≤ 2.3e-8 (the embedding of the wide model, where it
// is the O(h²) truncation error: ×4 at step 2e-5); GPT-2 ≤ 6e-9. GPT-2 runs micro-gpt2 and the odd
// config; a tied wte gets a gradient in every row (the head), an untied one (the wide and
// odd configs) only in the rows of the batch's tokens, a wpe only in the rows of positions <
// seqLen; those are the ones probed.
func TestGradientFiniteDifferences(t *testing.T) {
	const h, tol = 1e-5, 1e-7
	cases, gpt2 := testCases(t), gpt2TestCases(t)
	for _, c := range []struct {
		tc      testCase
		entries int
	}{{cases[0], 40}, {cases[1], 16}, {gpt2[0], 40}, {gpt2[1], 16}} {
		t.Run(c.tc.name, func(t *testing.T) {
			tc := c.tc
			m, err := New(tc.cfg, tc.batch, tc.seqLen, tensor.Float64)
			if err != nil {
				t.Fatal(err)
			}
			params := testParams(tc.cfg, 3, 0.3)
			tokens, targets := testTokens(tc.cfg, 3, tc.batch, tc.seqLen)
			_, grad, err := m.LossAndGrad(params, tokens, targets)
			if err != nil {
				t.Fatal(err)
			}
			loss := func(p []float64) float64 {
				l, _, err := m.LossAndGrad(p, tokens, targets)
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
			rng := rand.New(rand.NewPCG(3, 3))
			p := slices.Clone(params)
			for _, ten := range tc.cfg.Layout().Tensors {
				var idx []int
				switch {
				case ten.Name == "transformer.wte.weight" && tc.cfg.Untied:
					// Untied, only rows of tokens in the batch have a gradient: probe those.
					for len(idx) < c.entries {
						tok := int(tokens[rng.IntN(len(tokens))])
						idx = append(idx, ten.Offset+tok*tc.cfg.Dim+rng.IntN(tc.cfg.Dim))
					}
				case ten.Name == "transformer.wpe.weight":
					// Only positions < seqLen have a gradient: probe those rows.
					for len(idx) < c.entries {
						idx = append(idx, ten.Offset+rng.IntN(tc.seqLen*tc.cfg.Dim))
					}
				case ten.Size <= c.entries:
					for i := range ten.Size {
						idx = append(idx, ten.Offset+i)
					}
				default:
					idx = append(idx, ten.Offset, ten.Offset+ten.Size-1)
					for len(idx) < c.entries {
						idx = append(idx, ten.Offset+rng.IntN(ten.Size))
					}
				}
				var fd, g []float64
				for _, i := range idx {
					p[i] = params[i] + h
					lp := loss(p)
					p[i] = params[i] - h
					lm := loss(p)
					p[i] = params[i]
					fd = append(fd, (lp-lm)/(2*h))
					g = append(g, grad[i])
				}
				scale := 0.0
				for _, v := range g {
					scale = math.Max(scale, math.Abs(v))
				}
				rel := relErr(fd, g)
				t.Logf("%-24s max|g| %.3g  max|fd−g|/max|g| %.2g", ten.Name, scale, rel)
				if scale < 1e-3 {
					t.Errorf("%s: gradient scale %.3g is too small for the check to mean anything", ten.Name, scale)
				}
				if rel > tol {
					t.Errorf("%s: finite differences disagree with the gradient: max|fd−g|/max|g| = %.3g > %g", ten.Name, rel, tol)
				}
			}
		})
	}
}

// TestRepeatedCallsIdentical checks that a Model keeps no state between calls: the same
// inputs give bit-identical loss and gradient, whatever ran in between.
func TestRepeatedCallsIdentical(t *testing.T) {
	for _, dtype := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		t.Run(dtype.String(), func(t *testing.T) {
			for _, tc := range []testCase{testCases(t)[1], gpt2TestCases(t)[1]} {
				m, err := New(tc.cfg, tc.batch, tc.seqLen, dtype)
				if err != nil {
					t.Fatal(err)
				}
				pa, pb := testParams(tc.cfg, 1, 0.3), testParams(tc.cfg, 2, 0.1)
				ta, ya := testTokens(tc.cfg, 1, tc.batch, tc.seqLen)
				tb, yb := testTokens(tc.cfg, 2, tc.batch, tc.seqLen)
				l1, g1, err := m.LossAndGrad(pa, ta, ya)
				if err != nil {
					t.Fatal(err)
				}
				l2, g2, err := m.LossAndGrad(pa, ta, ya)
				if err != nil {
					t.Fatal(err)
				}
				lb, gb, err := m.LossAndGrad(pb, tb, yb)
				if err != nil {
					t.Fatal(err)
				}
				l3, g3, err := m.LossAndGrad(pa, ta, ya)
				if err != nil {
					t.Fatal(err)
				}
				if l1 != l2 || !slices.Equal(g1, g2) {
					t.Errorf("%s: second call differs: loss %v then %v, gradient max diff %g", tc.name, l1, l2, relErr(g2, g1))
				}
				if l1 != l3 || !slices.Equal(g1, g3) {
					t.Errorf("%s: call after other inputs differs: loss %v then %v, gradient max diff %g", tc.name, l1, l3, relErr(g3, g1))
				}
				if lb == l1 || slices.Equal(gb, g1) {
					t.Errorf("%s: different inputs gave the same result: the inputs are not being read", tc.name)
				}
			}
		})
	}
}

// TestNewRejects checks the configurations and inputs the oracle refuses.
func TestNewRejects(t *testing.T) {
	micro, err := model.Preset("micro-llama")
	if err != nil {
		t.Fatal(err)
	}
	gpt2, err := model.Preset("micro-gpt2")
	if err != nil {
		t.Fatal(err)
	}
	bad := micro
	bad.Heads = 3
	unknown := micro
	unknown.Arch = "mamba"
	for _, tc := range []struct {
		name          string
		cfg           model.Config
		batch, seqLen int
		dtype         tensor.Dtype
		want          string
	}{
		{"gpt2 seqLen over context", gpt2, 2, 9, tensor.Float64, "context"},
		{"unknown arch", unknown, 2, 4, tensor.Float64, "arch"},
		{"invalid config", bad, 2, 4, tensor.Float64, "heads"},
		{"seqLen over context", micro, 2, 9, tensor.Float64, "context"},
		{"zero batch", micro, 0, 4, tensor.Float64, "batch"},
		{"one token", micro, 1, 1, tensor.Float64, "at least 2 tokens"},
		{"int dtype", micro, 2, 4, tensor.Int, "dtype"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg, tc.batch, tc.seqLen, tc.dtype)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: error %v, want one containing %q", err, tc.want)
			}
		})
	}

	m, err := New(micro, 2, 4, tensor.Float64)
	if err != nil {
		t.Fatal(err)
	}
	params := testParams(micro, 1, 0.02)
	tokens, targets := testTokens(micro, 1, 2, 4)
	outOfVocab := slices.Clone(targets)
	outOfVocab[3] = int32(micro.Vocab)
	for _, tc := range []struct {
		name            string
		params          []float64
		tokens, targets []int32
		want            string
	}{
		{"short params", params[1:], tokens, targets, "parameters"},
		{"short tokens", params, tokens[1:], targets, "tokens"},
		{"target out of vocabulary", params, tokens, outOfVocab, "targets[3]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := m.LossAndGrad(tc.params, tc.tokens, tc.targets)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("LossAndGrad: error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
