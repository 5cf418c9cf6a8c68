package report

// The hyperparameter tables (tab:hyperparameter_main and its variants): a row per trial,
// the optimizers in the paper's order, checked and put in canonical order.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/internal/status"
)

// optimizers lists the optimizers of a hyperparameter table in the paper's row order with
// their names in plain text and LaTeX.
var optimizers = []struct{ key, text, latex string }{
	{"adamw", "AdamW", `\texttt{AdamW}`},
	{"sfadamw", "SF-AdamW", `\texttt{SF-AdamW}`},
	{"refined", "Refined SF-AdamW", `Refined \texttt{SF-AdamW}`},
}

func optimizerRank(name string) int {
	for i, o := range optimizers {
		if o.key == name {
			return i
		}
	}
	return -1
}

// HyperparameterTable builds a hyperparameter table like the paper's
// tab:hyperparameter_main: one row per optimizer (and schedule label), listing the learning
// rates, (β1, β2) pairs and C values it was run with, the best trial's values in bold. The
// best trial is the finished trial with the lowest validation loss (the first in canonical
// order on ties), never chosen by its test perplexity; a list with a single value is not
// bolded, as in the paper. Trials with
// status.Missing were not run: they appear in Trials but not in the grids.
func HyperparameterTable(title, label string, trials []TrialSummary) (*Table, error) {
	fail := func(format string, args ...any) (*Table, error) {
		return nil, fmt.Errorf("report: hyperparameter table: "+format, args...)
	}
	if err := checkTitleLabel(title, label); err != nil {
		return fail("%w", err)
	}
	if len(trials) == 0 {
		return fail("no trials")
	}
	ts := make([]TrialSummary, len(trials))
	for i, tr := range trials {
		if err := checkTrial(tr); err != nil {
			return fail("trials[%d]: %w", i, err)
		}
		ts[i] = normalizeTrial(tr)
	}
	slices.SortFunc(ts, compareTrials)

	t := &Table{
		Kind: TableHyperparameters, Title: title, Label: label,
		Columns: []string{"lr", "betas", "c"},
		Trials:  ts,
	}
	for lo := 0; lo < len(ts); {
		hi := lo + 1
		for hi < len(ts) && ts[hi].Optimizer == ts[lo].Optimizer && ts[hi].Schedule == ts[lo].Schedule {
			hi++
		}
		g := Grid{Optimizer: ts[lo].Optimizer, Schedule: ts[lo].Schedule, LR: []float64{}, Betas: [][2]float64{}, C: []float64{}, Best: -1}
		for i := lo; i < hi; i++ {
			tr := ts[i]
			if tr.Status == status.Missing {
				continue
			}
			g.LR = append(g.LR, tr.LR)
			g.Betas = append(g.Betas, [2]float64{tr.Beta1, tr.Beta2})
			if tr.C > 0 {
				g.C = append(g.C, tr.C)
			}
		}
		best, tied := bestOf(hi-lo, func(k int) (status.Status, Spread, Seeds) { return ts[lo+k].Status, ts[lo+k].Spread, ts[lo+k].Val })
		if best >= 0 {
			g.Best = lo + best
		}
		for k, tie := range tied {
			if tie && k != best {
				g.Ties = append(g.Ties, lo+k)
			}
		}
		slices.Sort(g.LR)
		g.LR = slices.Compact(g.LR)
		slices.SortFunc(g.Betas, func(a, b [2]float64) int {
			return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
		})
		g.Betas = slices.Compact(g.Betas)
		slices.Sort(g.C)
		g.C = slices.Compact(g.C)
		key := g.Optimizer
		if g.Schedule != "" {
			key += "/" + g.Schedule
		}
		t.Rows = append(t.Rows, key)
		t.Grids = append(t.Grids, g)
		lo = hi
	}
	return t, nil
}

func checkTrial(tr TrialSummary) error {
	if optimizerRank(tr.Optimizer) < 0 {
		return &fielderr.Error{Field: "Optimizer", Value: strconv.Quote(tr.Optimizer), Reason: "must be adamw, sfadamw or refined"}
	}
	if err := checkPlainText("Schedule", tr.Schedule); err != nil {
		return err
	}
	if !(tr.LR > 0) || math.IsInf(tr.LR, 0) {
		return &fielderr.Error{Field: "LR", Value: tr.LR, Reason: "must be positive and finite"}
	}
	if err := checkBeta("Beta1", tr.Beta1); err != nil {
		return err
	}
	if err := checkBeta("Beta2", tr.Beta2); err != nil {
		return err
	}
	if tr.Optimizer == "refined" {
		if !(tr.C > 0) || math.IsInf(tr.C, 0) {
			return &fielderr.Error{Field: "C", Value: tr.C, Reason: "must be positive and finite for refined"}
		}
	} else if tr.C != 0 {
		return &fielderr.Error{Field: "C", Value: tr.C, Reason: "must be 0 for " + tr.Optimizer + " (use optimizer refined)"}
	}
	if err := checkSpread(tr.Spread); err != nil {
		return err
	}
	if err := checkVal(tr.Val); err != nil {
		return err
	}
	return checkOutcome(tr.Value, tr.Status, tr.Step)
}

func normalizeTrial(tr TrialSummary) TrialSummary {
	n := tr
	n.Spread, n.Val = normalizeSpread(tr.Status, tr.Spread), normalizeVal(tr.Val)
	n.LR, n.Beta1, n.Beta2 = tr.LR+0, tr.Beta1+0, tr.Beta2+0
	n.Value, n.Step, n.Reason = outcomeFields(tr.Status, tr.Value, tr.Step, tr.Reason)
	return n
}

// compareTrials orders trials totally: by optimizer, schedule, configuration, then outcome.
func compareTrials(a, b TrialSummary) int {
	return cmp.Or(
		cmp.Compare(optimizerRank(a.Optimizer), optimizerRank(b.Optimizer)),
		strings.Compare(a.Schedule, b.Schedule),
		cmp.Compare(a.LR, b.LR),
		cmp.Compare(a.Beta1, b.Beta1),
		cmp.Compare(a.Beta2, b.Beta2),
		cmp.Compare(a.C, b.C),
		cmp.Compare(slices.Index(statusOrder, a.Status), slices.Index(statusOrder, b.Status)),
		cmp.Compare(a.Value, b.Value),
		cmp.Compare(a.Step, b.Step),
		strings.Compare(a.Reason, b.Reason),
		cmp.Compare(a.N, b.N),
		cmp.Compare(a.Std, b.Std),
		cmp.Compare(a.Diverged, b.Diverged),
		cmp.Compare(a.Failed, b.Failed),
		cmp.Compare(a.Stopped, b.Stopped),
		slices.CompareFunc(a.Samples, b.Samples, func(x, y SeedValue) int {
			return cmp.Or(cmp.Compare(x.Seed, y.Seed), cmp.Compare(x.Value, y.Value))
		}),
	)
}
