package search

import (
	"math"
	"math/rand"
	"testing"
)

// crossRows are 9 configurations at steps 10, 30 and 90. c7 crosses late: at step 10 it
// ranks 7th (c1 3.0, c6 3.2, c2 3.5, c0 4.0, c8 4.2, c4 4.5, c7 4.8, c3 5.0, c5 6.0), the
// way a low learning rate trails at the start; from step 30 on it is the best, and it ends
// best by far (2.0 against c1's 2.7).
var crossRows = [][]float64{
	{4.0, 3.6, 3.4}, {3.0, 2.8, 2.7}, {3.5, 3.2, 3.0}, {5.0, 4.5, 4.2}, {4.5, 4.0, 3.8},
	{6.0, 5.0, 4.8}, {3.2, 3.0, 2.9}, {4.8, 2.5, 2.0}, {4.2, 3.7, 3.5},
}

const crosser = 7

// TestLateCrossing runs each rule on crossRows, one configuration at a time, with rungs 10
// and 30 before the end at 90 (η = 3; the median needs 2 completed). Judged at step 10,
// ASHA, synchronous halving and the median rule all stop c7 there, as plain successive
// halving does to the grid's best when its first rung comes early; a grace period of 30
// steps (rung 10 is then not judged) lets each of them finish it. So does Hyperband
// without one: with all three brackets c7 is in bracket 2, which trains to the end
// unjudged; with brackets 0 and 1 it is in bracket 1 (with c1 and c4), first judged at
// step 30, where it leads; with bracket 0 alone Hyperband is ASHA and stops it at 10.
func TestLateCrossing(t *testing.T) {
	rungs := []int{10, 30, 90}
	for _, c := range []struct {
		rule  string
		grace int
		want  outcome
	}{
		{ASHA, 0, outcome{StatusStopped, 10}},
		{ASHA, 30, outcome{StatusCompleted, 90}},
		{SyncHalving, 0, outcome{StatusStopped, 10}},
		{SyncHalving, 30, outcome{StatusCompleted, 90}},
		{Median, 0, outcome{StatusStopped, 10}},
		{Median, 30, outcome{StatusCompleted, 90}},
		{Hyperband, 0, outcome{StatusCompleted, 90}},
		{Hyperband, 30, outcome{StatusCompleted, 90}},
	} {
		s := newState(t, Config{Rule: c.rule, Rungs: rungs, Eta: 3, MinTrials: 2, Grace: c.grace, Budget: 9, Parallel: 1})
		jobs := (&driver{t: t, s: s, f: table(rungs, crossRows), pick: first}).run()
		if got := outcomes(s)[crosser]; got != c.want {
			t.Errorf("%s, grace %d: c5 ends %v, want %v", c.rule, c.grace, got, c.want)
		}
		for _, j := range jobs {
			if j.Until < c.grace {
				t.Errorf("%s, grace %d: job %+v pauses before the grace period", c.rule, c.grace, j)
			}
		}
	}
	for _, c := range []struct {
		brackets, bracket int
		want              outcome
	}{
		{0, 2, outcome{StatusCompleted, 90}},
		{2, 1, outcome{StatusCompleted, 90}},
		{1, 0, outcome{StatusStopped, 10}},
	} {
		s := newState(t, Config{Rule: Hyperband, Rungs: rungs, Eta: 3, Brackets: c.brackets, Budget: 9, Parallel: 1})
		(&driver{t: t, s: s, f: table(rungs, crossRows), pick: first}).run()
		if got, b := outcomes(s)[crosser], s.Candidates[crosser].Bracket; got != c.want || b != c.bracket {
			t.Errorf("hyperband, brackets %d: c7 in bracket %d ends %v, want bracket %d, %v", c.brackets, b, got, c.bracket, c.want)
		}
	}
}

// TestNeverStopsTheLeader: a configuration that is the best at every rung is never
// stopped, by any rule, whatever its index and the order results arrive in. 17
// configurations fill Hyperband's brackets 9, 5, 3 (rungs 10, 30, 90; η = 3), so that
// each of them takes one to the end; with grace 30 too.
func TestNeverStopsTheLeader(t *testing.T) {
	rungs := []int{10, 30, 90}
	for seed := range 40 {
		for _, rule := range []string{ASHA, SyncHalving, Median, Hyperband} {
			for _, grace := range []int{0, 30} {
				leader := seed % 17
				f, pick := seeded(seed, 17)
				lead := func(i, step int) float64 {
					switch v := f(i, step); {
					case i == leader:
						return 1
					case math.IsNaN(v):
						return 9 // no failures: one would leave a bracket too few to promote
					default:
						return v
					}
				}
				s := newState(t, Config{Rule: rule, Rungs: rungs, Eta: 3, MinTrials: 2, Grace: grace, Budget: 17, Parallel: 1 + seed%4})
				(&driver{t: t, s: s, f: lead, pick: pick}).run()
				if got := outcomes(s)[leader]; got != (outcome{StatusCompleted, 90}) {
					t.Errorf("%s grace %d seed %d: the leader c%d ends %v", rule, grace, seed, leader, got)
				}
			}
		}
	}
}

// seeded are random curves for n configurations, some diverging or failing, and a
// random event order, both of seed.
func seeded(seed, n int) (curve, func([]int, int) int) {
	rng := rand.New(rand.NewSource(int64(seed)))
	order := rand.New(rand.NewSource(int64(seed) + 1e6))
	return randomCurve(rng, n), func(r []int, _ int) int { return order.Intn(len(r)) }
}
