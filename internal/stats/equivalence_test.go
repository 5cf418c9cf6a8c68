package stats

import (
	"math"
	"testing"
)

// Non-inferiority and TOST at 2 degrees of freedom against the closed form tail2, with a
// margin of 0.01: differences within it beyond noise pass; a difference as large as its
// own noise does not, even when it is inside the margin; one worse by one standard
// deviation of its differences does not pass either.
func TestEquivalence(t *testing.T) {
	const margin = 0.01
	for _, c := range []struct {
		name     string
		diff, se float64
		ni, tost float64 // the p-values
	}{
		// 0.002 ± 0.001/√3: both one-sided tests reject
		{"inside, tight", 0.002, 0.001 / math.Sqrt(3), tail2((margin - 0.002) / (0.001 / math.Sqrt(3))), tail2((margin - 0.002) / (0.001 / math.Sqrt(3)))},
		// −0.004 below: the test against −margin is the weaker one
		{"inside, below", -0.004, 0.001, tail2((margin + 0.004) / 0.001), tail2((margin - 0.004) / 0.001)},
		// worse by one sd: differences 0, 0.02, 0.04 have mean 0.02 and SE 0.02/√3
		{"worse by one sd", 0.02, 0.02 / math.Sqrt(3), tail2(-(0.02 - margin) / (0.02 / math.Sqrt(3))), tail2(-(0.02 - margin) / (0.02 / math.Sqrt(3)))},
		// no difference but wide noise: not shown equivalent
		{"noisy zero", 0, 0.05, tail2(margin / 0.05), tail2(margin / 0.05)},
	} {
		p := paired(3, c.diff, c.se)
		if got := p.NonInferiority(margin); math.Abs(got-c.ni) > 1e-12 {
			t.Errorf("%s: NonInferiority = %.12f, want %.12f", c.name, got, c.ni)
		}
		if got := p.TOST(margin); math.Abs(got-c.tost) > 1e-12 {
			t.Errorf("%s: TOST = %.12f, want %.12f", c.name, got, c.tost)
		}
	}
	if p := paired(3, 0.002, 0.001/math.Sqrt(3)); p.TOST(margin) > Level/2 || p.NonInferiority(margin) > Level/2 {
		t.Errorf("tight and inside: TOST %g, non-inferiority %g, want both under %g", p.TOST(margin), p.NonInferiority(margin), Level/2)
	}
	for _, p := range []Paired{paired(3, 0.02, 0.02/math.Sqrt(3)), paired(3, 0, 0.05)} {
		if p.TOST(margin) < 0.25 || p.NonInferiority(margin) < 0.25 {
			t.Errorf("%+v: TOST %g, non-inferiority %g: a worse or noisy difference passed", p, p.TOST(margin), p.NonInferiority(margin))
		}
	}
	// TOST at level α is the 1 − 2α interval inside the margins: here the 95% one
	// (Critical is the 97.5% quantile), so the two decide alike
	for _, diff := range []float64{-0.009, -0.006, 0, 0.003, 0.0058, 0.0059, 0.009} {
		p := paired(3, diff, 0.001)
		lo, hi := p.Interval()
		if inside, passes := lo > -margin && hi < margin, p.TOST(margin) < Level/2; inside != passes {
			t.Errorf("difference %g: interval (%g, %g), TOST %g", diff, lo, hi, p.TOST(margin))
		}
	}
}
