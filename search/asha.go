package search

// asha is asynchronous successive halving: Algorithm 2 of Li et al., "A System for
// Massively Parallel Hyperparameter Tuning" (MLSys 2020). Whenever a slot is free it
// looks for a promotion, from the rung below the end down to the first: rung k holds the
// candidates that reached it, ranked by their value there (ties: lower index first); of
// its best ⌊|rung k|/η⌋, those not promoted yet are promotable, and the best of them
// trains on to rung k+1. With none anywhere, a new configuration starts at the first
// rung, budget allowing.
//
// Promotions never wait for a rung to fill, so an early configuration can be promoted on
// few peers; in exchange no slot ever idles. A diverged candidate (+Inf at its rung)
// counts in its rung but is never promoted, a failed one has no value and does not count.
// Candidates that are never promoted stay paused until the search cannot go on, when
// Next stops them at their rung; if none has completed by then (a rung of fewer than η,
// or promoted peers that failed), the best at the highest rung goes on first.
type asha struct{}

func (asha) reached(*State, int) {}

func (asha) next(s *State) (int, int, bool) { return s.promotion(1) }

// promotion is ASHA's promotion in each of brackets 0..brackets−1, bracket b holding the
// rungs from b on: from the rung below the end down to the first, and at a rung from the
// lowest bracket up, the first bracket rung whose top ⌊n/η⌋ of its n has a candidate not
// yet promoted promotes the best of them to the next rung.
func (s *State) promotion(brackets int) (i, until int, ok bool) {
	rungs := s.Config.Rungs
	for k := len(rungs) - 2; k >= 0; k-- {
		for b := 0; b < brackets && b <= k; b++ {
			rung := s.rankedIn(rungs[k], b)
			for _, i := range rung[:len(rung)/s.Config.Eta] {
				// Paused at rung k: reached it and not promoted (a promoted one trains, or
				// trained, to a later step); a paused candidate's value is finite.
				if c := s.Candidates[i]; c.Status == StatusPaused && c.Until == rungs[k] {
					return i, rungs[k+1], true
				}
			}
		}
	}
	return 0, 0, false
}
