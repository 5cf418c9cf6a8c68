package search

// hyperband is Hyperband (Li et al., "Hyperband: A Novel Bandit-Based Approach to
// Hyperparameter Optimization", JMLR 2018) in its asynchronous form (Li et al. 2020,
// §3.2; Ray Tune's AsyncHyperBandScheduler): brackets s = 0..B−1 run ASHA side by side,
// bracket s on the rungs from rung s on, so its configurations train to rung s before
// any is judged. Bracket 0 is plain ASHA; bracket s = len(Rungs)−1 judges nothing and
// trains its configurations to the end, as Hyperband's most conservative bracket does. A
// configuration that leads late is stopped early in bracket 0, but one in a later bracket
// is first judged where it leads: the brackets hedge successive halving's short-horizon
// bias, at the cost of the steps their configurations train before they are judged.
//
// Each configuration joins a bracket as it is added, by its index alone (State.bracket),
// so the assignment never depends on results. Within a bracket a rung ranks only the
// bracket's own candidates, and promotions are ASHA's (promotion).
type hyperband struct{}

func (hyperband) reached(*State, int) {}

func (hyperband) next(s *State) (int, int, bool) { return s.promotion(s.Config.brackets()) }

// brackets is the number of Hyperband brackets: Brackets, or one for each rung (the end
// included) if 0.
func (c Config) brackets() int {
	if c.Brackets == 0 {
		return len(c.Rungs)
	}
	return c.Brackets
}

// weights are Hyperband's bracket sizes (Li et al. 2018, Algorithm 1): with s_max rungs
// before the end, bracket b halves h = s_max − b times and starts ⌈(s_max+1)/(h+1)·η^h⌉
// configurations, so that each bracket spends about the same steps.
func (c Config) weights() []int {
	smax := len(c.Rungs) - 1
	w := make([]int, c.brackets())
	for b := range w {
		h := smax - b
		p := 1
		for range h {
			p = min(p*c.Eta, 1<<40) // no overflow: past this the weights only say "all"
		}
		w[b] = ((smax+1)*p + h) / (h + 1) // ⌈(s_max+1)·η^h/(h+1)⌉
	}
	return w
}

// bracket is the bracket of configuration i of a Hyperband search (0 under other rules):
// each configuration in turn joins the bracket furthest behind its share of the weights,
// the lowest on ties, so that every prefix of the configurations is spread over the
// brackets as Hyperband sizes them, within one configuration of each share.
func (s *State) bracket(i int) int {
	if s.Config.Rule != Hyperband {
		return 0
	}
	counts := make([]int, s.Config.brackets())
	for _, c := range s.Candidates[:i] {
		counts[c.Bracket]++
	}
	return behind(counts, s.Config.weights())
}

// Allot is how n configurations of a Hyperband search spread over its brackets: counts[b]
// of them are in bracket b, as State assigns them.
func (c Config) Allot(n int) []int {
	w := c.weights()
	counts := make([]int, len(w))
	for range n {
		counts[behind(counts, w)]++
	}
	return counts
}

// behind is the bracket the next configuration joins: with n configurations so far and
// weights summing to W, the b whose share (n+1)·w[b]/W exceeds its count by the most.
func behind(counts, w []int) int {
	n, total := 0, 0
	for b := range w {
		n, total = n+counts[b], total+w[b]
	}
	best, most := 0, 0
	for b := range w {
		if d := (n+1)*w[b] - counts[b]*total; b == 0 || d > most { // the deficit, times W
			best, most = b, d
		}
	}
	return best
}
