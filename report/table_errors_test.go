package report

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/internal/status"
)

// TestTableErrors checks that bad input is refused with the field, the value and the reason.
func TestTableErrors(t *testing.T) {
	ok := Cell{Row: 0.9, Col: "5", Value: 24, Status: status.Completed}
	trial := TrialSummary{Optimizer: "adamw", LR: 1e-3, Beta1: 0.9, Beta2: 0.95, Value: 30, Status: status.Completed}
	with := func(f func(*TrialSummary)) []TrialSummary {
		tr := trial
		f(&tr)
		return []TrialSummary{trial, tr}
	}
	for _, tc := range []struct {
		name  string
		build func() (*Table, error)
		field string
		msg   string
	}{
		{"cell NaN ok", func() (*Table, error) {
			return CSensitivityTable("", "", []Cell{{Row: 0.9, Col: "5", Value: math.NaN(), Status: status.Completed}}, nil, nil)
		}, "Value", "Value = NaN: must be finite"},
		{"cell beta1", func() (*Table, error) {
			return CSensitivityTable("", "", []Cell{{Row: 1, Col: "5", Value: 3, Status: status.Completed}}, nil, nil)
		}, "Row", "cells[0]: Row = 1: must be in [0, 1)"},
		{"cell col", func() (*Table, error) {
			return CSensitivityTable("", "", []Cell{ok, {Row: 0.9, Col: "ten", Value: 3, Status: status.Completed}}, nil, nil)
		}, "Col", `cells[1]: Col = "ten"`},
		{"zero C", func() (*Table, error) {
			return CSensitivityTable("", "", []Cell{{Row: 0.9, Col: "0", Value: 3, Status: status.Completed}}, nil, nil)
		}, "Col", "positive finite C"},
		{"cell step", func() (*Table, error) {
			return CSensitivityTable("", "", []Cell{{Row: 0.9, Col: "5", Status: status.Diverged, Step: -3}}, nil, nil)
		}, "Step", "Step = -3"},
		{"cell status", func() (*Table, error) {
			return CSensitivityTable("", "", []Cell{{Row: 0.9, Col: "5", Status: "done"}}, nil, nil)
		}, "Status", `Status = "done": unknown status`},
		{"cell without status", func() (*Table, error) {
			return CSensitivityTable("", "", []Cell{{Row: 0.9, Col: "5", Value: 24}}, nil, nil)
		}, "Status", `Status = "": unknown status`},
		{"duplicate cell", func() (*Table, error) {
			return CSensitivityTable("", "", []Cell{ok, {Row: 0.9, Col: "5.0", Value: 25, Status: status.Completed}}, nil, nil)
		}, "Col", "a second result for β1 = 0.9, C = 5"},
		{"row not given", func() (*Table, error) {
			return CSensitivityTable("", "", []Cell{ok}, []float64{0.5}, []string{"5"})
		}, "Row", "Row = 0.9: not among the table's rows"},
		{"col not given", func() (*Table, error) {
			return CSensitivityTable("", "", []Cell{ok}, []float64{0.9}, []string{"vanilla"})
		}, "Col", `Col = "5": not among the table's columns`},
		{"duplicate row", func() (*Table, error) {
			return CSensitivityTable("", "", []Cell{ok}, []float64{0.9, 0.9}, []string{"5"})
		}, "rows", "rows[1]: rows = 0.9: given twice"},
		{"duplicate col", func() (*Table, error) {
			return CSensitivityTable("", "", []Cell{ok}, []float64{0.9}, []string{"5", "5e0"})
		}, "cols", `cols[1]: cols = "5e0": given twice`},
		{"bad row", func() (*Table, error) {
			return CSensitivityTable("", "", nil, []float64{math.NaN()}, []string{"5"})
		}, "Row", "rows[0]: Row = NaN"},
		{"label", func() (*Table, error) {
			return CSensitivityTable("", "tab:a}b", []Cell{ok}, nil, nil)
		}, "label", `label = "tab:a}b"`},
		{"title", func() (*Table, error) {
			return CSensitivityTable("two\nlines", "", []Cell{ok}, nil, nil)
		}, "title", "must be one line"},
		{"optimizer", func() (*Table, error) {
			return HyperparameterTable("", "", with(func(tr *TrialSummary) { tr.Optimizer = "sgd" }))
		}, "Optimizer", `trials[1]: Optimizer = "sgd": must be adamw, sfadamw or refined`},
		{"lr", func() (*Table, error) {
			return HyperparameterTable("", "", with(func(tr *TrialSummary) { tr.LR = 0 }))
		}, "LR", "LR = 0: must be positive"},
		{"beta2", func() (*Table, error) {
			return HyperparameterTable("", "", with(func(tr *TrialSummary) { tr.Beta2 = -0.1 }))
		}, "Beta2", "Beta2 = -0.1"},
		{"C for adamw", func() (*Table, error) {
			return HyperparameterTable("", "", with(func(tr *TrialSummary) { tr.C = 50 }))
		}, "C", "C = 50: must be 0 for adamw"},
		{"refined without C", func() (*Table, error) {
			return HyperparameterTable("", "", with(func(tr *TrialSummary) { tr.Optimizer = "refined" }))
		}, "C", "C = 0: must be positive"},
		{"trial Inf ok", func() (*Table, error) {
			return HyperparameterTable("", "", with(func(tr *TrialSummary) { tr.Value = math.Inf(1) }))
		}, "Value", "Value = +Inf"},
		{"schedule", func() (*Table, error) {
			return HyperparameterTable("", "", with(func(tr *TrialSummary) { tr.Schedule = "a\tb" }))
		}, "Schedule", "must be one line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab, err := tc.build()
			var ce *fielderr.Error
			if err == nil || !errors.As(err, &ce) {
				t.Fatalf("got table %v, error %v; want a *fielderr.Error", tab, err)
			}
			if ce.Field != tc.field || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q (field %s), want field %s and %q", err, ce.Field, tc.field, tc.msg)
			}
		})
	}
	if _, err := CSensitivityTable("", "", nil, nil, nil); err == nil {
		t.Error("empty table accepted")
	}
	if _, err := HyperparameterTable("", "", nil); err == nil {
		t.Error("hyperparameter table without trials accepted")
	}
	tab, err := CSensitivityTable("", "", []Cell{ok}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tab.Write(new(bytes.Buffer), "html"); err == nil || !strings.Contains(err.Error(), `format = "html"`) {
		t.Errorf("unknown format: error %v", err)
	}
	tab.Cells = tab.Cells[:0]
	if err := tab.WriteMarkdown(new(bytes.Buffer)); err == nil {
		t.Error("a table whose cells do not fit its rows and columns rendered")
	}
}

