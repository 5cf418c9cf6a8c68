package search

import (
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"testing"
)

var (
	inf = math.Inf(1) // diverges at the rung
	nan = math.NaN()  // fails before the rung
)

// TestASHAPaperOrder follows Algorithm 2 of Li et al. (2020) by hand, with one worker
// (Parallel 1, so events arrive in job order), rungs 10, 30, 90 and η = 3; "rung k: a b"
// lists a rung best first, top ⌊n/3⌋ of it promotable.
//
//	c0 → 10: 5.0   rung 10: c0, top 0                      → new c1
//	c1 → 10: 4.0   rung 10: c1 c0, top 0                   → new c2
//	c2 → 10: 6.0   rung 10: c1 c0 c2, top {c1}             → promote c1 to 30
//	c1 → 30: 3.5   rung 30: c1 top 0; rung 10 top {c1} done → new c3
//	c3 → 10: 3.0   rung 10: c3 c1 c0 c2, top {c3}          → promote c3 to 30
//	c3 → 30: 2.5   rung 30: c3 c1 top 0; rung 10 top {c3}  → new c4
//	c4 → 10: 7.0   rung 10 (5), top {c3}                   → new c5
//	c5 → 10: 4.5   rung 10 (6), top {c3 c1}, both promoted → new c6
//	c6 → 10: 2.0   rung 10 (7), top {c6 c3}                → promote c6 to 30
//	c6 → 30: 1.0   rung 30: c6 c3 c1, top {c6}             → promote c6 to 90, the end
//	c6 → 90: 0.5   completed; rung 30 top {c6}, rung 10 top {c6 c3}, all promoted → new c7
//	c7 → 10: 8.0   rung 10 (8), top {c6 c3}                → new c8
//	c8 → 10: 5.5   rung 10 (9), top {c6 c3 c1}, all promoted; budget spent: the end.
//
// c1 and c3 stay paused at 30, the others at 10: they are stopped there.
func TestASHAPaperOrder(t *testing.T) {
	rungs := []int{10, 30, 90}
	f := table(rungs, [][]float64{
		{5.0, 4.8, 4.7}, {4.0, 3.5, 3.3}, {6.0, 5.0, 4.0}, {3.0, 2.5, 2.4}, {7.0, 6.0, 5.0},
		{4.5, 4.0, 3.0}, {2.0, 1.0, 0.5}, {8.0, 7.0, 6.0}, {5.5, 5.0, 4.5},
	})
	s := newState(t, Config{Rule: ASHA, Rungs: rungs, Eta: 3, Budget: 9, Parallel: 1})
	jobs := (&driver{t: t, s: s, f: f, pick: first}).run()
	want := []Job{{0, 10, false}, {1, 10, false}, {2, 10, false}, {1, 30, false}, {3, 10, false}, {3, 30, false},
		{4, 10, false}, {5, 10, false}, {6, 10, false}, {6, 30, false}, {6, 90, false}, {7, 10, false}, {8, 10, false}}
	if !reflect.DeepEqual(jobs, want) {
		t.Errorf("jobs\n%v, want\n%v", jobs, want)
	}
	stop10, stop30 := outcome{StatusStopped, 10}, outcome{StatusStopped, 30}
	wantOut := []outcome{stop10, stop30, stop10, stop30, stop10, stop10, {StatusCompleted, 90}, stop10, stop10}
	if got := outcomes(s); !reflect.DeepEqual(got, wantOut) {
		t.Errorf("outcomes %v, want %v", got, wantOut)
	}
}

