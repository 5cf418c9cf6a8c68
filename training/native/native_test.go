package native

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/internal/par"
	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training/model"
)

// preset returns a named preset or fails the test.
func preset(t testing.TB, name string) model.Config {
	t.Helper()
	c, err := model.Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// oddConfig is a small model whose shapes differ from one another and from the powers of
// two (heads 3, head size 4, hidden 20), run below its context.
func oddConfig() model.Config {
	return model.Config{Arch: model.LLaMA, Vocab: 20, Dim: 12, Layers: 2, Heads: 3, Context: 10, Hidden: 20, Batch: 3}.WithDefaults()
}

// newModel returns an engine with parameters from model.Init at the configuration's
// standard deviation.
func newModel[T Float](t testing.TB, cfg model.Config, batch, seqLen int, seed uint64) *Model[T] {
	t.Helper()
	m, err := New[T](cfg, batch, seqLen)
	if err != nil {
		t.Fatal(err)
	}
	model.Init(cfg, seed, m.Params())
	return m
}

// roughen makes the parameters large enough for every nonlinearity to matter in a
// gradient check: weights N(0, std²) and norm scales 1 + N(0, 0.3²).
func roughen[T Float](m *Model[T], std float64, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	for _, ts := range m.layout.Tensors {
		v := m.Params()[ts.Offset : ts.Offset+ts.Size]
		for i := range v {
			if ts.Kind == "norm" {
				v[i] = T(1 + 0.3*rng.NormFloat64())
			} else {
				v[i] = T(std * rng.NormFloat64())
			}
		}
	}
}

// randomTokens returns n token ids uniform in [0, vocab).
func randomTokens(n, vocab int, seed uint64) []int32 {
	rng := rand.New(rand.NewPCG(seed, 11))
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(rng.IntN(vocab))
	}
	return ids
}

// step runs Forward and Backward, failing the test on an error.
func step[T Float](t testing.TB, m *Model[T], tokens, targets []int32) float64 {
	t.Helper()
	loss, err := m.Forward(tokens, targets)
	if err != nil {
		t.Fatal(err)
	}
	m.Backward()
	return loss
}

// gradErr is the worst disagreement between analytic and numerical gradients of one tensor.
type gradErr struct {
	tensor     string
	index      int
	analytic   float64
	numeric    float64
	excess     float64 // |a−n| / (atol + rtol·max(|a|,|n|)); > 1 fails
	maxAbs     float64 // max |a−n| over the tensor
	maxRel     float64 // max |a−n|/max(|a|,|n|) over the elements with max(|a|,|n|) > 1e-6
	maxAbsGrad float64
}

// Tolerances of the float64 gradient checks: central differences with step fdStep have
// truncation error O(h²) ≈ 1e-10 and rounding error ≈ 1e-16·loss/h ≈ 1e-11.
const (
	fdStep = 1e-5
	fdAtol = 1e-9
	fdRtol = 1e-6
)

// checkGradients compares the analytic gradient of every parameter with central
// differences of the loss and returns the worst element of each tensor.
func checkGradients(t *testing.T, m *Model[float64], tokens, targets []int32) []gradErr {
	t.Helper()
	m.ZeroGrad()
	step(t, m, tokens, targets)
	analytic := append([]float64(nil), m.Grads()...)
	p := m.Params()
	var out []gradErr
	for _, ts := range m.layout.Tensors {
		e := gradErr{tensor: ts.Name}
		for i := ts.Offset; i < ts.Offset+ts.Size; i++ {
			orig := p[i]
			p[i] = orig + fdStep
			lp, err := m.Forward(tokens, targets)
			if err != nil {
				t.Fatal(err)
			}
			p[i] = orig - fdStep
			lm, _ := m.Forward(tokens, targets)
			p[i] = orig
			num := (lp - lm) / (2 * fdStep)
			a := analytic[i]
			diff := math.Abs(a - num)
			scale := max(math.Abs(a), math.Abs(num))
			if x := diff / (fdAtol + fdRtol*scale); x > e.excess || e.excess == 0 {
				e.index, e.analytic, e.numeric, e.excess = i-ts.Offset, a, num, x
			}
			e.maxAbs = max(e.maxAbs, diff)
			if scale > 1e-6 {
				e.maxRel = max(e.maxRel, diff/scale)
			}
			e.maxAbsGrad = max(e.maxAbsGrad, math.Abs(a))
		}
		out = append(out, e)
	}
	return out
}

