package report

// A configuration's outcomes over its seeds, reduced to what a table cell or a finding
// shows: the mean over the seeds that completed, their spread, and how many diverged,
// were stopped by a search's early stopping, or failed.

import (
	"cmp"
	"math"
	"slices"

	"github.com/sfsweep/sfsweep/internal/stats"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/trial"
)

// SeedValue is one seed's number.
type SeedValue struct {
	Seed  int     `json:"seed"`
	Value float64 `json:"value"`
}

// Spread is how a value shown for several seeds came about. Its zero value is one value
// given by hand, not a mean: tables built by hand from single numbers render as before.
type Spread struct {
	Std      float64     // sample standard deviation over the completed seeds; read when N ≥ 2
	N        int         // seeds the mean is over (those that completed); 0: one value given by hand
	Diverged int         // seeds that diverged: counted and shown, never averaged
	Failed   int         // seeds that failed after their retries
	Stopped  int         // seeds a search's early stopping ended at a rung: a result, never averaged
	Samples  []SeedValue // each completed seed's value, by seed, for paired comparisons
}

// SeedOutcome is the outcome of one seed of a configuration.
type SeedOutcome struct {
	Seed int
	trial.Outcome
}

// Seeds is a configuration's outcomes over its seeds, each reduced to one number.
type Seeds struct {
	Spread
	Mean   float64       // over the completed seeds; read when Status is status.Completed
	Status status.Status // Completed if any seed completed; else Diverged, Stopped, Failed or Missing
	Step   int           // Diverged: the earliest step a seed diverged at (0 if unknown); Stopped: the earliest rung a seed was stopped at
	Reason string        // Failed: a failed seed's reason
}

// Gather reduces the outcomes of a configuration's seeds with value, the number a result
// contributes. A completed result whose value is not finite counts as diverged; a seed
// with no result that the search stopped (trial.Outcome.Stopped) counts as stopped.
func Gather(os []SeedOutcome, value func(*training.Result) float64) Seeds {
	var s Seeds
	stoppedAt := 0
	for _, o := range os {
		switch r := o.Result; {
		case r != nil && r.Status == status.Completed:
			v := value(r)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				s.Diverged++
				continue
			}
			s.Samples = append(s.Samples, SeedValue{o.Seed, v})
		case r != nil && r.Status == status.Diverged:
			s.Diverged++
			if s.Step == 0 || (r.DivergedAt > 0 && r.DivergedAt < s.Step) {
				s.Step = r.DivergedAt
			}
		case o.Failed != "":
			s.Failed++
			s.Reason = cmp.Or(s.Reason, o.Failed)
		case o.Stopped > 0:
			s.Stopped++
			if stoppedAt == 0 || o.Stopped < stoppedAt {
				stoppedAt = o.Stopped
			}
		}
	}
	slices.SortFunc(s.Samples, func(a, b SeedValue) int { return cmp.Compare(a.Seed, b.Seed) })
	vals := make([]float64, len(s.Samples))
	for i, v := range s.Samples {
		vals[i] = v.Value
	}
	sum := stats.Summarize(vals)
	s.N, s.Mean, s.Std = sum.N, sum.Mean, sum.Std
	switch {
	case s.N > 0:
		s.Status, s.Step, s.Reason = status.Completed, 0, ""
	case s.Diverged > 0:
		s.Status, s.Reason = status.Diverged, ""
	case s.Stopped > 0:
		s.Status, s.Step, s.Reason = status.Stopped, stoppedAt, ""
	case s.Failed > 0:
		s.Status = status.Failed
	default:
		s.Status = status.Missing
	}
	return s
}

// Compare compares a with b seed by seed over the seeds both completed: a paired t-test of
// a − b (stats.Compare).
func Compare(a, b Spread) stats.Paired {
	var xs, ys []float64
	for _, x := range a.Samples {
		if i, ok := slices.BinarySearchFunc(b.Samples, x.Seed, func(v SeedValue, seed int) int { return cmp.Compare(v.Seed, seed) }); ok {
			xs = append(xs, x.Value)
			ys = append(ys, b.Samples[i].Value)
		}
	}
	return stats.Compare(xs, ys)
}

// tiesWith reports whether a value (with its spread) cannot be told apart from best: the
// same number, or a paired comparison over at least two shared seeds that finds no
// difference beyond noise.
func tiesWith(value float64, a Spread, best float64, b Spread) bool {
	if value == best {
		return true
	}
	p := Compare(a, b)
	return p.N >= 2 && p.Verdict == stats.Noise
}
