package sweeps

// The probes of a manifest, resolved once per trial: which probe each trial gets, from
// which checkpoint steps, with every default filled in. Planning, the cost estimate, the
// workflows (through the plan) and the plots all read ProbesFor.

import (
	"cmp"
	"slices"

	"github.com/sfsweep/sfsweep/training"
)

// Probes are run on each trial's checkpoints.
type Probes struct {
	Decay       *DecayProbe    `yaml:"decay,omitempty"`
	LRDecay     *LRDecay       `yaml:"lr_decay,omitempty"`
	Interpolate *Interpolation `yaml:"interpolate,omitempty"`
}

// Interpolation is the checkpoint interpolation of the paper's fig:river_valley_loss_profile:
// the validation loss at α·w(From) + (1−α)·w(To) for Points values of α evenly spaced in
// [0, 1], where w is the evaluated iterate (x for SF-AdamW). With Decayed, each AdamW
// trial also gets the segment from w(From) to the end of an LR-decay branch from From
// over To − From steps (the paper's regime 2).
type Interpolation struct {
	From    int  `yaml:"from"`
	To      int  `yaml:"to"`
	Points  int  `yaml:"points,omitempty"` // default DefaultInterpolationPoints
	Decayed bool `yaml:"decayed,omitempty"`
}

// DefaultInterpolationPoints is Interpolation.Points' default: α = 0, 0.1, ..., 1.
const DefaultInterpolationPoints = 11

// LRDecay is the LR-decay branch of the paper's fig:Obs1 (left): an AdamW trial
// continued from a checkpoint, with its own optimizer state, on the batches it would have
// read next, while its learning rate decays linearly from its value there to zero over
// Frac × the checkpoint's step; then evaluated. It runs from each checkpoint step listed
// in At (every checkpoint if empty) of the grid's AdamW trials; other trials are not
// branched.
type LRDecay struct {
	At   []int   `yaml:"at,omitempty"`
	Frac float64 `yaml:"frac"`
}

// DecayProbe is the paper's decay probe: AdamW with the LR linear from PeakLR to 0 over
// Steps, from each checkpoint step listed in At (every checkpoint if empty).
type DecayProbe struct {
	At     []int   `yaml:"at,omitempty"`
	Steps  int     `yaml:"steps"`
	PeakLR float64 `yaml:"peak_lr,omitempty"` // default training.DefaultDecayPeakLR
	// Iterate is the weights the probe starts from: "" for the evaluated iterate (x for
	// SF-AdamW, w for AdamW), "ewa" for its EWA (ewa_x, ewa_w), whatever the optimizer;
	// x, y, ewa_x or ewa_y for SF-AdamW trials; w or ewa_w for AdamW trials.
	Iterate string `yaml:"iterate,omitempty"`
}

// WithDefaults returns a copy of the manifest's probes with every default filled in: the
// decay probe's peak LR and the interpolation's points.
func (p Probes) WithDefaults() Probes {
	if p.Decay != nil {
		d := *p.Decay
		d.PeakLR = cmp.Or(d.PeakLR, training.DefaultDecayPeakLR)
		p.Decay = &d
	}
	if p.Interpolate != nil {
		ip := *p.Interpolate
		ip.Points = cmp.Or(ip.Points, DefaultInterpolationPoints)
		p.Interpolate = &ip
	}
	return p
}

// TrialProbes are the probes one trial gets, resolved: nil where it gets none; every At
// lists the checkpoint steps the probe runs from.
type TrialProbes struct {
	Decay       *DecayProbe
	LRDecay     *LRDecay       // AdamW trials only
	Interpolate *Interpolation // Decayed only for AdamW trials
}

// ProbesFor resolves the manifest's probes for trial t: defaults filled in, "every
// checkpoint" turned into the trial's checkpoint steps, and the probes that apply only to
// AdamW trials (the LR-decay branch, the decayed interpolation) left out of the others.
func (m *Manifest) ProbesFor(t Trial) TrialProbes {
	p := m.Probes.WithDefaults()
	every := func(at []int) []int {
		if len(at) > 0 {
			return slices.Clone(at)
		}
		return CheckpointSteps(t.Config)
	}
	adamw := t.Config.Optimizer.Name == training.AdamW
	var tp TrialProbes
	if d := p.Decay; d != nil {
		d.At = every(d.At)
		tp.Decay = d
	}
	if b := p.LRDecay; b != nil && adamw {
		lr := *b
		lr.At = every(b.At)
		tp.LRDecay = &lr
	}
	if ip := p.Interpolate; ip != nil {
		ip.Decayed = ip.Decayed && adamw
		tp.Interpolate = ip
	}
	return tp
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
	c := sumCost(trials, func(t Trial) int64 {
		var steps int64
		tp := m.ProbesFor(t)
		if d := tp.Decay; d != nil {
			steps += int64(d.Steps) * int64(len(d.At))
		}
		if b := tp.LRDecay; b != nil {
			for _, s := range b.At {
				steps += int64(max(1, int(b.Frac*float64(s))))
			}
		}
		if ip := tp.Interpolate; ip != nil && ip.Decayed {
			steps += int64(ip.To - ip.From)
		}
		return steps
	})
	c.Trials = 0 // the trials are TotalCost's
	return c
}
