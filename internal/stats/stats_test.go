package stats

import (
	"math"
	"testing"
)

// TestTCritical checks the quantiles against a printed table of Student's t (two-sided 5%).
func TestTCritical(t *testing.T) {
	for df, want := range map[int]float64{1: 12.706, 2: 4.303, 4: 2.776, 9: 2.262, 29: 2.045} {
		if got := TCritical(df); math.Abs(got-want) > 5e-4 {
			t.Errorf("TCritical(%d) = %.4f, want %.3f", df, got, want)
		}
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{2, 4, 4, 4, 5, 5, 7, 9})
	// mean 5, sum of squares 32, sample variance 32/7
	if s.N != 8 || s.Mean != 5 || math.Abs(s.Std-math.Sqrt(32.0/7)) > 1e-15 {
		t.Errorf("Summarize = %+v, want N 8, mean 5, std %v", s, math.Sqrt(32.0/7))
	}
	if s := Summarize([]float64{3}); s.N != 1 || s.Mean != 3 || s.Std != 0 {
		t.Errorf("one value: %+v", s)
	}
	if s := Summarize(nil); s.N != 0 || s.Mean != 0 {
		t.Errorf("no values: %+v", s)
	}
}

// TestCompare works a paired t-test by hand: differences 1, 2, 3 have mean 2 and standard
// error 1/√3, so t = 3.46 < 4.303 at 2 degrees of freedom (noise); differences 1.9, 2, 2.1
// have standard error 0.0577, t = 34.6 (a real difference).
func TestCompare(t *testing.T) {
	cases := []struct {
		a, b []float64
		want Verdict
		se   float64
	}{
		{[]float64{11, 12, 13}, []float64{10, 10, 10}, Noise, 1 / math.Sqrt(3)},
		{[]float64{11.9, 12, 12.1}, []float64{10, 10, 10}, Higher, 0.1 / math.Sqrt(3)},
		{[]float64{10, 10, 10}, []float64{11.9, 12, 12.1}, Lower, 0.1 / math.Sqrt(3)},
		// a small difference, hidden by the samples' spread unpaired, is beyond noise once paired: the seeds move both
		{[]float64{10, 20, 30}, []float64{10.5, 20.5, 30.5}, Lower, 0},
		{[]float64{10}, []float64{20}, Noise, 0},
	}
	for i, c := range cases {
		p := Compare(c.a, c.b)
		if p.Verdict != c.want || math.Abs(p.SE-c.se) > 1e-12 {
			t.Errorf("case %d: %+v, want verdict %v, SE %v", i, p, c.want, c.se)
		}
	}
}
