package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Interval is the two-sided 1 − Level confidence interval of the mean difference,
// Diff ± Critical·SE. With fewer than two pairs nothing bounds it: (−∞, +∞).
func (p Paired) Interval() (lo, hi float64) {
	if p.N < 2 {
		return math.Inf(-1), math.Inf(1)
	}
	return p.Diff - p.Critical*p.SE, p.Diff + p.Critical*p.SE
}

// PBelow is the one-sided p-value of the hypothesis that the mean difference is at least
// bound, against the alternative that it is below: P(T ≤ (Diff − bound)/SE) for Student's
// T with N − 1 degrees of freedom. With fewer than two pairs it is 1: nothing is rejected.
func (p Paired) PBelow(bound float64) float64 {
	if p.N < 2 {
		return 1
	}
	return tTail(-(p.Diff - bound), p.SE, p.N-1)
}

// PAbove is the one-sided p-value of the hypothesis that the mean difference is at most
// bound, against the alternative that it is above: P(T ≥ (Diff − bound)/SE). With fewer
// than two pairs it is 1.
func (p Paired) PAbove(bound float64) float64 {
	if p.N < 2 {
		return 1
	}
	return tTail(p.Diff-bound, p.SE, p.N-1)
}

// PValue is the two-sided p-value of the hypothesis that the mean difference is mu:
// 2·P(T ≥ |Diff − mu|/SE), at most 1. It is at most Level exactly when mu lies outside
// Interval. With fewer than two pairs it is 1.
func (p Paired) PValue(mu float64) float64 {
	return min(1, 2*min(p.PBelow(mu), p.PAbove(mu)))
}

// tTail is P(T ≥ num/se) for Student's T with df degrees of freedom. Differences that are
// all equal have se 0: the statistic is then ±∞ (p 0 or 1), or 0 where num is 0 too.
func tTail(num, se float64, df int) float64 {
	switch {
	case se == 0 && num == 0:
		return 0.5
	case se == 0 && num > 0:
		return 0
	case se == 0:
		return 1
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Survival(num / se)
}
