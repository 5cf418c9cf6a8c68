package search

// syncHalving is synchronous successive halving (Jamieson & Talwalkar, "Non-stochastic
// Best Arm Identification and Hyperparameter Optimization", AISTATS 2016): Budget
// configurations start at the first rung; once every candidate of rung k has an outcome
// there (paused, diverged or failed) and none can join it any more, the best ⌊n_k/η⌋ of
// the n_k with a value there, or Config.Finalists if more, and at least one (ties: lower
// index first; a diverged one, +Inf, is never kept), go on to rung k+1 and the others
// stop at rung k.
//
// Finalists hedge the short-horizon bias at the last rung: the best configuration of a
// small grid can still rank second at half the run (sweeps/stopping-suite.sh measures
// it), where halving 4 by η = 3 keeps one and stops it; keeping 2 finishes both.
//
// A rung decides on its values only once all of them are in, so the decisions, and which
// configurations reach the end, do not depend on the order events arrive in. The price is
// idle slots while a rung waits for its slowest member.
type syncHalving struct{}

func (syncHalving) reached(*State, int) {}

func (syncHalving) next(s *State) (int, int, bool) {
	if s.more() {
		return 0, 0, false // rung 0 may still grow
	}
	for _, c := range s.Candidates {
		if c.Status == StatusQueued && !c.Duplicate() {
			return 0, 0, false
		}
	}
	rungs := s.Config.Rungs
	for k, step := range rungs[:len(rungs)-1] {
		for _, c := range s.Candidates {
			if c.Status == StatusRunning && c.Until == step {
				return 0, 0, false // rung k is not complete, nor is any above it
			}
		}
		rung := s.ranked(step)
		keep := max(len(rung)/s.Config.Eta, min(max(s.Config.Finalists, 1), len(rung)))
		resume := -1
		for r, i := range rung {
			if c := s.Candidates[i]; c.Status != StatusPaused || c.Until != step {
				continue
			}
			if r >= keep {
				s.stop(i)
			} else if resume < 0 {
				resume = i
			}
		}
		if resume >= 0 {
			// Rung k+1 is complete only once every kept candidate has been there.
			return resume, rungs[k+1], true
		}
	}
	return 0, 0, false
}
