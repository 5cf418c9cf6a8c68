package stats

// NonInferiority is the p-value of the hypothesis that A is worse than B by margin or
// more, where lower is better: H0 mean(A − B) ≥ margin against mean(A − B) < margin. A
// small p-value says that A is not worse than B by as much as margin; a large one says
// nothing, and never that A is not worse.
func (p Paired) NonInferiority(margin float64) float64 {
	return p.PBelow(margin)
}

// TOST is the p-value of Schuirmann's two one-sided tests of equivalence within ±margin:
// H0 |mean(A − B)| ≥ margin against |mean(A − B)| < margin. It is the larger of the
// p-values of H0 mean ≤ −margin and of H0 mean ≥ margin, so a test at level α rejects
// both, which is the same as the 1 − 2α confidence interval lying inside (−margin, margin).
// Failing to tell A from B is never equivalence: with few pairs TOST stays large.
func (p Paired) TOST(margin float64) float64 {
	return max(p.PAbove(-margin), p.PBelow(margin))
}
