package report

import (
	"fmt"
	"math"
	"slices"

	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/trial"
)

// NamedTable is a built table and the name its files take.
type NamedTable struct {
	Name  string
	Table *Table
}

// BuildTables builds every table of the manifest from the trials' outcomes (by trial ID).
// A cell with several seeds shows the mean and spread over the seeds that completed, and
// counts those that diverged or failed.
func BuildTables(m *sweeps.Manifest, trials []sweeps.Trial, outcomes map[string]trial.Outcome) ([]NamedTable, error) {
	var out []NamedTable
	for i, spec := range m.Tables {
		var (
			t   *Table
			err error
		)
		switch spec.Kind {
		case "c_sensitivity":
			t, err = cSensitivity(spec, trials, outcomes)
		case "hyperparameters":
			t, err = hyperparameters(m, spec, trials, outcomes)
		}
		if err != nil {
			return nil, fmt.Errorf("tables[%d] (%s): %w", i, spec.Name, err)
		}
		t.Engines = mixedEngines(trials, outcomes)
		out = append(out, NamedTable{Name: spec.Name, Table: t})
	}
	return out, nil
}

// mixedEngines lists the arithmetics of the engines that produced the trials' results,
// sorted, when there is more than one; nil otherwise.
func mixedEngines(trials []sweeps.Trial, outcomes map[string]trial.Outcome) []string {
	var seen []string
	for _, t := range trials {
		if r := outcomes[t.ID].Result; r != nil && r.Engine.Arithmetic != "" && !slices.Contains(seen, r.Engine.Arithmetic) {
			seen = append(seen, r.Engine.Arithmetic)
		}
	}
	if len(seen) < 2 {
		return nil
	}
	slices.Sort(seen)
	return seen
}

// metric returns the table's number of a finished result: the test perplexity (or the
// final validation loss) at the run's primary iterate.
func metric(spec sweeps.Table, r *training.Result) float64 {
	if spec.Metric == "val_loss" {
		return r.Val[r.Primary]
	}
	return r.TestPPL[r.Primary]
}

// cellOf merges the outcomes of one grid cell's seeds into the value a table shows and the
// validation loss that chooses its bold.
func cellOf(spec sweeps.Table, os []SeedOutcome) (shown, val Seeds) {
	return Gather(os, func(r *training.Result) float64 { return metric(spec, r) }),
		Gather(os, func(r *training.Result) float64 {
			if v, ok := r.Val[r.Primary]; ok {
				return v
			}
			return math.NaN() // no validation loss: never the best
		})
}

func cSensitivity(spec sweeps.Table, trials []sweeps.Trial, outcomes map[string]trial.Outcome) (*Table, error) {
	opt := spec.Optimizer
	if opt == "" {
		opt = training.SFAdamW
	}
	type key struct {
		row float64
		col string
	}
	groups := map[key][]SeedOutcome{}
	var keys []key
	var rows []float64
	var colsC, lrs, beta2s []float64
	for _, t := range trials {
		for _, p := range t.Points {
			if p.Optimizer != opt || (spec.LR != 0 && p.LR != spec.LR) || (spec.Beta2 != 0 && p.Beta2 != spec.Beta2) || !decayMatches(spec, p) {
				continue
			}
			if !slices.Contains(lrs, p.LR) {
				lrs = append(lrs, p.LR)
			}
			if !slices.Contains(beta2s, p.Beta2) {
				beta2s = append(beta2s, p.Beta2)
			}
			k := key{p.Beta1, p.CLabel()}
			if _, seen := groups[k]; !seen {
				keys = append(keys, k)
			}
			groups[k] = append(groups[k], SeedOutcome{p.Seed, outcomes[t.ID]})
			if !slices.Contains(rows, p.Beta1) {
				rows = append(rows, p.Beta1)
			}
			if !slices.Contains(colsC, p.C) {
				colsC = append(colsC, p.C)
			}
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no trial of optimizer %q matches the table", opt)
	}
	slices.Sort(rows)
	slices.Sort(colsC)
	cols := make([]string, len(colsC))
	for i, c := range colsC {
		cols[i] = sweeps.Point{C: c}.CLabel()
	}
	cells := make([]Cell, 0, len(keys))
	for _, k := range keys {
		s, val := cellOf(spec, groups[k])
		cells = append(cells, Cell{Row: k.row, Col: k.col, Value: s.Mean, Status: s.Status, Step: s.Step, Reason: s.Reason, Spread: s.Spread, Val: val})
	}
	t, err := CSensitivityTable(spec.Title, spec.Label, cells, rows, cols)
	if err == nil && len(lrs) == 1 && len(beta2s) == 1 {
		t.LR, t.Beta2 = lrs[0], beta2s[0]
	}
	return t, err
}

// decayMatches reports whether point p has the weight decay the table keeps: any, where
// the table names none.
func decayMatches(spec sweeps.Table, p sweeps.Point) bool {
	if spec.WeightDecay == nil {
		return true
	}
	wd := training.DefaultWeightDecay
	if p.WeightDecay != nil {
		wd = *p.WeightDecay
	}
	return wd == *spec.WeightDecay
}

func hyperparameters(m *sweeps.Manifest, spec sweeps.Table, trials []sweeps.Trial, outcomes map[string]trial.Outcome) (*Table, error) {
	type key struct {
		opt, sched    string
		lr, b1, b2, c float64
	}
	groups := map[key][]SeedOutcome{}
	var keys []key
	for _, t := range trials {
		for _, p := range t.Points {
			if spec.Optimizer != "" && p.Optimizer != spec.Optimizer || !decayMatches(spec, p) {
				continue
			}
			name := p.Optimizer
			if name == training.SFAdamW && p.C != 0 {
				name = "refined"
			}
			sched := ""
			if g := m.Optimizers[p.Grid]; g.Name == training.AdamW && g.Schedule != "" && g.Schedule != "constant" {
				sched = map[string]string{"cosine": "Cosine LR", "linear": "Linear LR", "wsd": "WSD"}[g.Schedule]
			}
			k := key{name, sched, p.LR, p.Beta1, p.Beta2, p.C}
			if _, seen := groups[k]; !seen {
				keys = append(keys, k)
			}
			for _, o := range groups[k] {
				if o.Seed == p.Seed {
					return nil, fmt.Errorf("%s at LR %g, betas (%g, %g), C %g: two trials of seed %d, which differ in a setting the table does not show (weight_decay, warmup_frac or batch_tokens): give the table weight_decay: to keep one weight decay, or split the grids into sweeps",
						name, p.LR, p.Beta1, p.Beta2, p.C, p.Seed)
				}
			}
			groups[k] = append(groups[k], SeedOutcome{p.Seed, outcomes[t.ID]})
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no trial matches the table")
	}
	trs := make([]TrialSummary, 0, len(keys))
	for _, k := range keys {
		s, val := cellOf(spec, groups[k])
		trs = append(trs, TrialSummary{Optimizer: k.opt, Schedule: k.sched, LR: k.lr, Beta1: k.b1, Beta2: k.b2, C: k.c,
			Value: s.Mean, Status: s.Status, Step: s.Step, Reason: s.Reason, Spread: s.Spread, Val: val})
	}
	return HyperparameterTable(spec.Title, spec.Label, trs)
}
