// Package probe declares, once, the probes a trial can get: the decay probe, the LR-decay
// branch and the checkpoint interpolation. It holds their settings as a manifest writes
// them, their defaults, and the rule that resolves a manifest's probes for one trial
// (which checkpoints each runs from, which apply to it at all).
//
// Everything that carries a probe (the manifest, the plan a Sweep workflow runs, the
// activity inputs, the trainer's probe runs, the trial record's matching of stored results)
// carries these types, so a new probe setting is declared here and nowhere else. The
// package is plain data: it knows nothing of tensors, the store or Temporal.
package probe

import (
	"cmp"
	"slices"
)

// DefaultDecayPeakLR is the decay probe's peak learning rate in the paper: 1e-4.
const DefaultDecayPeakLR = 1e-4

// DefaultInterpolationPoints is Interpolation.Points' default: α = 0, 0.1, ..., 1.
const DefaultInterpolationPoints = 11

// Decay is the paper's decay probe: AdamW with the LR linear from PeakLR to 0 over Steps,
// from each checkpoint step listed in At (every checkpoint if empty).
type Decay struct {
	At     []int   `yaml:"at,omitempty" json:"at,omitempty"`
	Steps  int     `yaml:"steps" json:"steps"`
	PeakLR float64 `yaml:"peak_lr,omitempty" json:"peak_lr"` // default DefaultDecayPeakLR
	// Iterate is the weights the probe starts from: "" for the evaluated iterate (x for
	// SF-AdamW, w for AdamW), "ewa" for its EWA (ewa_x, ewa_w), whatever the optimizer;
	// x, y, ewa_x or ewa_y for SF-AdamW trials; w or ewa_w for AdamW trials.
	Iterate string `yaml:"iterate,omitempty" json:"iterate,omitempty"`
	// Shape is the decay's shape: "" or ShapeLinear for the paper's linear decay,
	// ShapeSqrt for 1 − sqrt of its progress (the cooldown of WSD schedules).
	Shape string `yaml:"shape,omitempty" json:"shape,omitempty"`
}

// The shapes of a decay probe. The linear one is the zero value once defaults are
// filled in, so that results stored before shapes existed answer it.
const (
	ShapeLinear = "linear"
	ShapeSqrt   = "sqrt"
)

// LRDecay is the LR-decay branch of the paper's fig:Obs1 (left): a trial, AdamW or
// SF-AdamW, continued from a checkpoint, with its own optimizer state, on the batches it
// would have read next, while its learning rate decays linearly from its value there to
// zero over Frac × the checkpoint's step; then evaluated at the iterate the trial
// evaluates. It runs from each checkpoint step listed in At (every checkpoint if empty).
type LRDecay struct {
	At   []int   `yaml:"at,omitempty" json:"at,omitempty"`
	Frac float64 `yaml:"frac" json:"frac"`
}

// Interpolation is the checkpoint interpolation of the paper's
// fig:river_valley_loss_profile: the validation loss at α·w(From) + (1−α)·w(To) for Points
// values of α evenly spaced in [0, 1], where w is the evaluated iterate (x for SF-AdamW).
// With Decayed, each AdamW trial also gets the segment from w(From) to the end of an
// LR-decay branch from From over To − From steps (the paper's regime 2).
type Interpolation struct {
	From    int  `yaml:"from" json:"from"`
	To      int  `yaml:"to" json:"to"`
	Points  int  `yaml:"points,omitempty" json:"points"` // default DefaultInterpolationPoints
	Decayed bool `yaml:"decayed,omitempty" json:"decayed,omitempty"`
}

// Set is the probes of a manifest (the probes: block), or those of one trial once
// resolved by For: nil where there is none.
type Set struct {
	Decay       *Decay         `yaml:"decay,omitempty" json:"decay,omitempty"`
	LRDecay     *LRDecay       `yaml:"lr_decay,omitempty" json:"lr_decay,omitempty"`
	Interpolate *Interpolation `yaml:"interpolate,omitempty" json:"interpolate,omitempty"`
}

// WithDefaults returns a copy of s with every default filled in: the decay probe's peak
// LR and shape (linear, spelled "") and the interpolation's points. s is left as it is.
func (s Set) WithDefaults() Set {
	if s.Decay != nil {
		d := *s.Decay
		d.At = slices.Clone(d.At)
		d.PeakLR = cmp.Or(d.PeakLR, DefaultDecayPeakLR)
		if d.Shape == ShapeLinear {
			d.Shape = ""
		}
		s.Decay = &d
	}
	if s.LRDecay != nil {
		b := *s.LRDecay
		b.At = slices.Clone(b.At)
		s.LRDecay = &b
	}
	if s.Interpolate != nil {
		ip := *s.Interpolate
		ip.Points = cmp.Or(ip.Points, DefaultInterpolationPoints)
		s.Interpolate = &ip
	}
	return s
}

// For resolves s for one trial: defaults filled in, every At that is empty ("every
// checkpoint") turned into checkpoints, the steps at which the trial writes one, and the
// probe that applies only to AdamW trials (the decayed interpolation) left out of the
// others. s is left as it is.
func (s Set) For(adamw bool, checkpoints []int) Set {
	r := s.WithDefaults()
	if d := r.Decay; d != nil {
		d.At = At(d.At, checkpoints)
	}
	if b := r.LRDecay; b != nil {
		b.At = At(b.At, checkpoints)
	}
	if ip := r.Interpolate; ip != nil {
		ip.Decayed = ip.Decayed && adamw
	}
	return r
}

// At is the checkpoint steps a probe runs from: at, or every checkpoint (checkpoints) if
// at is empty. For applies it with the steps a trial will write; the Trial workflow applies
// it again with the steps a trial kept, for plans made before For filled every At in.
func At(at, checkpoints []int) []int {
	if len(at) > 0 {
		return slices.Clone(at)
	}
	return slices.Clone(checkpoints)
}

// Steps is the training steps a trial's resolved probes add to it (decay probes, LR-decay
// branches, the decayed interpolation; evaluations not counted).
func (s Set) Steps() int64 {
	var steps int64
	if d := s.Decay; d != nil {
		steps += int64(d.Steps) * int64(len(d.At))
	}
	if b := s.LRDecay; b != nil {
		for _, at := range b.At {
			steps += int64(b.BranchSteps(at))
		}
	}
	if ip := s.Interpolate; ip != nil && ip.Decayed {
		steps += int64(ip.To - ip.From)
	}
	return steps
}

// BranchSteps is the length of the branch from checkpoint step at: Frac × at, at least 1.
func (b LRDecay) BranchSteps(at int) int { return max(1, int(b.Frac*float64(at))) }

// Empty reports whether s holds no probe.
func (s Set) Empty() bool { return s.Decay == nil && s.LRDecay == nil && s.Interpolate == nil }
