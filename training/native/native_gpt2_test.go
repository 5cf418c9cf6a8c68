package native

import (
	"math"
	"testing"

	"github.com/sfsweep/sfsweep/training/model"
)

// The model-level tests of GPT-2, the counterparts of those of native_test.go.

// oddGPT2Config is oddConfig as GPT-2: heads 3, head size 4 (odd head sizes are allowed
// without RoPE, but the shapes stay those of the LLaMA check), hidden 20.
func oddGPT2Config() model.Config {
	c := oddConfig()
	c.Arch, c.RopeTheta = model.GPT2, 0
	return c
}

// TestGPT2TiedHead checks that the head really is the token embedding: the gradient of wte
// is the sum of the embedding-gather and head contributions, so with every token id absent
// from the input the rows of those ids still get the head's gradient, and changing wte
// changes the logits.
func TestGPT2TiedHead(t *testing.T) {
	cfg := preset(t, "micro-gpt2")
	m := newModel[float64](t, cfg, 1, 4, 1)
	if &m.p.head[0] != &m.p.emb[0] || &m.g.head[0] != &m.g.emb[0] {
		t.Fatal("head and wte are different buffers")
	}
	step(t, m, []int32{1, 2, 3, 4}, []int32{2, 3, 4, 5})
	row := m.Grads()[20*cfg.Dim : 21*cfg.Dim] // id 20: neither a token nor a target
	var norm float64
	for _, g := range row {
		norm += g * g
	}
	if norm == 0 {
		t.Fatal("the wte row of an id absent from the input has no gradient: the head is not tied")
	}
}

// TestGPT2InitialLoss checks the loss at init against the closed form of TestInitialLoss,
// ln V + s²/2 − (e^{s²}−1)/(2V) with s² = C·σ² (ln_f's output has mean square 1 per row at
// init, its bias is 0). The tolerance, 0.02, is four standard errors s/√N of the random
// targets; with the tied head the logit of a row's own input token is slightly raised
// (ln_f(x) has a component along wte[token]), which the closed form ignores.
func TestGPT2InitialLoss(t *testing.T) {
	cfg := preset(t, "tiny-gpt2")
	const batch = 4
	n := batch * cfg.Context
	m := newModel[float64](t, cfg, batch, cfg.Context, 42)
	loss, err := m.Forward(randomTokens(n, cfg.Vocab, 1), randomTokens(n, cfg.Vocab, 2))
	if err != nil {
		t.Fatal(err)
	}
	s2 := float64(cfg.Dim) * cfg.InitStd * cfg.InitStd
	v := float64(cfg.Vocab)
	want := math.Log(v) + s2/2 - math.Expm1(s2)/(2*v)
	t.Logf("ln V = %.5f, closed form %.5f, loss %.5f", math.Log(v), want, loss)
	if math.Abs(loss-want) > 0.02 {
		t.Errorf("loss at init %.5f, want %.5f ± 0.02", loss, want)
	}
}

func detGPT2Config() model.Config {
	c := detConfig()
	c.Arch, c.RopeTheta, c.Hidden = model.GPT2, 0, 4*c.Dim
	return c
}

// TestGPT2ActivationBytes is TestActivationBytes for GPT-2: gu is (N,F) (the c_fc output),
// the LayerNorms also keep their row means, and the bias gradients have their own per-chunk
// partial sums.
func TestGPT2ActivationBytes(t *testing.T) {
	cfg, _ := model.Preset("tiny-gpt2")
	m, err := New[float32](cfg, 4, 32)
	if err != nil {
		t.Fatal(err)
	}
	n, c, f, v, L := 4*32, cfg.Dim, cfg.Hidden, cfg.Vocab, cfg.Layers
	att := 4 * cfg.Heads * 32 * 32
	chunks := (n + 15) / 16
	layer := 4*n + 2*n*c + 3*n*c + att + n*c + 2*n*f
	elems := (2*L+1)*n*c + L*layer + 2*n + n*c + n*v + // forward
		n*c + n*c + 3*n*c + att + n*c + 2*n*f + chunks*c + n*c + chunks*max(3*c, f) // backward scratch
	want := 4*elems + 8*n
	if got := m.ActivationBytes(); got != want {
		t.Errorf("ActivationBytes = %d, want %d", got, want)
	}
}
