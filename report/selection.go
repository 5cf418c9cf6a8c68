package report

// A table's bold is chosen on validation: the outcome of lowest validation loss at its
// primary iterate (the mean over its seeds), and every one a paired t-test over seeds
// cannot tell apart from it. The test perplexity a table shows is only reported: choosing
// the best by it would fit the choice to the test set.

import (
	"math"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/internal/status"
)

// bestCandidate reports whether an outcome may be marked best: it completed, none of its
// seeds diverged or was stopped (a configuration that diverges on some seeds, or that a
// search's early stopping ended, is not the best one), and it has a validation loss.
func bestCandidate(s status.Status, sp Spread, val Seeds) bool {
	return s == status.Completed && sp.Diverged == 0 && sp.Stopped == 0 && val.Status == status.Completed
}

// bestOf picks the best of n outcomes, outcome(i) giving each one's status, spread and
// validation loss: best is the candidate of lowest validation loss (the first of equals),
// -1 if none; tied[i] is true for it and for every candidate that cannot be told apart
// from it (tiesWith).
func bestOf(n int, outcome func(i int) (status.Status, Spread, Seeds)) (best int, tied []bool) {
	best = -1
	var bestVal Seeds
	for i := range n {
		s, sp, val := outcome(i)
		if bestCandidate(s, sp, val) && (best < 0 || val.Mean < bestVal.Mean) {
			best, bestVal = i, val
		}
	}
	tied = make([]bool, n)
	for i := range n {
		s, sp, val := outcome(i)
		tied[i] = best >= 0 && bestCandidate(s, sp, val) && tiesWith(val.Mean, val.Spread, bestVal.Mean, bestVal.Spread)
	}
	return best, tied
}

// checkVal checks an outcome's validation loss: finite where it completed.
func checkVal(v Seeds) error {
	if v.Status == status.Completed && (math.IsNaN(v.Mean) || math.IsInf(v.Mean, 0)) {
		return &fielderr.Error{Field: "Val.Mean", Value: v.Mean, Reason: "must be finite when Val.Status is ok"}
	}
	return nil
}

// normalizeVal returns v with its samples sorted by seed, in a copy; nothing of it where it
// did not complete, as it then plays no part.
func normalizeVal(v Seeds) Seeds {
	if v.Status != status.Completed {
		return Seeds{}
	}
	return Seeds{Spread: normalizeSpread(v.Status, v.Spread), Mean: v.Mean, Status: v.Status}
}