// TestASHANeverPromotesDivergedOrFailed: with η = 2, a rung of two where one diverged has
// the diverged one out of its top 1; where all diverged or failed, the top holds only
// them and nothing is ever promoted; where the other failed, the one left goes on as the
// leader of a search that can go no further.
func TestASHANeverPromotesDivergedOrFailed(t *testing.T) {
	rungs := []int{10, 30}
	cases := []struct {
		rows [][]float64
		want []outcome
	}{
		{[][]float64{{inf, 1}, {5, 4}}, []outcome{{StatusDiverged, 10}, {StatusCompleted, 30}}},
		{[][]float64{{inf, 1}, {inf, 1}, {nan, 1}, {inf, 1}}, []outcome{{StatusDiverged, 10}, {StatusDiverged, 10}, {StatusFailed, 10}, {StatusDiverged, 10}}},
		// one value in the rung, top 0: the search can go no further with none completed,
		// so its leader goes on
		{[][]float64{{nan, 1}, {5, 4}}, []outcome{{StatusFailed, 10}, {StatusCompleted, 30}}},
	}
	for i, c := range cases {
		s := newState(t, Config{Rule: ASHA, Rungs: rungs, Eta: 2, Budget: len(c.rows), Parallel: 1})
		(&driver{t: t, s: s, f: table(rungs, c.rows), pick: first}).run()
		if got := outcomes(s); !reflect.DeepEqual(got, c.want) {
			t.Errorf("case %d: outcomes %v, want %v", i, got, c.want)
		}
	}
}

// syncRows are 9 configurations at rungs 10, 30, 90 for η = 2. At 10, ranked: c6 2, c3 3,
// c1 4, c5 4.5, c0 5, c8 5.5, c2 6, c4 +Inf (diverged); c7 failed and has no value: n = 8,
// the best 4 (c6 c3 c1 c5) go on, c0 c8 c2 stop at 10. At 30: c1 fails; c3 2.5, c6 2.8,
// c5 3.2: n = 3, the best 1 (c3) goes on and completes, c6 c5 stop at 30.
var syncRows = [][]float64{
	{5.0, 4.0, 3.0}, {4.0, nan, 1}, {6.0, 5.0, 4.0}, {3.0, 2.5, 2.0}, {inf, 1, 1},
	{4.5, 3.2, 3.0}, {2.0, 2.8, 1.0}, {nan, 1, 1}, {5.5, 5.0, 4.0},
}

var syncWant = []outcome{
	{StatusStopped, 10}, {StatusFailed, 30}, {StatusStopped, 10}, {StatusCompleted, 90}, {StatusDiverged, 10},
	{StatusStopped, 30}, {StatusStopped, 30}, {StatusFailed, 10}, {StatusStopped, 10},
}

// TestSyncHalvingAnyOrder runs the same curves with events in 50 random orders (three
// configurations training at once): synchronous halving ends the same way every time, as
// reasoned in syncRows. ASHA, which promotes on the rungs as they are, does not: the same
// orders give it more than one ending, which shows the orders do differ.
func TestSyncHalvingAnyOrder(t *testing.T) {
	rungs := []int{10, 30, 90}
	endings := map[string]map[string]bool{SyncHalving: {}, ASHA: {}}
	for seed := range 50 {
		for rule := range endings {
			rng := rand.New(rand.NewSource(int64(seed)))
			s := newState(t, Config{Rule: rule, Rungs: rungs, Eta: 2, Budget: 9, Parallel: 3})
			d := &driver{t: t, s: s, f: table(rungs, syncRows), pick: func(r []int, _ int) int { return rng.Intn(len(r)) }}
			d.run()
			got := outcomes(s)
			endings[rule][fmt.Sprint(got)] = true
			if rule == SyncHalving && !reflect.DeepEqual(got, syncWant) {
				t.Errorf("order %d: outcomes %v, want %v", seed, got, syncWant)
			}
		}
	}
	if n := len(endings[ASHA]); n < 2 {
		t.Errorf("ASHA ended %d way(s) over the orders: the orders do not differ", n)
	}
}