// reportGradients fails the test for every tensor with an element out of tolerance, and for
// every tensor whose gradient is zero unless its name contains one of zeroOK.
func reportGradients(t *testing.T, errs []gradErr, zeroOK ...string) {
	t.Helper()
	var worstAbs, worstRel float64
	for _, e := range errs {
		worstAbs, worstRel = max(worstAbs, e.maxAbs), max(worstRel, e.maxRel)
		if e.excess > 1 {
			t.Errorf("%s[%d]: analytic %.12g, numerical %.12g (|Δ| = %.3g)", e.tensor, e.index, e.analytic, e.numeric, math.Abs(e.analytic-e.numeric))
		}
		if e.maxAbsGrad == 0 && !slices.ContainsFunc(zeroOK, func(s string) bool { return strings.Contains(e.tensor, s) }) {
			t.Errorf("%s: gradient is identically zero", e.tensor)
		}
	}
	t.Logf("%d tensors: max |analytic − numerical| = %.2g, max relative = %.2g", len(errs), worstAbs, worstRel)
}

// TestGradientsFiniteDifferences checks the gradient of every parameter of small LLaMA and
// GPT-2 models against central differences in float64.
func TestGradientsFiniteDifferences(t *testing.T) {
	cases := []struct {
		name          string
		cfg           model.Config
		batch, seqLen int
	}{
		{"micro-llama", preset(t, "micro-llama"), 2, 8},
		{"odd shapes, seqLen < context, batch 3", oddConfig(), 3, 7},
		{"micro-gpt2", preset(t, "micro-gpt2"), 2, 8},
		{"gpt2 odd shapes, seqLen < context, batch 3", oddGPT2Config(), 3, 7},
		{"gpt2 odd head size 3", model.Config{Arch: model.GPT2, Vocab: 11, Dim: 9, Layers: 1, Heads: 3, Context: 6, Hidden: 13, Batch: 2}.WithDefaults(), 2, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newModel[float64](t, tc.cfg, tc.batch, tc.seqLen, 1)
			roughen(m, 0.3, 2)
			n := tc.batch * tc.seqLen
			reportGradients(t, checkGradients(t, m, randomTokens(n, tc.cfg.Vocab, 3), randomTokens(n, tc.cfg.Vocab, 4)))
		})
	}
}

// TestGradientsSpecialInputs checks the gradients on inputs at the edges: every token and
// target the same, the extreme token ids, a single position — for both architectures.
func TestGradientsSpecialInputs(t *testing.T) {
	for _, name := range []string{"micro-llama", "micro-gpt2"} {
		t.Run(name, func(t *testing.T) { gradientsSpecialInputs(t, preset(t, name)) })
	}
}

func gradientsSpecialInputs(t *testing.T, cfg model.Config) {
	fill := func(n int, id int32) []int32 {
		s := make([]int32, n)
		for i := range s {
			s[i] = id
		}
		return s
	}
	cases := []struct {
		name            string
		batch, seqLen   int
		tokens, targets []int32
		zeroOK          []string // tensors without influence on the loss
	}{
		{"all tokens and targets identical", 2, 8, fill(16, 5), fill(16, 5), nil},
		{"first and last ids", 2, 8, fill(16, 0), fill(16, int32(cfg.Vocab-1)), nil},
		{"one position", 1, 1, []int32{3}, []int32{9}, nil},
	}
	if cfg.Arch == model.LLaMA {
		cases[2].zeroOK = []string{"wq", "wk"} // softmax over one key is 1 (GPT-2's q|k|v is one tensor)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newModel[float64](t, cfg, tc.batch, tc.seqLen, 5)
			roughen(m, 0.3, 6)
			reportGradients(t, checkGradients(t, m, tc.tokens, tc.targets), tc.zeroOK...)
		})
	}
}

// TestGradientCheckCatchesErrors makes sure the finite-difference comparison would notice
// a gradient that is off by a small relative amount in a single element.
func TestGradientCheckCatchesErrors(t *testing.T) {
	cfg := preset(t, "micro-llama")
	m := newModel[float64](t, cfg, 2, 8, 1)
	roughen(m, 0.3, 2)
	tokens, targets := randomTokens(16, cfg.Vocab, 3), randomTokens(16, cfg.Vocab, 4)
	m.ZeroGrad()
	step(t, m, tokens, targets)
	ts, ok := m.layout.Tensor("transformer.h.1.attn.c_attn.weight")
	if !ok {
		t.Fatal("no c_attn in block 1")
	}
	i := ts.Offset + cfg.Dim*cfg.Dim + 37 // in wk
	p := m.Params()
	orig := p[i]
	p[i] = orig + fdStep
	lp, _ := m.Forward(tokens, targets)
	p[i] = orig - fdStep
	lm, _ := m.Forward(tokens, targets)
	p[i] = orig
	num := (lp - lm) / (2 * fdStep)
	a := m.Grads()[i]
	if math.Abs(a-num) > fdAtol+fdRtol*math.Abs(num) {
		t.Fatalf("the correct gradient fails: %g vs %g", a, num)
	}
	bad := a * (1 + 1e-4)
	if math.Abs(bad-num) <= fdAtol+fdRtol*math.Abs(num) {
		t.Fatalf("a gradient off by 1e-4 relative passes: %g vs %g", bad, num)
	}
}

