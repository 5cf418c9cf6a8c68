package stats

import (
	"math"
	"testing"
)

// TestHolm works Holm's method by hand on four p-values 0.01, 0.04, 0.03, 0.005 at
// α = 0.05 (the example of the Holm–Bonferroni article): sorted, 4·0.005 = 0.02,
// 3·0.01 = 0.03, 2·0.03 = 0.06, 1·0.04 = 0.04 raised to the running maximum 0.06, so the
// first and fourth hypotheses are rejected and the others not.
func TestHolm(t *testing.T) {
	got := Holm([]float64{0.01, 0.04, 0.03, 0.005})
	want := []float64{0.03, 0.06, 0.06, 0.02}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-15 {
			t.Errorf("Holm = %v, want %v", got, want)
			break
		}
	}
	// one hypothesis is not adjusted; adjusted p-values stop at 1 and never fall below
	// those of smaller p-values
	if got := Holm([]float64{0.04}); got[0] != 0.04 {
		t.Errorf("one p-value: %v", got)
	}
	if got := Holm([]float64{0.7, 0.6}); got[0] != 1 || got[1] != 1 {
		t.Errorf("Holm(0.7, 0.6) = %v, want 1, 1", got)
	}
	if got := Holm([]float64{0.04, 0.01, 0.012}); math.Abs(got[0]-0.04) > 1e-15 || math.Abs(got[1]-0.03) > 1e-15 || math.Abs(got[2]-0.03) > 1e-15 {
		t.Errorf("Holm(0.04, 0.01, 0.012) = %v, want 0.04, 0.03, 0.03", got)
	}
	if got := Holm(nil); len(got) != 0 {
		t.Errorf("no p-values: %v", got)
	}
}
