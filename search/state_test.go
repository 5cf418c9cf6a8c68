package search

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"
)

var rules = []string{ASHA, SyncHalving, Median, Hyperband, NoStopping}

// randomCurve has candidates fall from random heights, some diverging (+Inf) or failing
// (NaN) at a rung.
func randomCurve(rng *rand.Rand, n int) curve {
	start := make([]float64, n)
	for i := range start {
		start[i] = 3 + rng.Float64()
	}
	bad := map[[2]int]float64{}
	return func(i, step int) float64 {
		if v, ok := bad[[2]int{i, step}]; ok {
			return v
		}
		switch u := rng.Float64(); {
		case u < 0.05:
			bad[[2]int{i, step}] = inf
			return inf
		case u < 0.08:
			bad[[2]int{i, step}] = nan
			return nan
		}
		return start[i] - 0.001*float64(step) + 0.2*rng.Float64()
	}
}

// TestBudgetAndParallel runs every rule on random curves, budgets, parallelism and event
// orders. The driver checks at each job that no more than Parallel train, that no new
// configuration is asked beyond the budget, that only queued or paused candidates are
// started, to a rung; here: the budget is spent, everything ends, a completed candidate
// trained to the end, and no promoted candidate had diverged or failed.
func TestBudgetAndParallel(t *testing.T) {
	rungs := []int{10, 20, 40, 80}
	for seed := range 200 {
		rng := rand.New(rand.NewSource(int64(seed)))
		for _, rule := range rules {
			c := Config{Rule: rule, Rungs: rungs, Eta: 2 + rng.Intn(2), MinTrials: rng.Intn(4), Budget: 1 + rng.Intn(15), Parallel: 1 + rng.Intn(4)}
			s := newState(t, c)
			d := &driver{t: t, s: s, f: randomCurve(rng, c.Budget), pick: func(r []int, _ int) int { return rng.Intn(len(r)) }}
			jobs := d.run()
			if len(s.Candidates) != c.Budget || !s.Exhausted {
				t.Errorf("%s seed %d: %d candidates, exhausted %v; budget %d", rule, seed, len(s.Candidates), s.Exhausted, c.Budget)
			}
			started := map[int]bool{}
			for _, j := range jobs {
				if rule == NoStopping && j.Until != 80 {
					t.Errorf("%s: job %+v stops before the end", rule, j)
				}
				if k := slices.Index(rungs, j.Until); started[j.Candidate] {
					if v, ok := s.Candidates[j.Candidate].Values[rungs[k-1]]; !ok || math.IsInf(v, 0) {
						t.Errorf("%s seed %d: job %+v promotes a candidate with no finite value at %d", rule, seed, j, rungs[k-1])
					}
				}
				started[j.Candidate] = true
			}
			for i, cd := range s.Candidates {
				if !cd.Status.Finished() || (cd.Status == StatusCompleted) != (cd.Final != nil) ||
					(cd.Status == StatusCompleted && cd.Until != 80) {
					t.Errorf("%s seed %d: candidate %d ends %s at %d, final %v", rule, seed, i, cd.Status, cd.Until, cd.Final)
				}
			}
		}
	}
}

// TestJSONRoundTrip stops every rule's search half way, writes it as JSON and reads it
// back, then runs both copies on: they must ask the same jobs and end equal. The curves
// have diverged candidates, so +Inf values go through JSON.
func TestJSONRoundTrip(t *testing.T) {
	rungs := []int{10, 20, 40, 80}
	pick := func(r []int, n int) int { return (7*n + 3) % len(r) }
	for _, rule := range rules {
		c := Config{Rule: rule, Rungs: rungs, Eta: 2, MinTrials: 2, Budget: 12, Parallel: 3}
		fresh := func() curve {
			f := randomCurve(rand.New(rand.NewSource(1)), c.Budget)
			return func(i, step int) float64 {
				if i == 1 { // diverges in its first segment
					return inf
				}
				return f(i, step)
			}
		}
		whole := &driver{t: t, s: newState(t, c), f: fresh(), pick: pick}
		whole.run()

		half := &driver{t: t, s: newState(t, c), f: fresh(), pick: pick}
		for range whole.events / 2 {
			half.step()
		}
		b, err := json.Marshal(half.s)
		if err != nil {
			t.Fatal(err)
		}
		var back State
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(&back, half.s) {
			t.Fatalf("%s: read back\n%+v\nwritten\n%+v", rule, back, *half.s)
		}
		half.s = &back
		half.run()
		if !reflect.DeepEqual(half.jobs, whole.jobs) || !reflect.DeepEqual(half.s, whole.s) {
			t.Errorf("%s: the search read back from JSON went on differently", rule)
		}
		if !strings.Contains(string(b), `"+Inf"`) {
			t.Errorf("no diverged value in the JSON: the test does not cover +Inf\n%s", b)
		}
	}
}