// TestFloat32MatchesFloat64 runs the float32 engine and the float64 engine from the same
// initialisation, for both architectures, and compares losses and gradients.
func TestFloat32MatchesFloat64(t *testing.T) {
	cases := []struct {
		name          string
		cfg           model.Config
		batch, seqLen int
	}{
		{"tiny-llama", preset(t, "tiny-llama"), 2, 64},
		{"odd shapes", oddConfig(), 3, 7},
		{"tiny-gpt2", preset(t, "tiny-gpt2"), 2, 64},
		{"odd shapes gpt2", oddGPT2Config(), 3, 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, batch, seqLen := tc.cfg, tc.batch, tc.seqLen
			m64 := newModel[float64](t, cfg, batch, seqLen, 1)
			m32 := newModel[float32](t, cfg, batch, seqLen, 1)
			tokens, targets := randomTokens(batch*seqLen, cfg.Vocab, 2), randomTokens(batch*seqLen, cfg.Vocab, 3)
			l64 := step(t, m64, tokens, targets)
			l32 := step(t, m32, tokens, targets)
			if d := math.Abs(l32-l64) / l64; d > lossTol32 {
				t.Errorf("loss: float32 %.9g, float64 %.9g (relative %.2g)", l32, l64, d)
			}
			var worst float64
			for _, ts := range m64.layout.Tensors {
				var diff, norm float64
				for i := ts.Offset; i < ts.Offset+ts.Size; i++ {
					g := m64.Grads()[i]
					diff += (float64(m32.Grads()[i]) - g) * (float64(m32.Grads()[i]) - g)
					norm += g * g
				}
				if norm == 0 { // GPT-2's positions beyond seqLen get no gradient
					if diff != 0 {
						t.Errorf("%s: float64 gradient zero, float32 not", ts.Name)
					}
					continue
				}
				rel := math.Sqrt(diff / norm)
				worst = max(worst, rel)
				if rel > gradTol32 {
					t.Errorf("%s: ‖g32 − g64‖/‖g64‖ = %.2g", ts.Name, rel)
				}
			}
			t.Logf("loss relative difference %.2g; worst tensor gradient relative difference %.2g", math.Abs(l32-l64)/l64, worst)
		})
	}
}

// Tolerances of float32 against float64: the loss relative difference, and the relative
// Euclidean distance of each tensor's gradient.
const (
	lossTol32 = 1e-7
	gradTol32 = 1e-5
)

// TestInitialLoss checks the loss of a freshly initialised model against its closed form.
// The final norm's output has mean square 1 in every row (its scale is 1 at init), so for
// the head's N(0, σ²) weights the logits of a row are N(0, s²) with s² = C·σ², whence
// E[lse] = ln V + s²/2 − (e^{s²}−1)/(2V) + O(V⁻²). The cross-entropy averaged over all V
// possible targets, −mean log p, is compared with that tightly; the loss on the random
// targets, which adds the noise of z[target], within four standard errors s/√N. The closed
// form needs a head independent of the input, so the model is untied: tied, the logit of
// each input token carries its own embedding's square norm.
func TestInitialLoss(t *testing.T) {
	cfg := preset(t, "tiny-llama")
	cfg.Untied = true
	const batch = 4
	n := batch * cfg.Context
	m := newModel[float64](t, cfg, batch, cfg.Context, 42)
	loss, err := m.Forward(randomTokens(n, cfg.Vocab, 1), randomTokens(n, cfg.Vocab, 2))
	if err != nil {
		t.Fatal(err)
	}
	var uniform float64 // −mean log p over rows and vocabulary; the probabilities are in logits
	for _, p := range m.act.logits {
		uniform -= math.Log(p)
	}
	uniform /= float64(len(m.act.logits))
	s2 := float64(cfg.Dim) * cfg.InitStd * cfg.InitStd
	v := float64(cfg.Vocab)
	want := math.Log(v) + s2/2 - math.Expm1(s2)/(2*v)
	stdErr := math.Sqrt(s2 / float64(n))
	t.Logf("ln V = %.5f, closed form %.5f, uniform-target loss %.5f, loss %.5f (standard error %.3f)", math.Log(v), want, uniform, loss, stdErr)
	if math.Abs(uniform-want) > 2e-3 {
		t.Errorf("uniform-target loss at init %.5f, want %.5f ± 0.002", uniform, want)
	}
	if math.Abs(loss-want) > 4*stdErr {
		t.Errorf("loss at init %.5f, want %.5f ± %.3f", loss, want, 4*stdErr)
	}
}

