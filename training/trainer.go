package training

import (
	"fmt"
	"regexp"
	"sort"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/program"
)

// Trainer names the program that trains a run when it is not sfsweep's own engine
// (docs/trainer.md): the trainer's name, its identity, and the parameters passed to it as
// they are written. It is part of the config, so a trial's ID covers the program's code
// (Identity) and everything it is given.
//
// A Trainer never carries a command line: a worker looks its name up among the trainers
// its operator registered, and refuses a trial whose identity differs from its own.
type Trainer struct {
	Name string `json:"name" yaml:"name"`
	// Identity is the program's identity: "version:<string>" or "sha256:<hex>" of its
	// files.
	Identity string `json:"identity" yaml:"identity"`
	// Params are the trainer's own parameters (a manifest's parameters:), by name as the
	// manifest writes them; JSON sorts them by name, so the hash does not depend on order.
	Params map[string]any `json:"params,omitempty" yaml:"params,omitempty"`
}

// TrainerName is the pattern of a trainer's name.
var TrainerName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Check reports the first thing wrong with t, naming the field as config.json does.
func (t *Trainer) Check() error {
	if !TrainerName.MatchString(t.Name) {
		return &fielderr.Error{Field: "trainer.name", Value: fmt.Sprintf("%q", t.Name), Reason: "must be letters, digits, '.', '_' and '-', starting with a letter or digit"}
	}
	if t.Identity == "" {
		return &fielderr.Error{Field: "trainer.identity", Value: `""`, Reason: "must be the trainer's version or the hash of its files"}
	}
	for _, k := range t.ParamNames() {
		if k == "" {
			return &fielderr.Error{Field: "trainer.params", Value: `""`, Reason: "a parameter needs a name"}
		}
	}
	return nil
}

// ParamNames are the names of t's parameters, sorted.
func (t *Trainer) ParamNames() []string {
	names := make([]string, 0, len(t.Params))
	for k := range t.Params {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// Args are the parameters a program trainer is passed for the run (docs/trainer.md,
// "Arguments"): for a run with an optimizer, its optimizer and loop under config.json's
// names (defaults applied), then the trainer's own parameters, sorted by name.
func (c Config) Args() []program.Arg {
	var args []program.Arg
	add := func(k string, v any) { args = append(args, program.Arg{Key: k, Value: v}) }
	if o := c.Optimizer; o.Name != "" {
		add("optimizer", o.Name)
		add("lr", o.LR)
		add("beta1", o.Beta1)
		add("beta2", o.Beta2)
		add("eps", o.Eps)
		if o.WeightDecay != nil {
			add("weight_decay", *o.WeightDecay)
		}
		if o.DecayParams != "" {
			add("decay_params", o.DecayParams)
		}
		if o.C != 0 {
			add("c", o.C)
		}
		if o.GradClip != nil {
			add("grad_clip", *o.GradClip)
		}
		if o.WarmupFrac != nil {
			add("warmup_frac", *o.WarmupFrac)
		}
		if o.Name == AdamW {
			add("schedule", o.Schedule)
			if o.FinalFrac != nil {
				add("final_frac", *o.FinalFrac)
			}
			if o.DecayFrac != 0 {
				add("decay_frac", o.DecayFrac)
			}
		}
		add("steps", c.Steps)
		add("seed", c.Seed)
		for _, f := range []struct {
			k string
			v int
		}{{"micro_batch", c.MicroBatch}, {"seq_len", c.SeqLen}, {"batch_tokens", c.BatchTokens}, {"eval_every", c.EvalEvery}, {"eval_seqs", c.EvalSeqs}, {"test_seqs", c.TestSeqs}, {"checkpoint_every", c.CheckpointEvery}, {"keep_checkpoints", c.KeepCheckpoints}} {
			if f.v != 0 {
				add(f.k, f.v)
			}
		}
	}
	if t := c.Trainer; t != nil {
		for _, k := range t.ParamNames() {
			add(k, t.Params[k])
		}
	}
	return args
}

// RunArgNames are the names Args gives a run with an optimizer: a trainer's own
// parameter may not take one of them in such a run.
var RunArgNames = []string{"optimizer", "lr", "beta1", "beta2", "eps", "weight_decay", "decay_params", "c", "grad_clip",
	"warmup_frac", "schedule", "final_frac", "decay_frac", "steps", "seed", "micro_batch", "seq_len",
	"batch_tokens", "eval_every", "eval_seqs", "test_seqs", "checkpoint_every", "keep_checkpoints"}
