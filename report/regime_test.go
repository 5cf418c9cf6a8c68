package report

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/analysis"
)

// The averaging window T(2C−1)/C² against the effective number of iterates of refined
// SF-AdamW's exact weights (the paper's α_t, analysis.RefinedWeights): within one iterate
// or 5% at the paper's and the twins' T and C (the discrete weights average about one
// iterate more); at T = 1,100 C = 200 averages about 11 iterates, against
// 50 at 5,000 (the arithmetic), and windowC inverts it.
func TestAveragingWindow(t *testing.T) {
	for _, c := range []struct {
		T    int
		beta float64
		C    float64
	}{{5000, 0.95, 200}, {1100, 0.95, 200}, {1100, 0.9, 50}, {5000, 0.9, 50}, {300, 0.5, 20}} {
		w, err := analysis.RefinedWeights(c.T, c.beta, c.C)
		if err != nil {
			t.Fatal(err)
		}
		var s, s2 float64
		for _, a := range w.Alpha {
			s, s2 = s+a, s2+a*a
		}
		exact, approx := s*s/s2, averagingWindow(float64(c.T), c.C)
		t.Logf("T %d β %g C %g: exact %.2f iterates, T(2C−1)/C² %.2f", c.T, c.beta, c.C, exact, approx)
		if math.Abs(approx-exact) > max(1, 0.05*exact) {
			t.Errorf("T %d C %g: window %.2f, exact %.2f", c.T, c.C, approx, exact)
		}
		if back := windowC(float64(c.T), approx); math.Abs(back-c.C) > 1e-9*c.C {
			t.Errorf("windowC(%d, %g) = %g, want %g", c.T, approx, back, c.C)
		}
	}
	if w := averagingWindow(1100, 200); math.Round(w) != 11 {
		t.Errorf("C = 200 at 1,100 steps: %g iterates, want about 11", w)
	}
	if w := averagingWindow(5000, 200); math.Round(w) != 50 {
		t.Errorf("C = 200 at 5,000 steps: %g iterates, want about 50", w)
	}
}

// A twin is in the paper's regime where its tokens per parameter and (for refined SF) its
// averaging window are within a factor of 2 of the paper's: the fake sweeps are at
// fakeRegime; against the paper's own regime they train 0.13 tokens per parameter, and
// every finding with data reads outside it, with the reason; at 5 times fakeRegime's steps
// of a fifth of its batch (the same tokens), only the refined claims are outside, by their
// averaging window.
func TestFindingsRegime(t *testing.T) {
	f := newFakeSweep(t, findingsManifest, paperSpecs())
	in := f.findings(t)
	for id, fd := range in {
		if fd.Verdict == Outside {
			t.Errorf("%s at the fakes' own regime: %s", id, fd.Note)
		}
	}
	for _, c := range []struct {
		name   string
		rg     regime
		reason func(id string) string // the reason a check must give; "" for none
	}{
		{"the paper's", paperRegime(), func(string) string { return "tokens per parameter" }},
		{"more steps, the same tokens", regime{paperSetup{"long runs", 100, 6.4}, paperSetup{"long large runs", 100, 6.4}, 4944},
			func(id string) string {
				if strings.HasPrefix(id, "refined-") {
					return "iterates over the twin's 20 steps"
				}
				return ""
			}},
	} {
		got := map[string]Finding{}
		for _, large := range []bool{false, true} {
			m := *f.m
			if large {
				m.Tables = append(slices.Clone(m.Tables), tableLabelledLarge)
			}
			fs, err := findingsIn(t.Context(), f.store, &m, f.res, c.rg)
			if err != nil {
				t.Fatal(err)
			}
			for _, fd := range fs {
				if in[fd.ID].Verdict != NoData && (fd.ID == "refined-large-batch") == large {
					got[fd.ID] = fd
				}
			}
		}
		for id, fd := range got {
			want := c.reason(id)
			switch {
			case want == "" && fd.Verdict != in[id].Verdict:
				t.Errorf("%s, %s: %s, want %s as in the fakes' regime", c.name, id, fd.Verdict, in[id].Verdict)
			case want != "" && (fd.Verdict != Outside || !strings.Contains(fd.Note, want) || !strings.Contains(fd.Note, "Its rows alone read: "+string(in[id].Verdict))):
				t.Errorf("%s, %s: %s, note %q; want outside, %q", c.name, id, fd.Verdict, fd.Note, want)
			}
		}
		if len(got) < 8 {
			t.Errorf("%s: %d findings with data", c.name, len(got))
		}
	}
}
