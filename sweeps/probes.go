package sweeps

// The probes of a manifest (declared in internal/probe), checked against its grid and
// checkpoints, and resolved once per trial: which probe each trial gets, from which
// checkpoint steps, with every default filled in. Planning, the cost estimate, the
// workflows (through the plan) and the plots all read ProbesFor.

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/internal/probe"
	"github.com/sfsweep/sfsweep/training"
)

// ProbesFor resolves the manifest's probes for trial t (probe.Set.For): defaults filled
// in, "every checkpoint" turned into the trial's checkpoint steps, and the probe that
// applies only to AdamW trials (the decayed interpolation) left out of the others.
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

// checkProbes checks the probes against the grid and the run's checkpoints.
func (m *Manifest) checkProbes() error {
	if d := m.Probes.Decay; d != nil {
		if d.Steps < 1 {
			return &fielderr.Error{Field: "probes.decay.steps", Value: d.Steps, Reason: "must be ≥ 1"}
		}
		if d.PeakLR < 0 || math.IsNaN(d.PeakLR) || math.IsInf(d.PeakLR, 0) {
			return &fielderr.Error{Field: "probes.decay.peak_lr", Value: d.PeakLR, Reason: "must be a finite number > 0"}
		}
		if d.Shape != "" && d.Shape != probe.ShapeLinear && d.Shape != probe.ShapeSqrt {
			return &fielderr.Error{Field: "probes.decay.shape", Value: fmt.Sprintf("%q", d.Shape), Reason: fmt.Sprintf("must be %q (the paper's) or %q", probe.ShapeLinear, probe.ShapeSqrt)}
		}
		if err := m.checkProbeSteps("probes.decay", d.At, nil); err != nil {
			return err
		}
		for _, g := range m.Optimizers {
			if its := training.Iterates(g.Name); d.Iterate != "" && d.Iterate != IterEWA && !slices.Contains(its, d.Iterate) {
				return &fielderr.Error{Field: "probes.decay.iterate", Value: fmt.Sprintf("%q", d.Iterate),
					Reason: fmt.Sprintf("%s trials have %s (or ewa for the EWA of the evaluated one, or leave it out for that one)", g.Name, strings.Join(its, ", "))}
			}
		}
	}
	if b := m.Probes.LRDecay; b != nil {
		if math.IsNaN(b.Frac) || b.Frac <= 0 || b.Frac > 1 {
			return &fielderr.Error{Field: "probes.lr_decay.frac", Value: b.Frac, Reason: "must be in (0, 1]: the branch decays over this fraction of the steps before it"}
		}
		if err := m.checkProbeSteps("probes.lr_decay", b.At, nil); err != nil {
			return err
		}
	}
	if ip := m.Probes.Interpolate; ip != nil {
		fromTo := func(i int) string { return [...]string{"probes.interpolate.from", "probes.interpolate.to"}[i] }
		if err := m.checkProbeSteps("probes.interpolate", []int{ip.From, ip.To}, fromTo); err != nil {
			return err
		}
		if ip.From >= ip.To {
			return &fielderr.Error{Field: "probes.interpolate.to", Value: ip.To, Reason: fmt.Sprintf("must come after from = %d", ip.From)}
		}
		if ip.Points != 0 && (ip.Points < 2 || ip.Points > 101) {
			return &fielderr.Error{Field: "probes.interpolate.points", Value: ip.Points, Reason: "must be in [2, 101]"}
		}
		if ip.Decayed && ip.To-ip.From > ip.From {
			return &fielderr.Error{Field: "probes.interpolate.to", Value: ip.To, Reason: fmt.Sprintf("with decayed, the decay from %d may last at most as long as the run before it: to ≤ %d", ip.From, 2*ip.From)}
		}
		if ip.Decayed && !slices.ContainsFunc(m.Optimizers, func(g Grid) bool { return g.Name == training.AdamW }) {
			return &fielderr.Error{Field: "probes.interpolate.decayed", Value: true, Reason: "the decayed segment continues adamw trials, and the grid has none"}
		}
	}
	return nil
}

// checkProbeSteps checks a probe's steps: checkpoint steps of the run, kept after
// training. None means every checkpoint, of which there must be some. name gives the field
// of at[i]; nil means field.at[i].
func (m *Manifest) checkProbeSteps(field string, at []int, name func(i int) string) error {
	if name == nil {
		name = func(i int) string { return fmt.Sprintf("%s.at[%d]", field, i) }
	}
	if m.KeepCheckpoints > 0 {
		return &fielderr.Error{Field: "keep_checkpoints", Value: m.KeepCheckpoints, Reason: "probes read the checkpoints after training: keep them all (0) with " + field}
	}
	if len(at) == 0 && m.CheckpointEvery == 0 {
		return &fielderr.Error{Field: field + ".at", Value: "[]", Reason: "the probe runs from checkpoints: set checkpoint_every, or list checkpoint steps here"}
	}
	for i, s := range at {
		if s < 1 || s >= m.Steps {
			return &fielderr.Error{Field: name(i), Value: s, Reason: fmt.Sprintf("must be a checkpoint step in [1, steps = %d): no checkpoint is written at the last step", m.Steps)}
		}
		if m.CheckpointEvery == 0 || s%m.CheckpointEvery != 0 {
			return &fielderr.Error{Field: name(i), Value: s, Reason: fmt.Sprintf("must be a checkpoint step (a multiple of checkpoint_every = %d)", m.CheckpointEvery)}
		}
	}
	return nil
}