func TestApply(t *testing.T) {
	rungs := []int{10, 30}
	s := newState(t, Config{Rule: ASHA, Rungs: rungs, Eta: 2, Budget: 3, Parallel: 3})
	for range 3 {
		j, _ := s.Next()
		if !j.New {
			t.Fatalf("job %+v, want a new configuration", j)
		}
		s.Add(1, Point{"lr": 1e-3})
		s.Next()
	}
	if err := s.Apply(Event{Candidate: 0, Step: 20, Value: 1}); err == nil {
		t.Error("an event past the segment's end is accepted")
	}
	if err := s.Apply(Event{Candidate: 0, Step: 5, Value: 1}); err == nil {
		t.Error("an event before the segment's end, neither diverged nor failed, is accepted")
	}
	if err := s.Apply(Event{Candidate: 5, Step: 10}); err == nil {
		t.Error("an event for no candidate is accepted")
	}
	// Diverged within the segment: +Inf at the rung it trained to, ended at step 7.
	if err := s.Apply(Event{Candidate: 0, Step: 7, Diverged: true}); err != nil {
		t.Fatal(err)
	}
	if c := s.Candidates[0]; c.Status != StatusDiverged || c.StoppedAt != 7 || !math.IsInf(c.Values[10], 1) {
		t.Errorf("diverged at 7: %+v", c)
	}
	if err := s.Apply(Event{Candidate: 0, Step: 10, Value: 1}); !errors.Is(err, ErrNotRunning) {
		t.Errorf("second event for a diverged candidate: %v, want ErrNotRunning", err)
	}
	// A value that is not finite is a divergence.
	if err := s.Apply(Event{Candidate: 1, Step: 10, Value: math.NaN()}); err != nil || s.Candidates[1].Status != StatusDiverged {
		t.Errorf("NaN value: %v, %s", err, s.Candidates[1].Status)
	}
	if err := s.Apply(Event{Candidate: 2, Step: 10, Value: 2.5}); err != nil {
		t.Fatal(err)
	}
	if c := s.Candidates[2]; c.Status != StatusPaused || c.Values[10] != 2.5 || c.Grid != 1 {
		t.Errorf("paused at 10: %+v", c)
	}
}

func TestConfigValidate(t *testing.T) {
	good := Config{Rule: ASHA, Rungs: []int{10, 30}, Eta: 3, Budget: 9, Parallel: 2}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.Rule = "bohb" }, `"bohb"`},
		{func(c *Config) { c.Rule, c.Brackets = Hyperband, 3 }, "brackets 3"},
		{func(c *Config) { c.Rule, c.Grace, c.Brackets = Hyperband, 20, 2 }, "brackets 2: 1 rung(s) from grace 20"},
		{func(c *Config) { c.Brackets = -1 }, "brackets -1"},
		{func(c *Config) { c.Grace = -1 }, "grace -1"},
		{func(c *Config) { c.Rule, c.Eta = Hyperband, 1 }, "eta 1"},
		{func(c *Config) { c.Rungs = nil }, "no rungs"},
		{func(c *Config) { c.Rungs = []int{30, 10} }, "rung 1 is 10"},
		{func(c *Config) { c.Rungs = []int{0, 10} }, "rung 0 is 0"},
		{func(c *Config) { c.Eta = 1 }, "eta 1"},
		{func(c *Config) { c.Rule, c.MinTrials = Median, -1 }, "min_trials -1"},
		{func(c *Config) { c.Finalists = 2 }, "finalists 2"},
		{func(c *Config) { c.Rule, c.Finalists = SyncHalving, -1 }, "finalists -1"},
		{func(c *Config) { c.Budget = 0 }, "budget 0"},
		{func(c *Config) { c.Parallel = 0 }, "parallel 0"},
	} {
		bad := good
		c.change(&bad)
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one naming %s", bad, err, c.want)
		}
	}
	if _, err := NewState(Config{Rule: Median, Rungs: []int{5}, Budget: 1, Parallel: 1}); err != nil {
		t.Errorf("median needs no eta: %v", err)
	}
}

