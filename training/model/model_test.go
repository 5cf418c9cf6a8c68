package model

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/fielderr"
)

// TestPresetSizes checks the parameter counts against independent arithmetic: untied,
// tiny-llama is 922,752 (the PyTorch peer's count of before the tie) and small-llama
// 49,255,296; tied, llama-124m is llm-baselines' 123,587,328 (its get_num_params at the
// paper's n_embd 768, n_layer 12, vocab 50304 and multiple_of 256).
func TestPresetSizes(t *testing.T) {
	llama := func(V, d, L, h int) int { return V*d + L*(2*d+4*d*d+3*d*h) + d }
	gpt2 := func(V, d, L, h, ctx int) int { return V*d + ctx*d + L*(2*d+4*d*d+2*d*h) + d }
	gpt2Biased := func(V, d, L, h, ctx int) int {
		return V*d + ctx*d + L*(4*d+3*d*d+3*d+d*d+d+2*d*h+h+d) + 2*d
	}
	cases := map[string]int{
		"tiny-llama":  llama(512, 128, 4, 344),
		"twin-llama":  llama(512, 64, 4, 172),
		"mini-llama":  llama(320, 48, 3, 128),
		"small-llama": llama(50304, 384, 6, 1024),
		"llama-124m":  llama(50304, 768, 12, 2048),
		"gpt2-124m":   gpt2(50304, 768, 12, 3072, 512),
	}
	if 922_752 != llama(512, 128, 4, 344)+512*128 || 49_255_296 != llama(50304, 384, 6, 1024)+50304*384 {
		t.Fatal("the formula disagrees with the peer's published counts")
	}
	// llm-baselines' GPT-2 has no biases; nanoGPT's (Biases) at its block size of 1024 is
	// its published 124,475,904 with the vocabulary padded to 50304
	if c, _ := Preset("gpt2-124m"); c.Biases || c.NumParams() != 123_980_544 {
		t.Errorf("gpt2-124m: biases %v, %d parameters; want llm-baselines' 123,980,544 without biases", c.Biases, c.NumParams())
	}
	nano := model1024("gpt2-124m")
	nano.Biases = true
	if got, want := nano.NumParams(), gpt2Biased(50304, 768, 12, 3072, 1024); got != want || got != 124_475_904 {
		t.Errorf("gpt2-124m with biases at context 1024: %d parameters, formula %d, want 124,475,904", got, want)
	}
	if cases["llama-124m"] != 123_587_328 {
		t.Fatalf("llama-124m by the formula has %d parameters, not llm-baselines' 123,587,328", cases["llama-124m"])
	}
	for name, want := range map[string]int{"tiny-llama": 922_752, "small-llama": 49_255_296} {
		c, _ := Preset(name)
		c.Untied = true
		if got := c.NumParams(); got != want {
			t.Errorf("%s untied: %d parameters, want %d", name, got, want)
		}
		if _, ok := c.Layout().Tensor("lm_head.weight"); !ok || c.Head() != "lm_head.weight" {
			t.Errorf("%s untied: no lm_head.weight", name)
		}
	}
	for name, want := range cases {
		c, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := c.NumParams(); got != want {
			t.Errorf("%s: %d parameters, want %d", name, got, want)
		}
	}
	if c, _ := Preset("gpt2-124m"); c.NumParams() < 123e6 || c.NumParams() > 125e6 {
		t.Errorf("gpt2-124m has %d parameters, want ~124M", c.NumParams())
	}
}

// model1024 is the preset name at a context of 1024, nanoGPT's block size.
func model1024(name string) Config {
	c, _ := Preset(name)
	c.Context = 1024
	return c
}

// TestFLOPs checks the step FLOPs against the PyTorch peer's published figures
// (12.144 GFLOP for tiny, 382.38 for small). Tying moves the head's matmul from its own
// weight to the embedding's, so tied and untied models do the same FLOPs.
func TestFLOPs(t *testing.T) {
	for name, want := range map[string]float64{"tiny-llama": 12.144e9, "small-llama": 382.38e9} {
		for _, untied := range []bool{false, true} {
			c, _ := Preset(name)
			c.Untied = untied
			got := c.FLOPsPerStep(c.Batch, c.Context)
			if math.Abs(got-want)/want > 5e-4 {
				t.Errorf("%s (untied %v): %.4g FLOP/step, want %.4g", name, untied, got, want)
			}
		}
	}
}