// detConfig is big enough that every kernel splits its work across several workers.
func detConfig() model.Config {
	return model.Config{Arch: model.LLaMA, Vocab: 64, Dim: 32, Layers: 2, Heads: 4, Context: 64, Hidden: 48, Batch: 8}.WithDefaults()
}

// TestDeterministicAcrossWorkers checks, for both architectures, that losses and gradients
// are bitwise the same with pools of 1, 2 and 3 workers.
func TestDeterministicAcrossWorkers(t *testing.T) {
	for _, cfg := range []model.Config{detConfig(), detGPT2Config()} {
		t.Run(string(cfg.Arch), func(t *testing.T) {
			tokens, targets := randomTokens(cfg.Batch*cfg.Context, cfg.Vocab, 1), randomTokens(cfg.Batch*cfg.Context, cfg.Vocab, 2)
			var ref []float32
			var refLoss float64
			for _, workers := range []int{1, 2, 3} {
				m := newModel[float32](t, cfg, cfg.Batch, cfg.Context, 7)
				roughen(m, 0.1, 8)
				pool := par.NewPool(workers)
				m.setPool(pool)
				loss := step(t, m, tokens, targets)
				loss2 := step(t, m, tokens, targets) // accumulate once more
				pool.Close()
				if loss2 != loss {
					t.Errorf("%d workers: the same forward twice gave %v and %v", workers, loss, loss2)
				}
				if ref == nil {
					ref, refLoss = append([]float32(nil), m.Grads()...), loss
					continue
				}
				if loss != refLoss {
					t.Errorf("%d workers: loss %v, with 1 worker %v", workers, loss, refLoss)
				}
				for i, g := range m.Grads() {
					if math.Float32bits(g) != math.Float32bits(ref[i]) {
						t.Errorf("%d workers: gradient %d is %v, with 1 worker %v", workers, i, g, ref[i])
						break
					}
				}
			}
		})
	}
}

