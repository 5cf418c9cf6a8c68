package search

import (
	"math/rand"
	"testing"

	"github.com/c-bata/goptuna"
	"github.com/c-bata/goptuna/medianstopping"
)

// TestMedianAgainstGoptuna checks every decision of the median rule against goptuna's
// medianstopping.MedianPruner, a second implementation of Optuna's: over 300 random
// searches (random curves, MinTrials, parallelism and event order), each time a candidate
// reaches a rung before the end, the search as it stands is written into a goptuna study
// (completed candidates as complete trials with their rung values as intermediate ones,
// the others as running or pruned trials, which the pruner must ignore) and the pruner's
// answer for the candidate must be whether Apply stopped it.
func TestMedianAgainstGoptuna(t *testing.T) {
	rungs := []int{10, 20, 30, 40}
	var decisions, stops int
	for seed := range 300 {
		rng := rand.New(rand.NewSource(int64(seed)))
		minTrials := rng.Intn(5)
		s := newState(t, Config{Rule: Median, Rungs: rungs, MinTrials: minTrials, Budget: 12, Parallel: 1 + rng.Intn(4)})
		// Curves that fall with noise, from random heights: some cross the median.
		start := make([]float64, 12)
		for i := range start {
			start[i] = 3 + rng.Float64()
		}
		f := func(i, step int) float64 { return start[i] - 0.01*float64(step) + 0.3*rng.Float64() }
		d := &driver{t: t, s: s, f: f, pick: func(r []int, _ int) int { return rng.Intn(len(r)) }}
		d.apply = func(e Event) error {
			if e.Step == rungs[len(rungs)-1] {
				return s.Apply(e)
			}
			prune := goptunaPrunes(t, s, e.Candidate, e.Step, e.Value, minTrials)
			if err := s.Apply(e); err != nil {
				return err
			}
			if stopped := s.Candidates[e.Candidate].Status == StatusStopped; stopped != prune {
				t.Errorf("seed %d, candidate %d at %d: stopped %v, goptuna prunes %v", seed, e.Candidate, e.Step, stopped, prune)
			}
			decisions++
			if prune {
				stops++
			}
			return nil
		}
		d.run()
	}
	if stops == 0 || stops == decisions {
		t.Errorf("%d stops in %d decisions: the histories do not exercise both answers", stops, decisions)
	}
	t.Logf("%d decisions, %d stops, all as goptuna's", decisions, stops)
}

// goptunaPrunes asks goptuna's MedianPruner whether candidate i of s, reaching step with
// value v, is pruned.
func goptunaPrunes(t *testing.T, s *State, i, step int, v float64, minTrials int) bool {
	t.Helper()
	study, err := goptuna.CreateStudy("median", goptuna.StudyOptionStorage(goptuna.NewInMemoryStorage()),
		goptuna.StudyOptionLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	st := study.Storage
	add := func(values map[int]float64, state goptuna.TrialState) int {
		id, err := st.CreateNewTrial(study.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range sortedSteps(values) {
			if err := st.SetTrialIntermediateValue(id, k, values[k]); err != nil {
				t.Fatal(err)
			}
		}
		if state != goptuna.TrialStateRunning {
			if err := st.SetTrialState(id, state); err != nil {
				t.Fatal(err)
			}
		}
		return id
	}
	for j, c := range s.Candidates {
		switch {
		case j == i:
		case c.Status == StatusCompleted:
			add(c.Values, goptuna.TrialStateComplete)
		case c.Status == StatusStopped:
			add(c.Values, goptuna.TrialStatePruned)
		default:
			add(c.Values, goptuna.TrialStateRunning)
		}
	}
	own := map[int]float64{step: v}
	for k, x := range s.Candidates[i].Values {
		own[k] = x
	}
	id := add(own, goptuna.TrialStateRunning)
	trial, err := st.GetTrial(id)
	if err != nil {
		t.Fatal(err)
	}
	pruner := &medianstopping.MedianPruner{PercentilePruner: &medianstopping.PercentilePruner{Percentile: 50, NStartUpTrials: minTrials}}
	prune, err := pruner.Prune(study, trial)
	if err != nil {
		t.Fatal(err)
	}
	return prune
}