// TestHyperparameterRows checks the rows of a hyperparameter table built from a few trials:
// one row per optimizer and schedule in the paper's order, sorted grids without repeats,
// the best trial's values bold only where the grid has a choice, and a row with no
// finished trial without bold.
func TestHyperparameterRows(t *testing.T) {
	trials := []TrialSummary{
		{Optimizer: "refined", LR: 2e-3, Beta1: 0.95, Beta2: 0.99, C: 500, Value: 24.8, Status: status.Completed},
		{Optimizer: "refined", LR: 2e-3, Beta1: 0.95, Beta2: 0.99, C: 50, Value: 23.9, Status: status.Completed},
		{Optimizer: "refined", LR: 2e-3, Beta1: 0.95, Beta2: 0.99, C: 200, Value: 24.1, Status: status.Completed},
		{Optimizer: "adamw", Schedule: "Cosine LR", LR: 1e-3, Beta1: 0.9, Beta2: 0.95, Value: 25.0, Status: status.Completed},
		{Optimizer: "adamw", Schedule: "Cosine LR", LR: 5e-4, Beta1: 0.9, Beta2: 0.95, Value: 24.0, Status: status.Completed},
		{Optimizer: "adamw", Schedule: "Cosine LR", LR: 1e-3, Beta1: 0.95, Beta2: 0.99, Status: status.Diverged, Step: 40},
		{Optimizer: "adamw", LR: 1e-3, Beta1: 0.9, Beta2: 0.95, Value: 26.0, Status: status.Completed},
		{Optimizer: "sfadamw", LR: 2e-3, Beta1: 0.9, Beta2: 0.99, Status: status.Failed, Reason: "oom"},
		{Optimizer: "sfadamw", LR: 5e-3, Beta1: 0.98, Beta2: 0.99, Status: status.Diverged, Step: 10},
		{Optimizer: "sfadamw", LR: 1e-2, Beta1: 0.98, Beta2: 0.99, Status: status.Missing},
	}
	for i, tr := range trials { // a validation loss that orders as the value does
		trials[i].Val = Seeds{Mean: tr.Value, Status: tr.Status}
	}
	tab, err := HyperparameterTable("Mixed", "tab:mixed", trials)
	if err != nil {
		t.Fatal(err)
	}
	if want := "[adamw adamw/Cosine LR sfadamw refined]"; fmt.Sprint(tab.Rows) != want {
		t.Errorf("rows %v, want %s", tab.Rows, want)
	}
	_, body := markdownBody(t, render(t, tab, FormatMarkdown))
	want := [][]string{
		{"AdamW", "1e-3", "(0.9, 0.95)", "--"},
		{"AdamW (Cosine LR)", "{**5e-4**, 1e-3}", "{**(0.9, 0.95)**, (0.95, 0.99)}", "--"},
		{"SF-AdamW", "{2e-3, 5e-3}", "{(0.9, 0.99), (0.98, 0.99)}", "--"},
		{"Refined SF-AdamW", "2e-3", "(0.95, 0.99)", "{**50**, 200, 500}"},
	}
	if fmt.Sprintf("%q", body) != fmt.Sprintf("%q", want) {
		t.Errorf("Markdown body\n%q\nwant\n%q", body, want)
	}
	if tab.Grids[2].Best != -1 {
		t.Errorf("sfadamw row with no finished trial has best %d", tab.Grids[2].Best)
	}
	recs, err := csv.NewReader(strings.NewReader(render(t, tab, FormatCSV))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(trials)+1 {
		t.Fatalf("%d CSV records, want %d", len(recs), len(trials)+1)
	}
	var bests []string
	for _, r := range recs[1:] {
		if r[10] == "true" {
			bests = append(bests, strings.Join(r[:7], ","))
		}
	}
	wantBests := "[adamw,,0.001,0.9,0.95,0,26 adamw,Cosine LR,0.0005,0.9,0.95,0,24 refined,,0.002,0.95,0.99,50,23.9]"
	if fmt.Sprint(bests) != wantBests {
		t.Errorf("best CSV records %v, want %s", bests, wantBests)
	}
	tex := render(t, tab, FormatLaTeX)
	for _, s := range []string{
		`        \texttt{AdamW} (Cosine LR) & \{\textbf{5e-4}, 1e-3\} & \{\textbf{(0.9, 0.95)}, (0.95, 0.99)\} & -- \\`,
		`        Refined \texttt{SF-AdamW} & 2e-3 & (0.95, 0.99) & \{\textbf{50}, 200, 500\} \\`,
	} {
		if !strings.Contains(tex, s) {
			t.Errorf("LaTeX lacks %q:\n%s", s, tex)
		}
	}
}
