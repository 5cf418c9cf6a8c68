package sweeps

// The probes of a manifest (declared in internal/probe), resolved once per trial: which
// probe each trial gets, from which checkpoint steps, with every default filled in.
// Planning, the cost estimate, the workflows (through the plan) and the plots all read
// ProbesFor.

import (
	"github.com/sfsweep/sfsweep/internal/probe"
	"github.com/sfsweep/sfsweep/training"
)

// ProbesFor resolves the manifest's probes for trial t (probe.Set.For): defaults filled
// in, "every checkpoint" turned into the trial's checkpoint steps, and the probes that
// apply only to AdamW trials (the LR-decay branch, the decayed interpolation) left out of
// the others.
func (m *Manifest) ProbesFor(t Trial) probe.Set {
	return m.Probes.For(t.Config.Optimizer.Name == training.AdamW, CheckpointSteps(t.Config))
}

// CheckpointSteps are the steps at which a run of cfg writes a checkpoint: every
// CheckpointEvery steps before its last.
func CheckpointSteps(cfg training.Config) []int {
	var steps []int
	for s := cfg.CheckpointEvery; cfg.CheckpointEvery > 0 && s < cfg.Steps; s += cfg.CheckpointEvery {
		steps = append(steps, s)
	}
	return steps
}

// ProbeCost sums the training steps the manifest's probes add to the trials (decay probes,
// LR-decay branches, the decayed interpolation; their evaluations are not counted, as
// TotalCost counts none), assuming every trial completes.
func (m *Manifest) ProbeCost(trials []Trial) Cost {
	c := sumCost(trials, func(t Trial) int64 { return m.ProbesFor(t).Steps() })
	c.Trials = 0 // the trials are TotalCost's
	return c
}
