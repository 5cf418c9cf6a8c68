package model

import (
	"errors"
	"math"
	"testing"

	"github.com/sfsweep/sfsweep/fielderr"
)

// TestPresetSizes checks the parameter counts against independent arithmetic: tiny-llama is
// 922,752 (the PyTorch peer's count) and small-llama 49,255,296; the 124M presets.
func TestPresetSizes(t *testing.T) {
	llama := func(V, d, L, h int) int { return V*d + L*(2*d+4*d*d+3*d*h) + d + V*d }
	gpt2 := func(V, d, L, h, ctx int) int {
		return V*d + ctx*d + L*(4*d+3*d*d+3*d+d*d+d+2*d*h+h+d) + 2*d
	}
	cases := map[string]int{
		"tiny-llama":  922_752,
		"twin-llama":  llama(512, 64, 4, 172),
		"mini-llama":  llama(320, 48, 3, 128),
		"small-llama": 49_255_296,
		"llama-124m":  llama(50304, 768, 12, 2048),
		"gpt2-124m":   gpt2(50304, 768, 12, 3072, 512),
	}
	if cases["tiny-llama"] != llama(512, 128, 4, 344) || cases["small-llama"] != llama(50304, 384, 6, 1024) {
		t.Fatal("the formula disagrees with the peer's published counts")
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

// TestFLOPs checks the step FLOPs against the PyTorch peer's published figures
// (12.144 GFLOP for tiny, 382.38 for small).
func TestFLOPs(t *testing.T) {
	for name, want := range map[string]float64{"tiny-llama": 12.144e9, "small-llama": 382.38e9} {
		c, _ := Preset(name)
		got := c.FLOPsPerStep(c.Batch, c.Context)
		if math.Abs(got-want)/want > 5e-4 {
			t.Errorf("%s: %.4g FLOP/step, want %.4g", name, got, want)
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
	if View(l, a, "blocks.0.att.wq.weight")[0] == View(l, b, "blocks.0.att.wq.weight")[0] {
		t.Error("different seeds gave the same weights")
	}
	for _, n := range []string{"blocks.0.n1.weight", "norm.weight"} {
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
	if s := std(View(l, a, "emb.weight")); math.Abs(s-0.02) > 0.001 {
		t.Errorf("embedding std %.4f, want 0.02", s)
	}
	if s, want := std(View(l, a, "blocks.1.mlp.w2.weight")), 0.02/math.Sqrt(8); math.Abs(s-want) > 0.0005 {
		t.Errorf("residual projection std %.4f, want %.4f", s, want)
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
