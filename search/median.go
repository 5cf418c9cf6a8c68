package search

import "slices"

// median is the median stopping rule (Golovin et al., "Google Vizier: A Service for
// Black-Box Optimization", KDD 2017) with the semantics of Optuna's MedianPruner, which
// goptuna's medianstopping.MedianPruner also implements: when a candidate reaches a rung
// r before the end, and at least max(MinTrials, 1) candidates are completed, it stops at
// r if its best value so far (the least over its rungs up to r) is worse than the median
// of the completed candidates' values at r (the mean of the middle two for an even
// count); otherwise it goes on to the next rung. Completed candidates with no value at r
// do not count in that median, and with none that have one it goes on.
//
// The decision is taken when the event is applied, on the candidates completed by then,
// as Optuna decides when a trial reports; it depends on the order events arrive in.
type median struct{}

func (median) reached(s *State, i int) {
	c := s.Candidates[i]
	completed, at := 0, []float64(nil)
	for _, o := range s.Candidates {
		if o.Status != StatusCompleted || o.Duplicate() {
			continue
		}
		completed++
		if v, ok := o.Values[c.Until]; ok {
			at = append(at, v)
		}
	}
	if completed < s.Config.MinTrials || len(at) == 0 { // none completed: none at r
		return
	}
	best := c.Values[c.Until]
	for _, v := range c.Values {
		best = min(best, v)
	}
	if best > middle(at) {
		s.stop(i)
	}
}

// next resumes the paused candidate of lowest index: every paused one has passed.
func (median) next(s *State) (int, int, bool) {
	for i, c := range s.Candidates {
		if c.Status == StatusPaused && !c.Duplicate() {
			return i, s.Config.after(c.Until), true
		}
	}
	return 0, 0, false
}

// middle is the median of xs (not empty), which it sorts.
func middle(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