// TestMedianKnownCurves: MinTrials 2, one at a time, rungs 10, 20 and the end 30.
//
//	c0, c1 complete untouched (fewer than 2 completed). Medians of {c0, c1}: 6 at 10, 5 at 20.
//	c2 at 10: 6.5 > 6                           → stopped at 10
//	c3 at 10: 4.9 ≤ 6; at 20: 5.6, but its best is 4.9 ≤ 5 → goes on, completes
//	c4 at 10: median of {5, 7, 4.9} is 5; 5.2 > 5 → stopped at 10
//	c5 at 10: 4.95 ≤ 5; at 20: median of {4, 6, 5.6} is 5.6, best 4.95 → completes
//
// With MinTrials 3, c2 meets only two completed configurations and completes.
func TestMedianKnownCurves(t *testing.T) {
	rungs := []int{10, 20, 30}
	rows := [][]float64{{5, 4, 3}, {7, 6, 5}, {6.5, 6, 5.5}, {4.9, 5.6, 5.5}, {5.2, 5, 5}, {4.95, 5.5, 5}}
	s := newState(t, Config{Rule: Median, Rungs: rungs, MinTrials: 2, Budget: 6, Parallel: 1})
	(&driver{t: t, s: s, f: table(rungs, rows), pick: first}).run()
	done := outcome{StatusCompleted, 30}
	want := []outcome{done, done, {StatusStopped, 10}, done, {StatusStopped, 10}, done}
	if got := outcomes(s); !reflect.DeepEqual(got, want) {
		t.Errorf("outcomes %v, want %v", got, want)
	}

	s = newState(t, Config{Rule: Median, Rungs: rungs, MinTrials: 3, Budget: 6, Parallel: 1})
	(&driver{t: t, s: s, f: table(rungs, rows), pick: first}).run()
	if got := s.Candidates[2].Status; got != StatusCompleted {
		t.Errorf("MinTrials 3: c2 is %s, want completed", got)
	}
}

// TestNoStopping: every job trains to the end, every configuration completes.
func TestNoStopping(t *testing.T) {
	rungs := []int{10, 30, 90}
	s := newState(t, Config{Rule: NoStopping, Rungs: rungs, Budget: 5, Parallel: 2})
	jobs := (&driver{t: t, s: s, f: func(i, step int) float64 { return float64(i) }, pick: first}).run()
	if len(jobs) != 5 {
		t.Errorf("%d jobs, want 5", len(jobs))
	}
	for _, j := range jobs {
		if j.Until != 90 {
			t.Errorf("job %+v does not train to the end", j)
		}
	}
	for i, c := range s.Candidates {
		if c.Status != StatusCompleted || *c.Final != float64(i) {
			t.Errorf("candidate %d: %s, final %v", i, c.Status, c.Final)
		}
	}
}

// TestFewerThanEtaFinish: a search of fewer configurations than η, or whose promoted
// configurations fail past a rung, still takes its best to the end. Synchronous halving of
// 2 by η = 3 keeps one at each rung (⌊2/3⌋ = 0); under ASHA, of 4 at rung 10 the best two
// are promoted, one fails on the way to 30, and the one left at 30 (⌊1/2⌋ = 0 of it) goes on
// as the search's leader.
func TestFewerThanEtaFinish(t *testing.T) {
	rungs := []int{10, 30, 90}
	s := newState(t, Config{Rule: SyncHalving, Rungs: rungs, Eta: 3, Budget: 2, Parallel: 1})
	(&driver{t: t, s: s, f: table(rungs, [][]float64{{5, 4, 3}, {4, 3, 2}}), pick: first}).run()
	if got, want := outcomes(s), []outcome{{StatusStopped, 10}, {StatusCompleted, 90}}; !reflect.DeepEqual(got, want) {
		t.Errorf("sync_halving of 2 by 3: outcomes %v, want %v", got, want)
	}
	s = newState(t, Config{Rule: ASHA, Rungs: rungs, Eta: 2, Budget: 4, Parallel: 1})
	(&driver{t: t, s: s, f: table(rungs, [][]float64{{5, 4, 3}, {1, nan, 1}, {2, 1.5, 1}, {6, 5, 4}}), pick: first}).run()
	got := outcomes(s)
	if got[1].Status != StatusFailed || got[2].Status != StatusCompleted {
		t.Errorf("asha with a promoted configuration failed: outcomes %v, want 1 failed and 2, the leader at 30, completed", got)
	}
}
