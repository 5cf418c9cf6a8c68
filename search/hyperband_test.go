package search

import (
	"reflect"
	"testing"
)

// TestHyperbandBracketSizes: the weights are Hyperband's bracket sizes n_s of Li et al.
// (2018), Table 1 (R = 81, η = 3: 81, 34, 15, 8 and 5 configurations) and §3.3's R = 27
// (27, 12, 6, 4); Allot spreads their sum exactly so, and spreads any prefix within one
// configuration of its share.
func TestHyperbandBracketSizes(t *testing.T) {
	for _, c := range []struct {
		rungs []int
		want  []int
	}{
		{[]int{1, 3, 9, 27, 81}, []int{81, 34, 15, 8, 5}},
		{[]int{1, 3, 9, 27}, []int{27, 12, 6, 4}},
		{[]int{10, 30, 90}, []int{9, 5, 3}},
	} {
		cfg := Config{Rule: Hyperband, Rungs: c.rungs, Eta: 3}
		if got := cfg.weights(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("rungs %v: weights %v, want %v", c.rungs, got, c.want)
		}
		total := 0
		for _, w := range c.want {
			total += w
		}
		if got := cfg.Allot(total); !reflect.DeepEqual(got, c.want) {
			t.Errorf("rungs %v: Allot(%d) = %v, want %v", c.rungs, total, got, c.want)
		}
		for n := range total {
			for b, k := range cfg.Allot(n) {
				if share := float64(n*c.want[b]) / float64(total); float64(k) < share-1 || float64(k) > share+1 {
					t.Errorf("rungs %v: Allot(%d)[%d] = %d, share %.2f", c.rungs, n, b, k, share)
				}
			}
		}
	}
	two := Config{Rule: Hyperband, Rungs: []int{10, 30, 90}, Eta: 3, Brackets: 2}
	if got := two.Allot(14); !reflect.DeepEqual(got, []int{9, 5}) {
		t.Errorf("brackets 2: Allot(14) = %v, want [9 5]", got)
	}
}

// TestHyperbandByHand follows two brackets by hand on crossRows: rungs 10, 30 and the end
// 90, η = 3, brackets 0 and 1 (weights 9 and 5), 9 configurations one at a time. They fall
// in brackets 0 1 0 0 1 0 0 1 0: bracket 0 is {c0 c2 c3 c5 c6 c8} from step 10, bracket 1
// {c1 c4 c7} from step 30.
//
//	c0 → 10: 4.0   b0 rung 10: c0                    → new c1
//	c1 → 30: 2.8   b1 rung 30: c1                    → new c2
//	c2 → 10: 3.5   b0 rung 10: c2 c0                 → new c3
//	c3 → 10: 5.0   b0 rung 10: c2 c0 c3, top {c2}    → promote c2 to 30
//	c2 → 30: 3.2   b0 rung 30: c2, top 0             → new c4
//	c4 → 30: 4.0   b1 rung 30: c1 c4, top 0          → new c5
//	c5 → 10: 6.0   b0 rung 10 (4), top {c2}          → new c6
//	c6 → 10: 3.2   b0 rung 10 (5), top {c6}          → promote c6 to 30
//	c6 → 30: 3.0   b0 rung 30: c6 c2, top 0          → new c7
//	c7 → 30: 2.5   b1 rung 30: c7 c1 c4, top {c7}    → promote c7 to 90
//	c7 → 90: 2.0   completed                         → new c8
//	c8 → 10: 4.2   b0 rung 10 (6), top {c6 c2}, both promoted; budget spent: the end.
//
// c7, 7th of 9 at step 10, is first judged at 30, where it leads its bracket. Bracket 0's
// six take none to the end: its rung 30 holds two, and ⌊2/3⌋ = 0.
func TestHyperbandByHand(t *testing.T) {
	rungs := []int{10, 30, 90}
	s := newState(t, Config{Rule: Hyperband, Rungs: rungs, Eta: 3, Brackets: 2, Budget: 9, Parallel: 1})
	jobs := (&driver{t: t, s: s, f: table(rungs, crossRows), pick: first}).run()
	want := []Job{{0, 10, false}, {1, 30, false}, {2, 10, false}, {3, 10, false}, {2, 30, false}, {4, 30, false},
		{5, 10, false}, {6, 10, false}, {6, 30, false}, {7, 30, false}, {7, 90, false}, {8, 10, false}}
	if !reflect.DeepEqual(jobs, want) {
		t.Errorf("jobs\n%v, want\n%v", jobs, want)
	}
	var brackets []int
	for _, c := range s.Candidates {
		brackets = append(brackets, c.Bracket)
	}
	if want := []int{0, 1, 0, 0, 1, 0, 0, 1, 0}; !reflect.DeepEqual(brackets, want) {
		t.Errorf("brackets %v, want %v", brackets, want)
	}
	s10, s30, done := outcome{StatusStopped, 10}, outcome{StatusStopped, 30}, outcome{StatusCompleted, 90}
	wantOut := []outcome{s10, s30, s30, s10, s30, s10, s30, done, s10}
	if got := outcomes(s); !reflect.DeepEqual(got, wantOut) {
		t.Errorf("outcomes %v, want %v", got, wantOut)
	}
}

// TestHyperbandOneBracketIsASHA: with one bracket, Hyperband makes ASHA's decisions, job for
// job, on random curves and orders.
func TestHyperbandOneBracketIsASHA(t *testing.T) {
	rungs := []int{10, 20, 40, 80}
	for seed := range 50 {
		var runs [2][]Job
		var ends [2][]outcome
		for k, c := range []Config{{Rule: ASHA}, {Rule: Hyperband, Brackets: 1}} {
			c.Rungs, c.Eta, c.Budget, c.Parallel = rungs, 2+seed%2, 5+seed%11, 1+seed%3
			f, pick := seeded(seed, c.Budget)
			s := newState(t, c)
			runs[k] = (&driver{t: t, s: s, f: f, pick: pick}).run()
			ends[k] = outcomes(s)
		}
		if !reflect.DeepEqual(runs[0], runs[1]) || !reflect.DeepEqual(ends[0], ends[1]) {
			t.Errorf("seed %d: hyperband with one bracket\n%v %v\nASHA\n%v %v", seed, runs[1], ends[1], runs[0], ends[0])
		}
	}
}
