package training

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
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

// stableConfigs cover every field of a run config, each set away from its default somewhere.
var stableConfigs = []string{
	tinyYAML,
	`
model_config: {arch: llama, vocab: 257, dim: 32, layers: 2, heads: 2, context: 32, hidden: 64, batch: 4}
backend: cuda
precision: bf16
data: {path: datasets/owt, max_bytes: 1000}
optimizer: {name: adamw, lr: 0.001, beta1: 0.9, beta2: 0.95, eps: 1e-6, weight_decay: 0.05, grad_clip: 0.5, warmup_frac: 0.1, schedule: wsd, final_frac: 0.2, decay_frac: 0.25}
batch_tokens: 512
micro_batch: 8
seq_len: 16
steps: 40
eval_every: 10
eval_seqs: 16
test_seqs: 24
checkpoint_every: 5
keep_checkpoints: 2
ewa_decay: 0.9
seed: 7
`,
	`
model: micro-llama
backend: cuda
precision: tf32
data: {default: gpt2, max_bytes: 4096}
optimizer: {name: sfadamw, lr: 0.003, beta1: 0.9, beta2: 0.999, c: 50, warmup_frac: 0}
batch_tokens: 64
steps: 100
eval_every: 20
checkpoint_every: 20
seed: 0
`,
}

// The JSON of a run config is hashed into its trial's ID, and stored as config.json: its
// bytes must not change, with defaults applied or as given. want are the sums since the
// model's head became tied by default (model_config's untied, always written), which
// changed every trial's ID; decayed are those of before it, since weight decay became the
// paper's (decay_params, default linear), which the JSON gives again without untied; before
// are those of the code before the run settings became shared types (commit ac8f7d0),
// computed there, which the JSON gives again without untied and decay_params. Each change
// added its field and nothing else.
func TestHashStable(t *testing.T) {
	want := [][3]string{ // Hash, the sha256 of the JSON with defaults, and as given
		{"fe0b35017e5dea7b4b7bb0f977c815e3e32e444305dc569e7a668fe15b5add73",
			"87ee14536cc40abc5bf7de22962e485f96dc9e2362b84b107a3b6b52fcae94b3",
			"58d8aead19a557df0b2f5d6e172d608ea31302cb4edff030f7e2da0cf369a50b"},
		{"ef9e3210001c3d99edabe0b16d3092a3eefba1d98bbb43666f7f2f339aa5ee45",
			"7cbad0ff360a87bed34f1ea34c9776722605d5c22310b7e83924e24f3c9231ee",
			"48cb48cebfedcd01cb4b0d11a887b5dd4621a767a8aa3806b86165c1313e86d8"},
		{"f1d68625c2201aad10f3256cc6df38205133f829773aafdab026f59f43c7f8bb",
			"53ab88b219da73713b2bd19ea60b942091def35a83a320d78985f6338f2d1c4d",
			"153e7efca9199ddf4405de888cf545bcf16e16f2a0c8cd34df2a7f3782a3923e"},
	}
	decayed := [][3]string{ // the same, without untied
		{"920ae95c8c66d73a2e0a1da78afd05b64105c1aaa5d6a47191aa6cfa6e91a12c",
			"87ee14536cc40abc5bf7de22962e485f96dc9e2362b84b107a3b6b52fcae94b3",
			"58d8aead19a557df0b2f5d6e172d608ea31302cb4edff030f7e2da0cf369a50b"},
		{"060d4ae8499d5b53c1514e8b6c4fcdc0b996c7be16274f18d56cb15b1082fbdf",
			"0aacbe3bfb8d77d8e0b60ecfdd6b41e707a3a56cd073c3945cd5ed488e4f9c2e",
			"f33b1f73cd68fb399e8d492690ee6cba0e2b1e5d99b2b8993264fdcaf68e1a3c"},
		{"f9426fc8747bd2d9e572d403a291a9beb6eab8b12e32cad30e089d27d5fb31ec",
			"53ab88b219da73713b2bd19ea60b942091def35a83a320d78985f6338f2d1c4d",
			"153e7efca9199ddf4405de888cf545bcf16e16f2a0c8cd34df2a7f3782a3923e"},
	}
	before := [][2]string{ // Hash and the sha256 of the JSON with defaults, without untied and decay_params
		{"7e5e2d9f554d1da47e31ddb9ef2be02ffdad73e3694bef18ab8f8e64ff65ba27", "2325ef4fa1d21f77efe6cf837437d3cb03b5bc0b4a44facd5f0383056a19ab88"},
		{"352df923929fdcec5e1b269ea9d197580df303a34692e5bcdb1ce170e6c0ffa6", "a4735071f6068e2d76a82194595d81661c06e99527755722828f49e500caaa23"},
		{"6985eada69d45c7f7f7b8d46d25f2dab67ed82b788977d8d7c0db8dd2f77b0c9", "4ecda43677f97a6f6cb7a60e983b1b26728766ed2149c12cb69016ed3c663141"},
	}
	// sum is the sha256 of v's JSON without the fields given
	sum := func(v any, strip ...string) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range strip {
			b = bytes.Replace(b, []byte(f), nil, 1)
		}
		s := sha256.Sum256(b)
		return hex.EncodeToString(s[:])
	}
	const untied, decay = `,"untied":false`, `,"decay_params":"linear"`
	for i, src := range stableConfigs {
		c, err := ParseConfig([]byte(src))
		if err != nil {
			t.Fatalf("config %d: %v", i, err)
		}
		var given Config
		if err := yaml.Unmarshal([]byte(src), &given); err != nil {
			t.Fatal(err)
		}
		if got := [3]string{c.Hash(), sum(c), sum(given)}; got != want[i] {
			t.Errorf("config %d: sums\n%q, want\n%q", i, got, want[i])
		}
		if got := [3]string{sum(c.Canonical(), untied), sum(c, untied), sum(given, untied)}; got != decayed[i] {
			t.Errorf("config %d: without untied, sums\n%q, want those before it\n%q", i, got, decayed[i])
		}
		if got := [2]string{sum(c.Canonical(), untied, decay), sum(c, untied, decay)}; got != before[i] {
			t.Errorf("config %d: without untied and decay_params, sums\n%q, want those before them\n%q", i, got, before[i])
		}
	}
}
