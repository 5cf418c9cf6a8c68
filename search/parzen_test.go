package search

import (
	"math"
	"reflect"
	"testing"
)

// TestParzenByHand builds the estimator of observations 3, 1, 2 over [0, 4] by Optuna's
// rules. Sorted: 1, 2, 3; the prior (mean 2, width 4) goes before the first observation
// not below it: mus 1, 2 (prior), 2, 3, each weight 1/4. Widths: the larger gap to a
// neighbour, with 0 and 4 as the outer neighbours: 1, 1, 1, 1 (the first and last take
// their inner gap: 1 and 1); clipped to [4/min(100, 1 + 4), 4] = [0.8, 4]; the prior's
// is 4.
func TestParzenByHand(t *testing.T) {
	obs := []float64{3, 1, 2}
	p := newParzen(obs, 0, 4)
	if !reflect.DeepEqual(obs, []float64{3, 1, 2}) {
		t.Errorf("the observations were reordered: %v", obs)
	}
	want := parzen{weights: []float64{0.25, 0.25, 0.25, 0.25}, mus: []float64{1, 2, 2, 3}, sigmas: []float64{1, 4, 1, 1}}
	if !reflect.DeepEqual(p.weights, want.weights) || !reflect.DeepEqual(p.mus, want.mus) || !reflect.DeepEqual(p.sigmas, want.sigmas) {
		t.Errorf("estimator %+v, want %+v", p, want)
	}
	// Observations 0.5 and 3.9: gaps 0.5, 1.5 (to the prior at 2), 1.9, 0.1 (to 4): the
	// first takes its inner gap 1.5, the last its inner gap 1.9; clipped to [4/4, 4].
	p = newParzen([]float64{3.9, 0.5}, 0, 4)
	if want := []float64{1.5, 4, 1.9}; !reflect.DeepEqual(p.sigmas, want) {
		t.Errorf("widths %v, want %v", p.sigmas, want)
	}
}

// TestParzenIsADensity: the truncated mixture integrates to 1 over its range, and its
// masses on the unit bins of whole numbers sum to 1.
func TestParzenIsADensity(t *testing.T) {
	for _, obs := range [][]float64{nil, {0.2}, {3.9, 0.5, 0.6, 2.2, 2.2}} {
		p := newParzen(obs, 0, 4)
		const n = 40000
		var sum float64
		for i := range n {
			sum += math.Exp(p.logDensity((float64(i) + 0.5) * 4 / n))
		}
		if got := sum * 4 / n; math.Abs(got-1) > 1e-6 {
			t.Errorf("%v: density integrates to %v", obs, got)
		}
		q := newParzen(obs, -0.5, 4.5) // whole numbers 0 to 4
		var mass float64
		for x := range 5 {
			mass += math.Exp(q.logMass(float64(x), 0.5))
		}
		if math.Abs(mass-1) > 1e-9 {
			t.Errorf("%v: bin masses sum to %v", obs, mass)
		}
	}
}

// TestParzenPrior: with a normal prior N(1, 2) and no truncation, the prior component is
// that normal, slotted in at 1: mus −20, 1, 1.5, 3. Widths: the first its inner gap 21,
// the prior 2, then max(0.5, 1.5) and the last its inner gap 1.5, clipped to
// [2/min(100, 5), 2]. The mixture integrates to 1, and its mass on the line is 1.
func TestParzenPrior(t *testing.T) {
	p := newParzenPrior([]float64{3, -20, 1.5}, math.Inf(-1), math.Inf(1), 1, 2)
	if want := []float64{-20, 1, 1.5, 3}; !reflect.DeepEqual(p.mus, want) {
		t.Errorf("mus %v, want %v", p.mus, want)
	}
	if want := []float64{2, 2, 1.5, 1.5}; !reflect.DeepEqual(p.sigmas, want) {
		t.Errorf("widths %v, want %v", p.sigmas, want)
	}
	const lo, hi, n = -40.0, 40.0, 80000
	var sum float64
	for i := range n {
		sum += math.Exp(p.logDensity(lo + (float64(i)+0.5)*(hi-lo)/n))
	}
	if got := sum * (hi - lo) / n; math.Abs(got-1) > 1e-6 {
		t.Errorf("density integrates to %v", got)
	}
	if m := p.logMassIn(math.Inf(-1), math.Inf(1)); math.Abs(m) > 1e-9 {
		t.Errorf("log mass of the line %v, want 0", m)
	}
	if m := p.logMassIn(2, 1); m > -20 {
		t.Errorf("log mass of an empty bin %v, want about log 1e-12", m)
	}
}
