// Package stats holds the statistics a sweep's reports use to tell an effect from seed
// noise: the mean and sample standard deviation over seeds, and the paired comparison of
// two configurations over the seeds they share.
//
// Two trials with the same seed see the same initial weights and the same batches, so the
// difference of their results has the seed's luck taken out. The comparison is a paired
// t-test: with n shared seeds and differences d_i, mean d̄ and sample standard deviation
// s_d, the difference is distinguishable from noise when |d̄| > t_{1−α/2, n−1} · s_d / √n.
// Fewer than two shared seeds cannot tell anything apart: every difference is noise then,
// except an exact zero, which is a tie.
//
// The same t statistic gives the difference's confidence interval (Interval), its
// p-values against any bound (PValue, PBelow, PAbove), and the tests a claim of "no
// effect" or "not worse" needs, which the failure to find a difference never shows: the
// two one-sided tests of equivalence within a margin (TOST) and the non-inferiority test
// (NonInferiority). Holm adjusts the p-values of several comparisons read together.
package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Level is the two-sided significance level of every comparison: 5%.
const Level = 0.05

// Summary is a sample of results over seeds.
type Summary struct {
	N    int     // values summarized
	Mean float64 // 0 when N is 0
	Std  float64 // sample standard deviation (n − 1 in the denominator); 0 when N < 2
}

// Summarize returns the mean and sample standard deviation of xs.
func Summarize(xs []float64) Summary {
	s := Summary{N: len(xs)}
	if s.N == 0 {
		return s
	}
	for _, x := range xs {
		s.Mean += x
	}
	s.Mean /= float64(s.N)
	if s.N > 1 {
		var ss float64
		for _, x := range xs {
			ss += (x - s.Mean) * (x - s.Mean)
		}
		s.Std = math.Sqrt(ss / float64(s.N-1))
	}
	return s
}

// Verdict is what a comparison of a against b says.
type Verdict int

const (
	Noise  Verdict = iota // not distinguishable from seed noise (or fewer than 2 pairs)
	Lower                 // a is lower than b beyond noise
	Higher                // a is higher than b beyond noise
)

func (v Verdict) String() string {
	return [...]string{"noise", "lower", "higher"}[v]
}

// Paired is the paired comparison of a against b over shared seeds.
type Paired struct {
	N        int     // shared seeds
	Diff     float64 // mean of a − b
	SE       float64 // standard error of Diff, s_d/√n; 0 when N < 2
	Critical float64 // t_{1−Level/2, N−1}; 0 when N < 2
	Verdict  Verdict
}

// Compare compares a with b seed by seed: a[i] and b[i] come from the same seed.
func Compare(a, b []float64) Paired {
	n := min(len(a), len(b))
	d := make([]float64, n)
	for i := range d {
		d[i] = a[i] - b[i]
	}
	s := Summarize(d)
	p := Paired{N: n, Diff: s.Mean}
	if n < 2 {
		return p
	}
	p.SE = s.Std / math.Sqrt(float64(n))
	p.Critical = TCritical(n - 1)
	if math.Abs(p.Diff) > p.Critical*p.SE {
		p.Verdict = Lower
		if p.Diff > 0 {
			p.Verdict = Higher
		}
	}
	return p
}

// TCritical is the two-sided critical value of Student's t with df degrees of freedom at
// Level: t_{1−Level/2, df}.
func TCritical(df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(1 - Level/2)
}
