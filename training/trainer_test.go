package training

import (
	"slices"
	"strings"
	"testing"
)

func TestTrainerConfig(t *testing.T) {
	native := Config{Setup: Setup{Model: "tiny-llama"}, Optimizer: OptimizerConfig{Name: SFAdamW, LR: 1e-3, Beta1: 0.9, Beta2: 0.99}, BatchTokens: 2048, Loop: Loop{Steps: 10}}.WithDefaults()
	if err := native.Validate(); err != nil {
		t.Fatal(err)
	}
	// a program trainer's own run: no model, optimizer, data or batch
	own := Config{Loop: Loop{Steps: 10}, Seed: 3, Trainer: &Trainer{Name: "mine", Identity: "version:1", Params: map[string]any{"dropout": 0.1}}}.WithDefaults()
	if err := own.Validate(); err != nil {
		t.Fatalf("a program's own run: %v", err)
	}
	if own.Data != (DataConfig{}) || own.Optimizer.WeightDecay != nil {
		t.Fatalf("defaults filled what the program owns: data %+v, optimizer %+v", own.Data, own.Optimizer)
	}
	if own.Hash() == (Config{Loop: Loop{Steps: 10}, Seed: 3, Trainer: &Trainer{Name: "mine", Identity: "version:2", Params: map[string]any{"dropout": 0.1}}}).Hash() {
		t.Fatal("two identities of a trainer hash alike")
	}
	if args := own.Args(); len(args) != 1 || args[0].Key != "dropout" {
		t.Fatalf("args %v, want the trainer's parameters only", args)
	}
	// the same run by a program: the optimizer and loop as arguments, under config.json's names
	prog := native
	prog.Trainer = &Trainer{Name: "ref", Identity: "version:1"}
	if err := prog.Validate(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, a := range prog.Args() {
		keys = append(keys, a.Key)
	}
	if got := strings.Join(keys, " "); !strings.HasPrefix(got, "optimizer lr beta1 beta2 eps weight_decay decay_params grad_clip warmup_frac steps seed micro_batch seq_len batch_tokens") {
		t.Fatalf("args %q", got)
	}
	if prog.Hash() == native.Hash() {
		t.Fatal("a program's run hashes as the engine's")
	}
	for _, bad := range []*Trainer{{Name: "", Identity: "x"}, {Name: "-x", Identity: "x"}, {Name: "ok"}} {
		c := own
		c.Trainer = bad
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "trainer.") {
			t.Errorf("trainer %+v: err = %v", bad, err)
		}
	}
	// an optimizer, when a program run has one, is checked as the engine's
	bad := prog
	bad.Optimizer.Beta1 = 1.5
	if err := bad.Validate(); err == nil {
		t.Fatal("beta1 = 1.5 passed for a program's run")
	}
}

// A program trial's gpus: one GPU by default on a GPU backend, gpus: 1 alone the same
// config as backend: cuda (one ID), and what cannot be is refused, naming the field.
func TestTrainerGPUs(t *testing.T) {
	own := func(backend string, gpus int) Config {
		return Config{Setup: Setup{Backend: backend, GPUs: gpus}, Loop: Loop{Steps: 10}, Seed: 3, Trainer: &Trainer{Name: "mine", Identity: "version:1"}}
	}
	onGPU := own("cuda", 0).WithDefaults()
	for _, c := range []Config{own("", 1), own("cuda", 1)} {
		d := c.WithDefaults()
		if err := d.Validate(); err != nil {
			t.Fatalf("%+v: %v", c.Setup, err)
		}
		if d.Backend != "cuda" || d.GPUs != 0 || d.Hash() != onGPU.Hash() {
			t.Errorf("%+v: backend %q, gpus %d, hash %s; want backend: cuda's config, hash %s", c.Setup, d.Backend, d.GPUs, d.Hash(), onGPU.Hash())
		}
	}
	if two := own("", 2).WithDefaults(); two.Validate() != nil || two.GPUs != 2 || two.Backend != "cuda" || two.Hash() == onGPU.Hash() {
		t.Errorf("gpus: 2 = backend %q, gpus %d (%v), hash %s: want a valid config of two GPUs, another trial than one GPU's", two.Backend, two.GPUs, two.Validate(), two.Hash())
	}
	if own("", 0).WithDefaults().Hash() == onGPU.Hash() {
		t.Error("a program on the cpu hashes as one on a GPU")
	}
	engine := Config{Setup: Setup{Model: "tiny-llama", Backend: "cuda", GPUs: 1}, Optimizer: OptimizerConfig{Name: SFAdamW, LR: 1e-3, Beta1: 0.9, Beta2: 0.99}, BatchTokens: 2048, Loop: Loop{Steps: 10}}
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{own("", -1), "gpus = -1: must be ≥ 0"},
		{own("cpu", 1), "gpus = 1: backend cpu gives its program no GPU"},
		{own("", 65), "gpus = 65: must be ≤ 64"},
		{engine, "gpus = 1: only a program trainer's trial takes gpus"},
	} {
		if err := tc.c.WithDefaults().Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.c.Setup, err, tc.want)
		}
	}
}

// Weight decay applies where the paper's code applies it: the weights of linear layers,
// not norms, biases or embeddings (GPT-2's tied head included), by default; decay_params
// all gives every parameter, as before; another value is refused, naming the field.
func TestDecayParams(t *testing.T) {
	for _, name := range []string{"tiny-llama", "tiny-gpt2"} {
		c := Config{Setup: Setup{Model: name}, Optimizer: OptimizerConfig{Name: SFAdamW, LR: 1e-3, Beta1: 0.9, Beta2: 0.99}, BatchTokens: 2048, Loop: Loop{Steps: 10}}.WithDefaults()
		if c.Optimizer.DecayParams != DecayLinear {
			t.Fatalf("%s: decay_params defaults to %q", name, c.Optimizer.DecayParams)
		}
		spans := c.SFAdamWConfig().Decayed
		mc, _ := c.ResolveModel()
		in := func(i int) bool {
			for _, s := range spans {
				if i >= s.Lo && i < s.Hi {
					return true
				}
			}
			return false
		}
		kinds := map[string]int{}
		for _, tn := range mc.Layout().Tensors {
			want := tn.Kind == "linear" || tn.Kind == "residual"
			for _, i := range []int{tn.Offset, tn.Offset + tn.Size - 1} {
				if in(i) != want {
					t.Errorf("%s: %s (%s) decayed %v, want %v", name, tn.Name, tn.Kind, in(i), want)
				}
			}
			kinds[tn.Kind]++
		}
		if kinds["norm"] == 0 || kinds["embedding"] == 0 || kinds["linear"] == 0 {
			t.Fatalf("%s: kinds %v: the layout lacks a kind the test needs", name, kinds)
		}
		aw := c
		aw.Optimizer.Name, aw.Optimizer.Schedule, aw.Optimizer.FinalFrac = AdamW, "", nil
		if !slices.Equal(aw.WithDefaults().AdamWConfig().Decayed, spans) {
			t.Errorf("%s: AdamW decays other runs than SF-AdamW", name)
		}
		all := c
		all.Optimizer.DecayParams = DecayAll
		if all.SFAdamWConfig().Decayed != nil || all.Hash() == c.Hash() {
			t.Errorf("%s: decay_params all: spans %v, or the same ID as linear", name, all.SFAdamWConfig().Decayed)
		}
		bad := c
		bad.Optimizer.DecayParams = "norms"
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "optimizer.decay_params") {
			t.Errorf("decay_params norms: err = %v", err)
		}
	}
}