// TestZeroAllocs checks that a training step of tiny-llama and tiny-gpt2 at the PyTorch
// peer's shape allocates nothing in steady state.
func TestZeroAllocs(t *testing.T) {
	for _, name := range []string{"tiny-llama", "tiny-gpt2"} {
		cfg := preset(t, name)
		batch, seqLen := cfg.Batch, cfg.Context
		m := newModel[float32](t, cfg, batch, seqLen, 1)
		tokens, targets := randomTokens(batch*seqLen, cfg.Vocab, 2), randomTokens(batch*seqLen, cfg.Vocab, 3)
		step(t, m, tokens, targets)
		allocs := testing.AllocsPerRun(3, func() {
			m.ZeroGrad()
			if _, err := m.Forward(tokens, targets); err != nil {
				t.Fatal(err)
			}
			m.Backward()
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per step, want 0", name, allocs)
		}
	}
}

// TestTrainingReducesLoss trains each architecture on one repeated batch with SF-AdamW.
func TestTrainingReducesLoss(t *testing.T) {
	for _, name := range []string{"micro-llama", "micro-gpt2"} {
		cfg := preset(t, name)
		m := newModel[float32](t, cfg, cfg.Batch, cfg.Context, 1)
		n := cfg.Batch * cfg.Context
		tokens, targets := randomTokens(n, cfg.Vocab, 2), randomTokens(n, cfg.Vocab, 3)
		oc := sfadamw.DefaultConfig()
		oc.LR = 1e-2
		opt, err := sfadamw.New(oc, m.Params())
		if err != nil {
			t.Fatal(err)
		}
		var first, last float64
		for i := range 60 {
			m.ZeroGrad()
			last = step(t, m, tokens, targets)
			if i == 0 {
				first = last
			}
			opt.Step(m.Grads())
		}
		t.Logf("%s: loss %.4f → %.4f after 60 steps", name, first, last)
		if !(last < 0.5*first) {
			t.Errorf("%s: loss %.4f → %.4f: training on one batch should at least halve it", name, first, last)
		}
	}
}

// TestGradientAccumulation checks the documented semantics for each architecture: Backward
// after each of two half batches leaves the sum of the half-batch mean gradients in Grads,
// which is twice the full-batch mean gradient.
func TestGradientAccumulation(t *testing.T) {
	for _, name := range []string{"micro-llama", "micro-gpt2"} {
		cfg := preset(t, name)
		const batch, seqLen = 4, 8
		n := batch * seqLen
		tokens, targets := randomTokens(n, cfg.Vocab, 2), randomTokens(n, cfg.Vocab, 3)
		full := newModel[float64](t, cfg, batch, seqLen, 1)
		roughen(full, 0.2, 4)
		step(t, full, tokens, targets)
		half := newModel[float64](t, cfg, batch/2, seqLen, 1)
		copy(half.Params(), full.Params())
		step(t, half, tokens[:n/2], targets[:n/2])
		step(t, half, tokens[n/2:], targets[n/2:])
		var worst float64
		for i, g := range full.Grads() {
			worst = max(worst, math.Abs(half.Grads()[i]/2-g))
		}
		if worst > 1e-15 {
			t.Errorf("%s: accumulated/2 differs from the full-batch gradient by up to %g", name, worst)
		}
	}
}

func TestForwardErrors(t *testing.T) {
	cfg := preset(t, "micro-llama")
	m := newModel[float32](t, cfg, 1, 4, 1)
	ok := []int32{1, 2, 3, 4}
	for _, tc := range []struct {
		tokens, targets []int32
		want            string
	}{
		{[]int32{1, 2, 32, 4}, ok, "tokens[2] = 32"},
		{[]int32{1, -1, 3, 4}, ok, "tokens[1] = -1"},
		{ok, []int32{0, 0, 0, 99}, "targets[3] = 99"},
		{ok[:3], ok, "3 tokens"},
	} {
		if _, err := m.Forward(tc.tokens, tc.targets); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Forward(%v, %v): error %v, want one naming %q", tc.tokens, tc.targets, err, tc.want)
		}
	}
	mustFail := func(what string) {
		t.Helper()
		if err := m.Backward(); err != errNoForward {
			t.Errorf("Backward %s: error %v, want errNoForward", what, err)
		}
	}
	mustFail("after a failed Forward")
	step(t, m, ok, ok)
	mustFail("twice after one Forward")
}

func TestNewErrors(t *testing.T) {
	llama := preset(t, "micro-llama")
	for _, tc := range []struct {
		cfg           model.Config
		batch, seqLen int
		want          string
	}{
		{preset(t, "micro-gpt2"), 1, 9, "seqLen = 9"},
		{llama, 1, 9, "seqLen = 9"},
		{llama, 1, 0, "seqLen = 0"},
		{llama, 0, 8, "batch = 0"},
		{model.Config{Arch: model.LLaMA}, 1, 1, "vocab"},
	} {
		if _, err := New[float32](tc.cfg, tc.batch, tc.seqLen); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%s, %d, %d): error %v, want one containing %q", tc.cfg.Arch, tc.batch, tc.seqLen, err, tc.want)
		}
	}
}

// TestActivationBytes checks the counted activation memory against the sizes of the buffers
// written out from the shapes: per layer the norm outputs and reciprocal RMS, q|k|v, the
// attention probabilities, the head outputs, gate|up and the SwiGLU output; the residual
// streams; the final norm and the logits; and the backward scratch.
func TestActivationBytes(t *testing.T) {
	cfg, _ := model.Preset("tiny-llama")
	m, err := New[float32](cfg, 4, 32)
	if err != nil {
		t.Fatal(err)
	}
	n, c, f, v, L := 4*32, cfg.Dim, cfg.Hidden, cfg.Vocab, cfg.Layers
	att := 4 * cfg.Heads * 32 * 32
	layer := 2*n + 2*n*c + 3*n*c + att + n*c + 2*n*f + n*f
	elems := (2*L+1)*n*c + L*layer + n + n*c + n*v + // forward
		n*c + n*c + 3*n*c + att + n*c + 2*n*f + n*f + (n+15)/16*c + n*c // backward scratch
	want := 4*elems + 8*n // float32 buffers, plus the float64 per-row losses
	if got := m.ActivationBytes(); got != want {
		t.Errorf("ActivationBytes = %d, want %d", got, want)
	}
}
