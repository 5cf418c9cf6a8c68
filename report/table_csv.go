package report

// A Table as CSV: its data in long form, a record per cell or trial.

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

	"github.com/sfsweep/sfsweep/internal/status"
)

// WriteCSV writes the table's data in long form (RFC 4180, one header line), numbers with
// full precision and empty fields where a value does not apply.
//
// The tables' metric is the test perplexity at the reported iterate (x for SF-AdamW, w for
// AdamW): its column is test_ppl.
//
// C-sensitivity: one record per cell, row-major in display order, with columns
// beta1, c, test_ppl, status, step, reason, best, std, n, diverged, failed, stopped (c is
// "vanilla" or the number; test_ppl, the mean over the completed seeds, only for status ok;
// step only for diverged with a known step and for stopped, its rung; reason only for
// failed; best as the bold of the Markdown; std only where n ≥ 2; n, the completed seeds,
// empty for a value given by hand; diverged, failed and stopped count seeds).
//
// Hyperparameters: one record per trial in canonical order, with columns optimizer,
// schedule, lr, beta1, beta2, c, test_ppl, status, step, reason, best, std, n, diverged,
// failed, stopped, tied (best: the trial whose values are bold in its row; tied: one that a paired
// comparison over seeds cannot tell apart from it).
func (t *Table) WriteCSV(w io.Writer) error {
	if err := t.check(); err != nil {
		return fmt.Errorf("report: write table csv: %w", err)
	}
	cw := csv.NewWriter(w)
	outcome := func(value float64, s status.Status, step int, reason string) []string {
		v, st := "", ""
		if s == status.Completed {
			v = formatG(value)
		}
		if (s == status.Diverged || s == status.Stopped) && step > 0 {
			st = strconv.Itoa(step)
		}
		return []string{v, tableStatus(s).String(), st, reason}
	}
	spread := func(sp Spread) []string {
		std, n := "", ""
		if sp.N >= 2 {
			std = formatG(sp.Std)
		}
		if sp.N > 0 {
			n = strconv.Itoa(sp.N)
		}
		return []string{std, n, strconv.Itoa(sp.Diverged), strconv.Itoa(sp.Failed), strconv.Itoa(sp.Stopped)}
	}
	switch t.Kind {
	case TableCSensitivity:
		cw.Write([]string{"beta1", "c", "test_ppl", "status", "step", "reason", "best", "std", "n", "diverged", "failed", "stopped"})
		for _, c := range t.Cells {
			rec := append([]string{formatG(c.Row), c.Col}, outcome(c.Value, c.Status, c.Step, c.Reason)...)
			cw.Write(append(append(rec, strconv.FormatBool(c.Best)), spread(c.Spread)...))
		}
	case TableHyperparameters:
		cw.Write([]string{"optimizer", "schedule", "lr", "beta1", "beta2", "c", "test_ppl", "status", "step", "reason", "best",
			"std", "n", "diverged", "failed", "stopped", "tied"})
		best, tied := t.bestTrials()
		for i, tr := range t.Trials {
			rec := []string{tr.Optimizer, tr.Schedule, formatG(tr.LR), formatG(tr.Beta1), formatG(tr.Beta2), formatG(tr.C)}
			rec = append(rec, outcome(tr.Value, tr.Status, tr.Step, tr.Reason)...)
			rec = append(append(rec, strconv.FormatBool(best[i])), spread(tr.Spread)...)
			cw.Write(append(rec, strconv.FormatBool(tied[i])))
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("report: write table csv: %w", err)
	}
	return nil
}
