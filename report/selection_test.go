package report

import (
	"math"
	"testing"

	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/trial"
)

// A table built from results bolds the configuration of lowest validation loss, over the
// seeds, where the test perplexity orders the other way: the cell of lowest test
// perplexity is shown as it is, and not bold.
func TestBuildBoldOnValidation(t *testing.T) {
	m, trials := seedsSweep(t)
	out := map[string]trial.Outcome{}
	for _, tr := range trials {
		p := tr.Points[0]
		ppl, val := 30.0, 3.0 // vanilla: the lower test perplexity, the higher validation loss
		if p.C != 0 {
			ppl, val = 31.0, 2.9
		}
		s := float64(p.Seed) / 100 // the same on both sides: pairs take it out
		out[tr.ID] = trial.Outcome{Result: &training.Result{Status: status.Completed, Primary: "x",
			TestPPL: map[string]float64{"x": ppl + s}, Val: map[string]float64{"x": val + s}}}
	}
	tables, err := BuildTables(m, trials, out)
	if err != nil || len(tables) != 1 {
		t.Fatalf("%d tables, %v", len(tables), err)
	}
	for _, c := range tables[0].Table.Cells {
		if c.Best != (c.Col != "vanilla") || c.Value != map[bool]float64{true: 30.02, false: 31.02}[c.Col == "vanilla"] {
			t.Errorf("cell (%v, %s): value %v, bold %v; want C = 50 bold, by its validation loss", c.Row, c.Col, c.Value, c.Best)
		}
	}
}

// A hyperparameter table's best trial is the one of lowest validation loss, not of lowest
// test perplexity; a trial without a validation loss is never best, whatever its
// perplexity; with none, the grid has no best.
func TestHyperparameterBestOnValidation(t *testing.T) {
	trial := func(lr, ppl float64, val Seeds) TrialSummary {
		return TrialSummary{Optimizer: "adamw", LR: lr, Beta1: 0.9, Beta2: 0.95, Value: ppl, Status: status.Completed, Val: val}
	}
	loss := func(v float64) Seeds { return Seeds{Mean: v, Status: status.Completed} }
	tab, err := HyperparameterTable("h", "", []TrialSummary{
		trial(1e-3, 25, loss(3.20)),
		trial(2e-3, 24, loss(3.25)), // the lowest test perplexity
		trial(5e-3, 20, Seeds{}),    // lower still, with no validation loss
	})
	if err != nil {
		t.Fatal(err)
	}
	if g := tab.Grids[0]; g.Best < 0 || tab.Trials[g.Best].LR != 1e-3 || len(g.Ties) != 0 {
		t.Errorf("best %d, ties %v of %+v; want lr 1e-3", g.Best, g.Ties, tab.Trials)
	}
	tab, err = HyperparameterTable("h", "", []TrialSummary{trial(1e-3, 25, Seeds{}), trial(2e-3, 24, Seeds{})})
	if err != nil || tab.Grids[0].Best != -1 {
		t.Errorf("without validation losses: best %d (%v), want none", tab.Grids[0].Best, err)
	}
	if _, err := HyperparameterTable("h", "", []TrialSummary{trial(1e-3, 25, Seeds{Status: status.Completed, Mean: math.Inf(1)})}); err == nil {
		t.Error("an infinite validation loss was accepted")
	}
}
