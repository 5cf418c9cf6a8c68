package search

import (
	"fmt"
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

// finalRows are 12 configurations at steps 20, 50 and 100. c3 crosses late: 4th at step
// 20 (c0 3.0, c1 3.2, c2 3.3, c3 3.4, then c4..c11 from 3.5), 2nd at step 50 among the
// four that go on (c0 2.5, c3 2.6, c1 2.7, c2 2.8), and the best at the end (2.0 against
// c0's 2.3): c0 leads early and falls behind, as a high learning rate does.
var finalRows = func() [][]float64 {
	rows := [][]float64{{3.0, 2.5, 2.3}, {3.2, 2.7, 2.5}, {3.3, 2.8, 2.6}, {3.4, 2.6, 2.0}}
	for k := range 8 {
		d := 0.1 * float64(k)
		rows = append(rows, []float64{3.5 + d, 3.0 + d, 2.8 + d})
	}
	return rows
}()

// TestFinalists runs synchronous halving (η = 3) on finalRows in random orders. Rung 20
// keeps 4 of 12 and c3 with them; at rung 50, ⌊4/3⌋ = 1 keeps c0 alone, which ends at 2.3
// while c3 stops; with 2 finalists c0 and c3 both go on and c3 ends best. The steps are
// 12·20 + 4·30 + 1·50 = 410 against 12·20 + 4·30 + 2·50 = 460 of the grid's 1200.
func TestFinalists(t *testing.T) {
	rungs := []int{20, 50, 100}
	for _, c := range []struct {
		finalists int
		want      outcome
		completed []int
		steps     int
	}{
		{0, outcome{StatusStopped, 50}, []int{0}, 410},
		{1, outcome{StatusStopped, 50}, []int{0}, 410},
		{2, outcome{StatusCompleted, 100}, []int{0, 3}, 460},
		{5, outcome{StatusCompleted, 100}, []int{0, 1, 2, 3, 4}, 640}, // each rung keeps 5: 12·20 + 5·30 + 5·50
	} {
		for seed := range 20 {
			rng := rand.New(rand.NewSource(int64(seed)))
			s := newState(t, Config{Rule: SyncHalving, Rungs: rungs, Eta: 3, Finalists: c.finalists, Budget: 12, Parallel: 1 + seed%4})
			(&driver{t: t, s: s, f: table(rungs, finalRows), pick: func(r []int, _ int) int { return rng.Intn(len(r)) }}).run()
			got := outcomes(s)
			var completed []int
			steps := 0
			for i, o := range got {
				if o.Status == StatusCompleted {
					completed = append(completed, i)
				}
				steps += o.At
			}
			if got[3] != c.want || fmt.Sprint(completed) != fmt.Sprint(c.completed) || steps != c.steps {
				t.Errorf("finalists %d, order %d: c3 ends %v, completed %v, %d steps; want %v, %v, %d steps", c.finalists, seed, got[3], completed, steps, c.want, c.completed, c.steps)
			}
		}
	}
}
