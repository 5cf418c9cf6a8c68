package training

import (
	"strings"
	"testing"
)

const tinyYAML = `
model: micro-llama
data:
  default: byte
optimizer:
  name: sfadamw
  lr: 0.002
  beta1: 0.95
  beta2: 0.99
batch_tokens: 32
steps: 10
seed: 1
`

func TestParseConfigDefaults(t *testing.T) {
	c, err := ParseConfig([]byte(tinyYAML))
	if err != nil {
		t.Fatal(err)
	}
	o := c.Optimizer
	if c.MicroBatch != 2 || c.SeqLen != 8 || c.Accum() != 2 || c.Backend != "cpu" || c.EWADecay != 0.99 ||
		*o.WeightDecay != 0.1 || *o.GradClip != 0 || *o.WarmupFrac != 0.05 || o.Eps != 1e-8 || c.EvalSeqs != 3200 {
		t.Errorf("defaults not the paper's: %+v, optimizer %+v", c, o)
	}
	a, err := ParseConfig([]byte(strings.Replace(tinyYAML, "sfadamw", "adamw", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if *a.Optimizer.GradClip != 1 || a.Optimizer.Schedule != "cosine" || *a.Optimizer.FinalFrac != 0.1 {
		t.Errorf("AdamW defaults: %+v", a.Optimizer)
	}
	if ac := a.AdamWConfig(); ac.Schedule.WarmupSteps != 0 || ac.Schedule.TotalSteps != 10 {
		t.Errorf("AdamW schedule %+v", ac.Schedule)
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct{ edit, want string }{
		{"seed: 1\nbogus: 3", "line 13: field bogus not found"},
		{"  beta2: 0.99\n  betta: 1", "line 10: field betta not found"},
		{"beta1: 0.95|beta1: 1.5", "optimizer.beta1 = 1.5"},
		{"name: sfadamw|name: adam", `optimizer.name = "adam"`},
		{"batch_tokens: 32|batch_tokens: 33", "batch_tokens = 33: must be a multiple of micro_batch × seq_len = 2 × 8 = 16"},
		{"model: micro-llama|model: huge", "model = huge: unknown preset"},
		{"steps: 10|steps: 0", "steps = 0: must be ≥ 1"},
		{"lr: 0.002|lr: .nan", "optimizer.lr = NaN"},
		{"default: byte|default: utf8", `data.default = utf8`},
		{"steps: 10|steps: ten", "cannot unmarshal !!str `ten`"},
		{"seed: 1|seed: 1\nseq_len: 9", "seq_len = 9: must be ≤ the model's context (8)"},
		{"  lr: 0.002|  lr: 0.002\n  c: -1", "optimizer.c = -1"},
		{"seed: 1|seed: 1\nmicro_batch: 4611686018427387904", "micro_batch = 4611686018427387904: must be ≤ 1099511627776"},
		{"seed: 1|seed: 1\nprecision: bf16", `precision = bf16: backend cpu has no such precision; it has fp32`},
		{"seed: 1|seed: 1\nprecision: fp8", `precision = fp8: must be one of fp32, tf32, bf16`},
	} {
		src := tinyYAML
		if old, nw, ok := strings.Cut(tc.edit, "|"); ok {
			src = strings.Replace(src, old, nw, 1)
		} else {
			src = strings.Replace(src, strings.SplitN(tc.edit, "\n", 2)[0], tc.edit, 1)
		}
		_, err := ParseConfig([]byte(src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.edit, err, tc.want)
		}
	}
}

// Refined SF-AdamW with C = 1/(1−β1) is vanilla SF-AdamW: the same run, the same hash.
func TestHashCanonical(t *testing.T) {
	base, err := ParseConfig([]byte(tinyYAML))
	if err != nil {
		t.Fatal(err)
	}
	refined := base
	refined.Optimizer.C = 20 // = 1/(1−0.95)
	if base.Hash() != refined.Hash() {
		t.Error("C = 1/(1−β1) hashes differently from vanilla")
	}
	other := base
	other.Optimizer.C = 50
	if base.Hash() == other.Hash() {
		t.Error("C = 50 hashes like vanilla")
	}
	byPreset := base
	mc, _ := base.ResolveModel()
	byPreset.Model, byPreset.ModelConfig = "", &mc
	if base.Hash() != byPreset.Hash() {
		t.Error("a preset and its spelled-out config hash differently")
	}
	bf, named := base, base
	bf.Backend, bf.Precision = "cuda", "bf16"
	named.Backend = "cuda-bf16"
	if bf = bf.WithDefaults(); bf.Backend != "cuda-bf16" || bf.Hash() != named.WithDefaults().Hash() || bf.Hash() == base.Hash() {
		t.Errorf("backend cuda with precision bf16 is %q, hash %.8s; backend cuda-bf16 hashes %.8s", bf.Backend, bf.Hash(), named.WithDefaults().Hash())
	}
	seed := base
	seed.Seed = 2
	if base.Hash() == seed.Hash() {
		t.Error("the seed does not change the hash")
	}
}
