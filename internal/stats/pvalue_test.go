package stats

import (
	"math"
	"testing"
)

// sleep is Student's sleep data (Cushny and Peebles 1905, analysed in Student 1908): the
// extra hours of sleep of ten patients under two drugs, the same patient in both groups.
var sleep = struct{ a, b []float64 }{
	a: []float64{0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0},
	b: []float64{1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4},
}

// TestSleep checks the paired test against R's documented example on the sleep data,
// t.test(extra ~ group, data = sleep, paired = TRUE) in R's ?sleep and ?t.test: mean
// difference −1.58, t = −4.0621, df = 9, p-value = 0.002833, 95 percent confidence
// interval −2.4598858 to −0.7001142.
func TestSleep(t *testing.T) {
	p := Compare(sleep.a, sleep.b)
	if p.N != 10 || math.Abs(p.Diff+1.58) > 1e-12 || p.Verdict != Lower {
		t.Fatalf("Compare = %+v, want n 10, mean −1.58, lower", p)
	}
	if tt := p.Diff / p.SE; math.Abs(tt+4.0621) > 5e-5 {
		t.Errorf("t = %.5f, want −4.0621", tt)
	}
	if pv := p.PValue(0); math.Abs(pv-0.002833) > 5e-7 {
		t.Errorf("p-value = %.7f, want 0.002833", pv)
	}
	if lo, hi := p.Interval(); math.Abs(lo+2.4598858) > 5e-8 || math.Abs(hi+0.7001142) > 5e-8 {
		t.Errorf("interval = (%.7f, %.7f), want (−2.4598858, −0.7001142)", lo, hi)
	}
	// the one-sided p-values split the two-sided one
	if b, a := p.PBelow(0), p.PAbove(0); math.Abs(b-0.002833/2) > 5e-7 || math.Abs(a+b-1) > 1e-12 {
		t.Errorf("PBelow %.7f, PAbove %.7f", b, a)
	}
}

// tail1 and tail2 are P(T ≥ t) of Student's t with 1 and 2 degrees of freedom in closed
// form: the Cauchy distribution, and 1/2 − t/(2√(2 + t²)).
func tail1(t float64) float64 { return 0.5 - math.Atan(t)/math.Pi }
func tail2(t float64) float64 { return 0.5 - t/(2*math.Sqrt(2+t*t)) }

// paired builds the comparison of n pairs with mean difference diff and standard error se.
func paired(n int, diff, se float64) Paired {
	return Paired{N: n, Diff: diff, SE: se, Critical: TCritical(n - 1)}
}

// The p-values against the closed forms at 1 and 2 degrees of freedom, on both sides of
// a bound, and the degenerate cases.
func TestPValues(t *testing.T) {
	for _, c := range []struct {
		n               int
		diff, se, bound float64
		tail            func(float64) float64
	}{
		{2, 0.3, 0.1, 0, tail1},
		{2, -0.05, 0.1, 0.1, tail1},
		{3, 0.02, 0.01, 0.01, tail2},
		{3, -0.04, 0.01, 0.01, tail2},
		{3, 1, 0.2, 0, tail2},
	} {
		p := paired(c.n, c.diff, c.se)
		tt := (c.diff - c.bound) / c.se
		if got, want := p.PAbove(c.bound), c.tail(tt); math.Abs(got-want) > 1e-12 {
			t.Errorf("%+v: PAbove(%g) = %.15f, want %.15f", p, c.bound, got, want)
		}
		if got, want := p.PBelow(c.bound), c.tail(-tt); math.Abs(got-want) > 1e-12 {
			t.Errorf("%+v: PBelow(%g) = %.15f, want %.15f", p, c.bound, got, want)
		}
		if got, want := p.PValue(c.bound), 2*c.tail(math.Abs(tt)); math.Abs(got-want) > 1e-12 {
			t.Errorf("%+v: PValue(%g) = %.15f, want %.15f", p, c.bound, got, want)
		}
	}
	// the interval's ends are where the two-sided p-value crosses Level
	p := paired(3, 0.02, 0.01)
	if lo, hi := p.Interval(); math.Abs(p.PValue(lo)-Level) > 1e-9 || math.Abs(p.PValue(hi)-Level) > 1e-9 {
		t.Errorf("p-values at the interval's ends: %g, %g", p.PValue(lo), p.PValue(hi))
	}
	// equal differences: no spread, so any other bound is rejected outright
	p = paired(3, 0.5, 0)
	if p.PBelow(1) != 0 || p.PAbove(1) != 1 || p.PValue(1) != 0 || p.PValue(0.5) != 1 {
		t.Errorf("no spread: PBelow %g, PAbove %g, PValue %g, %g", p.PBelow(1), p.PAbove(1), p.PValue(1), p.PValue(0.5))
	}
	// one pair tests nothing
	p = Paired{N: 1, Diff: -3}
	if lo, hi := p.Interval(); !math.IsInf(lo, -1) || !math.IsInf(hi, 1) || p.PBelow(0) != 1 || p.PValue(0) != 1 {
		t.Errorf("one pair: interval (%g, %g), PBelow %g", lo, hi, p.PBelow(0))
	}
}