// TestDecayedKinds checks which tensors weight decay reaches, as llm-baselines'
// get_parameter_group_specs groups them: the linear layers' weights, never a norm, a bias,
// an embedding or the LM head, tied or untied.
func TestDecayedKinds(t *testing.T) {
	for _, name := range []string{"micro-llama", "micro-gpt2"} {
		for _, untied := range []bool{false, true} {
			c, _ := Preset(name)
			c.Untied = untied
			l := c.Layout()
			in := make([]bool, l.Size)
			for _, r := range l.Decayed() {
				for i := r[0]; i < r[1]; i++ {
					in[i] = true
				}
			}
			for _, ts := range l.Tensors {
				want := strings.HasSuffix(ts.Name, ".weight") && (strings.Contains(ts.Name, ".attn.") || strings.Contains(ts.Name, ".mlp."))
				for i := ts.Offset; i < ts.Offset+ts.Size; i++ {
					if in[i] != want {
						t.Fatalf("%s untied %v: %s decayed %v, want %v", name, untied, ts.Name, in[i], want)
					}
				}
			}
		}
	}
}

func TestLayoutIsContiguous(t *testing.T) {
	for _, name := range PresetNames() {
		c, _ := Preset(name)
		l := c.Layout()
		off := 0
		seen := map[string]bool{}
		for _, ts := range l.Tensors {
			if ts.Offset != off || seen[ts.Name] {
				t.Fatalf("%s: tensor %s at %d, want %d (or duplicate)", name, ts.Name, ts.Offset, off)
			}
			seen[ts.Name] = true
			n := 1
			for _, s := range ts.Shape {
				n *= s
			}
			if n != ts.Size {
				t.Fatalf("%s: %s shape %v has %d elements, size %d", name, ts.Name, ts.Shape, n, ts.Size)
			}
			off += ts.Size
		}
		if off != l.Size {
			t.Fatalf("%s: tensors cover %d of %d", name, off, l.Size)
		}
	}
}

func TestInit(t *testing.T) {
	c, _ := Preset("tiny-llama")
	l := c.Layout()
	a, b := make([]float32, l.Size), make([]float32, l.Size)
	Init(c, 7, a)
	Init(c, 7, b)
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("Init is not deterministic")
		}
	}
	Init(c, 8, b)
	if View(l, a, "transformer.h.0.attn.c_attn.weight")[0] == View(l, b, "transformer.h.0.attn.c_attn.weight")[0] {
		t.Error("different seeds gave the same weights")
	}
	for _, n := range []string{"transformer.h.0.ln_1.weight", "transformer.ln_f.weight"} {
		for _, v := range View(l, a, n) {
			if v != 1 {
				t.Fatalf("%s not initialised to 1", n)
			}
		}
	}
	std := func(v []float32) float64 {
		var s float64
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		return math.Sqrt(s / float64(len(v)))
	}
	if s := std(View(l, a, "transformer.wte.weight")); math.Abs(s-0.02) > 0.001 {
		t.Errorf("embedding std %.4f, want 0.02", s)
	}
	if s := std(View(l, a, "transformer.h.1.mlp.w2.weight")); math.Abs(s-0.02) > 0.001 {
		t.Errorf("up projection std %.4f, want 0.02", s)
	}
	for _, n := range []string{"transformer.h.1.mlp.c_proj.weight", "transformer.h.2.attn.c_proj.weight"} {
		if s, want := std(View(l, a, n)), 0.02/math.Sqrt(8); math.Abs(s-want) > 0.0005 {
			t.Errorf("%s: residual projection std %.4f, want %.4f", n, s, want)
		}
	}
}

func TestValidate(t *testing.T) {
	base, _ := Preset("tiny-llama")
	cases := []struct {
		field string
		mut   func(*Config)
	}{
		{"arch", func(c *Config) { c.Arch = "rwkv" }},
		{"dim", func(c *Config) { c.Dim = 0 }},
		{"heads", func(c *Config) { c.Heads = 3 }},
		{"biases", func(c *Config) { c.Biases = true }},       // a LLaMA has none
		{"heads", func(c *Config) { c.Dim, c.Heads = 12, 4 }}, // odd head size
		{"vocab", func(c *Config) { c.Vocab = 70000 }},
		{"norm_eps", func(c *Config) { c.NormEps = math.NaN() }},
		{"rope_theta", func(c *Config) { c.RopeTheta = -1 }},
	}
	for _, tc := range cases {
		c := base
		tc.mut(&c)
		var fe *fielderr.Error
		if err := c.Validate(); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%+v: got %v, want an error for %s", c, err, tc.field)
		}
	}
	if _, err := Preset("huge-llama"); err == nil {
		t.Error("unknown preset accepted")
	}
}
