package sfadamw

import (
	"fmt"
	"math"

	"github.com/sfsweep/sfsweep/fielderr"
)

// ScheduleKind names a learning-rate schedule.
type ScheduleKind string

// The learning-rate schedules. All start with a linear warmup γ·t/T_warmup.
const (
	Constant ScheduleKind = "constant" // the peak after warmup
	Cosine   ScheduleKind = "cosine"   // cosine from the peak to FinalFrac·peak at TotalSteps
	Linear   ScheduleKind = "linear"   // linear from the peak to 0 at TotalSteps
	// WSD is warmup-stable-decay: the peak until DecayStart, then a decay branch to 0 over
	// DecaySteps (linear, or 1−sqrt with DecayShape "sqrt"). DecayStart may be any step, so
	// a branch can be started from any checkpoint of the stable phase.
	WSD ScheduleKind = "wsd"
)

// Schedule gives the learning rate γ_t of step t = 1, 2, ....
type Schedule struct {
	Kind        ScheduleKind
	Peak        float64 // γ > 0
	WarmupSteps int     // γ_t = γ·t/T_warmup for t < T_warmup
	TotalSteps  int     // horizon of Cosine and Linear
	FinalFrac   float64 // Cosine: final γ as a fraction of the peak (the paper: 0.1)
	DecayStart  int     // WSD: the last step at the peak; the decay starts after it
	DecaySteps  int     // WSD: length of the decay branch
	DecayShape  string  // WSD: "linear" (default) or "sqrt" (1 − sqrt of progress)
}

// Validate reports the first inconsistent field as a *fielderr.Error.
func (s Schedule) Validate() error {
	if err := checkPositive("lr", s.Peak); err != nil {
		return err
	}
	if s.WarmupSteps < 0 {
		return &fielderr.Error{Field: "warmup_steps", Value: s.WarmupSteps, Reason: "must be ≥ 0"}
	}
	switch s.Kind {
	case Constant:
	case Cosine, Linear:
		if s.TotalSteps <= s.WarmupSteps {
			return &fielderr.Error{Field: "total_steps", Value: s.TotalSteps, Reason: fmt.Sprintf("must exceed warmup_steps (%d) for a %s schedule", s.WarmupSteps, s.Kind)}
		}
		if s.Kind == Cosine && (math.IsNaN(s.FinalFrac) || s.FinalFrac < 0 || s.FinalFrac > 1) {
			return &fielderr.Error{Field: "final_frac", Value: s.FinalFrac, Reason: "must be in [0, 1]"}
		}
	case WSD:
		if s.DecayStart < s.WarmupSteps {
			return &fielderr.Error{Field: "decay_start", Value: s.DecayStart, Reason: fmt.Sprintf("must be ≥ warmup_steps (%d)", s.WarmupSteps)}
		}
		if s.DecaySteps <= 0 {
			return &fielderr.Error{Field: "decay_steps", Value: s.DecaySteps, Reason: "must be > 0"}
		}
		if s.DecayShape != "" && s.DecayShape != "linear" && s.DecayShape != "sqrt" {
			return &fielderr.Error{Field: "decay_shape", Value: s.DecayShape, Reason: `must be "linear" or "sqrt"`}
		}
	default:
		return &fielderr.Error{Field: "schedule", Value: s.Kind, Reason: `must be one of "constant", "cosine", "linear", "wsd"`}
	}
	return nil
}

// At returns γ_t for step t ≥ 1.
func (s Schedule) At(t int) float64 {
	if s.WarmupSteps > 0 && t < s.WarmupSteps {
		return s.Peak * float64(t) / float64(s.WarmupSteps)
	}
	switch s.Kind {
	case Cosine:
		p := progress(t-s.WarmupSteps, s.TotalSteps-s.WarmupSteps)
		final := s.FinalFrac * s.Peak
		return final + (s.Peak-final)*0.5*(1+math.Cos(math.Pi*p))
	case Linear:
		return s.Peak * (1 - progress(t-s.WarmupSteps, s.TotalSteps-s.WarmupSteps))
	case WSD:
		if t <= s.DecayStart {
			return s.Peak
		}
		p := progress(t-s.DecayStart, s.DecaySteps)
		if s.DecayShape == "sqrt" {
			return s.Peak * (1 - math.Sqrt(p))
		}
		return s.Peak * (1 - p)
	}
	return s.Peak
}

func progress(done, total int) float64 {
	if total <= 0 {
		return 1
	}
	return min(max(float64(done)/float64(total), 0), 1)
}

// warmupLR is γ_t = γ·min(1, t/T_warmup) of Algorithms 1 and 2.
func warmupLR(lr float64, warmup int, t int64) float64 {
	if warmup > 0 && t < int64(warmup) {
		return lr * float64(t) / float64(warmup)
	}
	return lr
}
