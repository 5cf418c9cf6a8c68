// Package sweeps is the sweep manifest: its YAML schema, validation with errors that name
// the field, the value, the reason and the line, and the expansion of its grids into
// trials with content-addressed IDs. Refined SF-AdamW with C = 1/(1−β1) is the vanilla
// trial (training.Config.Canonical), so such a grid point runs once and fills both cells.
// The run settings its trials share are training's (training.Setup, training.Loop),
// embedded: a manifest spells them, and their errors name them, as config.json does.
package sweeps

import (
	"go.yaml.in/yaml/v3"

	"github.com/sfsweep/sfsweep/internal/probe"
	"github.com/sfsweep/sfsweep/training"
)

// Manifest is a sweep: the shared settings of its trials, per-optimizer grids, the probes
// to run on each trial, and the tables to build from the results.
type Manifest struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`

	// The run settings its trials share, under the keys of config.json.
	training.Setup `yaml:",inline"`
	training.Loop  `yaml:",inline"`

	BatchTokens Param   `yaml:"batch_tokens"` // one value, a grid, or a distribution to sample
	WarmupFrac  Param   `yaml:"warmup_frac,omitempty"`
	Seeds       IntList `yaml:"seeds"`

	Optimizers []Grid `yaml:"optimizers"`
	// Trainer, if set, is the program that trains the trials (docs/trainer.md), and
	// Parameters its own parameters. Without optimizers, the parameters are the grid.
	Trainer    *Trainer   `yaml:"trainer,omitempty"`
	Parameters Parameters `yaml:"parameters,omitempty"`
	Search     *Search    `yaml:"search,omitempty"`
	Probes     probe.Set  `yaml:"probes,omitempty"`
	Tables     []Table    `yaml:"tables,omitempty"`
	MaxTrials  int        `yaml:"max_trials,omitempty"` // refuse larger expansions (default 10,000)
	Output     Output     `yaml:"output,omitempty"`
	Tags       []string   `yaml:"tags,omitempty"`
}

// Grid is one optimizer's grid: every combination of its lists is a trial, or, in a
// random or TPE search, the space its configurations are sampled from. Each searched
// parameter is a Param: one value, a list, or a distribution.
type Grid struct {
	Name        string     `yaml:"name"`            // "sfadamw" or "adamw"
	Label       string     `yaml:"label,omitempty"` // row label in tables, e.g. "SF-AdamW", "AdamW (cosine)"
	LR          Param      `yaml:"lr"`
	Betas       []BetaPair `yaml:"betas,omitempty"` // (β1, β2) pairs; or beta1 and beta2 apart
	Beta1       Param      `yaml:"beta1,omitempty"`
	Beta2       Param      `yaml:"beta2,omitempty"`
	C           CParam     `yaml:"c,omitempty"` // refined SF-AdamW: values, or "vanilla"
	WeightDecay Param      `yaml:"weight_decay,omitempty"`
	DecayParams string     `yaml:"decay_params,omitempty"` // linear (default) or all: what weight decay applies to
	GradClip    *float64   `yaml:"grad_clip,omitempty"`
	Eps         float64    `yaml:"eps,omitempty"`
	Schedule    string     `yaml:"schedule,omitempty"` // AdamW: constant, cosine, linear, wsd
	FinalFrac   *float64   `yaml:"final_frac,omitempty"`
	DecayFrac   float64    `yaml:"decay_frac,omitempty"`
	BatchTokens Param      `yaml:"batch_tokens,omitempty"` // overrides the manifest's
}

// program reports whether g is the grid of a program trainer's own parameters, which a
// manifest with a trainer and no optimizers has in place of optimizer grids.
func (g Grid) program() bool { return g.Name == "" }

// IterEWA names the EWA of a trial's evaluated iterate (ewa_x for SF-AdamW, ewa_w for
// AdamW) in a probe, so that a grid of both optimizers can probe from it.
const IterEWA = training.IterEWA

// Table is a table to build from the sweep's results.
type Table struct {
	Kind      string  `yaml:"kind"` // "c_sensitivity" or "hyperparameters"
	Name      string  `yaml:"name"` // file name under tables/
	Title     string  `yaml:"title,omitempty"`
	Label     string  `yaml:"label,omitempty"` // LaTeX label, e.g. tab:c_sweep_05M
	Optimizer string  `yaml:"optimizer,omitempty"`
	LR        float64 `yaml:"lr,omitempty"`    // c_sensitivity: the LR of the cells (default: the grid's only one)
	Beta2     float64 `yaml:"beta2,omitempty"` // c_sensitivity: the β2 of the cells (default: the grid's only one)
	// WeightDecay, if set, keeps only the trials of that weight decay (the default's 0.1
	// where a grid leaves it out): a table shows no weight decay of its own, so a sweep
	// that varies it gives a table for each.
	WeightDecay *float64 `yaml:"weight_decay,omitempty"`
	Metric      string   `yaml:"metric,omitempty"` // "test_ppl" (default)
}

// Output says where results go: a key prefix in the object store.
type Output struct {
	Prefix string `yaml:"prefix,omitempty"`
}

// BetaPair is a (β1, β2) pair, written [0.9, 0.95].
type BetaPair [2]float64

// IntList is one integer or a list of them.
type IntList []int

// UnmarshalYAML reads one integer as a list of one.
func (l *IntList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var v int
		if err := n.Decode(&v); err != nil {
			return err
		}
		*l = IntList{v}
		return nil
	}
	var vs []int
	if err := n.Decode(&vs); err != nil {
		return err
	}
	*l = vs
	return nil
}