// A configuration added again (the same key) shares the first one's outcome: it takes no
// slot and trains nothing, an event for it is an error, it follows the first to its rung
// and its stop, and the rules count the configuration once: of 2 distinct configurations
// and a duplicate at a rung, ASHA (η = 3) promotes ⌊2/3⌋ = 0 (counting the duplicate,
// ⌊3/3⌋ = 1) and starts a new one, again a duplicate, of one paused; with the budget spent
// and none completed, the best goes on to the end.
func TestAddKeyedDuplicate(t *testing.T) {
	s := newState(t, Config{Rule: ASHA, Rungs: []int{10, 20}, Eta: 3, Budget: 4, Parallel: 2})
	a := s.AddKeyed(0, Point{"lr": 1}, "a")
	b := s.AddKeyed(0, Point{"lr": 2}, "b")
	for range 2 {
		if j, ok := s.Next(); !ok || j.New {
			t.Fatalf("job %+v %v, want a and b to their first rung", j, ok)
		}
	}
	a2 := s.AddKeyed(0, Point{"lr": 1}, "a")
	if c := s.Candidates[a2]; c.Same == nil || *c.Same != a || c.Status != StatusRunning || s.Running() != 2 {
		t.Fatalf("duplicate of a running one: %+v, %d running; want it running with a, taking no slot", c, s.Running())
	}
	if err := s.Apply(Event{Candidate: a2, Step: 10, Value: 1}); err == nil {
		t.Error("an event for a duplicate was applied")
	}
	for i, v := range map[int]float64{a: 2, b: 1} {
		if err := s.Apply(Event{Candidate: i, Step: 10, Value: v}); err != nil {
			t.Fatal(err)
		}
	}
	if c := s.Candidates[a2]; c.Status != StatusPaused || c.Values[10] != 2 {
		t.Errorf("duplicate after its original paused: %+v", c)
	}
	if j, ok := s.Next(); !ok || !j.New {
		t.Fatalf("job %+v %v, want a new configuration: 2 distinct at the rung promote none", j, ok)
	}
	b2 := s.AddKeyed(0, Point{"lr": 2}, "b")
	if c := s.Candidates[b2]; c.Status != StatusPaused || c.Values[10] != 1 {
		t.Errorf("duplicate of a paused one: %+v", c)
	}
	// budget spent and nothing promotable: the leader, b, goes on to the end, once
	if j, ok := s.Next(); !ok || j.Candidate != b || j.Until != 20 {
		t.Fatalf("job %+v %v: budget spent, nothing to promote: want the leader b to the end", j, ok)
	}
	if err := s.Apply(Event{Candidate: b, Step: 20, Value: 0.5, Final: new(0.5)}); err != nil {
		t.Fatal(err)
	}
	if j, ok := s.Next(); ok || !s.Done() {
		t.Fatalf("job %+v: the leader completed: want the search done", j)
	}
	if c := s.Candidates[b2]; c.Status != StatusCompleted {
		t.Errorf("duplicate of the completed leader: %+v, want completed", c)
	}
	for _, i := range []int{a, a2} {
		if c := s.Candidates[i]; c.Status != StatusStopped || c.StoppedAt != 10 {
			t.Errorf("configuration %d (a or its duplicate): %+v, want stopped at 10", i, c)
		}
	}
}
