package report

// A Table as JSON: its cells or trials with their spread over seeds, and its notes.

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/sfsweep/sfsweep/internal/status"
)

// spreadJSON is a Spread as the JSON tables write it: std where n ≥ 2, n where known,
// counts where not zero, the seeds' values where there are two or more.
type spreadJSON struct {
	Std      *float64    `json:"std,omitempty"`
	N        int         `json:"n,omitempty"`
	Diverged int         `json:"diverged,omitempty"`
	Failed   int         `json:"failed,omitempty"`
	Stopped  int         `json:"stopped,omitempty"`
	Samples  []SeedValue `json:"seeds,omitempty"`
}

func spreadOf(sp Spread) spreadJSON {
	j := spreadJSON{N: sp.N, Diverged: sp.Diverged, Failed: sp.Failed, Stopped: sp.Stopped}
	if sp.N >= 2 {
		j.Std, j.Samples = &sp.Std, sp.Samples
	}
	return j
}

type tableJSON struct {
	Kind    TableKind   `json:"kind"`
	Title   string      `json:"title"`
	Label   string      `json:"label"`
	Rows    []string    `json:"rows"`
	Columns []string    `json:"columns"`
	Cells   []cellJSON  `json:"cells,omitempty"`
	Grids   []gridJSON  `json:"grids,omitempty"`
	Trials  []trialJSON `json:"trials,omitempty"`
	Engines []string    `json:"engines,omitempty"` // the arithmetics, when they differ
}

type cellJSON struct {
	Row    float64     `json:"beta1"`
	Col    string      `json:"c"`
	Text   string      `json:"text"`
	Value  *float64    `json:"value,omitempty"`
	Status tableStatus `json:"status"`
	Step   int         `json:"step,omitempty"`
	Reason string      `json:"reason,omitempty"`
	Best   bool        `json:"best"`
	spreadJSON
}

type gridJSON struct {
	Row       string       `json:"row"`
	Optimizer string       `json:"optimizer"`
	Schedule  string       `json:"schedule"`
	LR        []float64    `json:"lr"`
	Betas     [][2]float64 `json:"betas"`
	C         []float64    `json:"c"`
	Best      *int         `json:"best"`
	Ties      []int        `json:"ties,omitempty"`
}

type trialJSON struct {
	Optimizer string      `json:"optimizer"`
	Schedule  string      `json:"schedule"`
	LR        float64     `json:"lr"`
	Beta1     float64     `json:"beta1"`
	Beta2     float64     `json:"beta2"`
	C         float64     `json:"c"`
	Value     *float64    `json:"value,omitempty"`
	Status    tableStatus `json:"status"`
	Step      int         `json:"step,omitempty"`
	Reason    string      `json:"reason,omitempty"`
	Best      bool        `json:"best"`
	Tied      bool        `json:"tied,omitempty"`
	spreadJSON
}

// WriteJSON writes the table as indented JSON (two spaces): kind, title, label, rows and
// columns (the keys), then for a C-sensitivity table "cells" (row-major; beta1, c, text as
// in plain text, value only for status ok, status, step, reason, best, and over seeds std,
// n, diverged, failed, stopped and "seeds", each seed's value), and for a hyperparameter table
// "grids" (per row: lr, betas, c lists, best, the index of the best trial or null, and
// ties, those that tie with it) and "trials" (as in WriteCSV).
func (t *Table) WriteJSON(w io.Writer) error {
	if err := t.check(); err != nil {
		return fmt.Errorf("report: write table json: %w", err)
	}
	doc := tableJSON{Kind: t.Kind, Title: t.Title, Label: t.Label, Rows: t.Rows, Columns: t.Columns, Engines: t.Engines}
	for _, c := range t.Cells {
		j := cellJSON{Row: c.Row, Col: c.Col, Text: c.text(), Status: tableStatus(c.Status), Step: c.Step, Reason: c.Reason, Best: c.Best,
			spreadJSON: spreadOf(c.Spread)}
		if c.Status == status.Completed {
			j.Value = &c.Value
		}
		doc.Cells = append(doc.Cells, j)
	}
	for i, g := range t.Grids {
		j := gridJSON{Row: t.Rows[i], Optimizer: g.Optimizer, Schedule: g.Schedule, LR: nonNil(g.LR), Betas: nonNil(g.Betas), C: nonNil(g.C), Ties: g.Ties}
		if g.Best >= 0 {
			j.Best = &g.Best
		}
		doc.Grids = append(doc.Grids, j)
	}
	best, tied := t.bestTrials()
	for i, tr := range t.Trials {
		j := trialJSON{Optimizer: tr.Optimizer, Schedule: tr.Schedule, LR: tr.LR, Beta1: tr.Beta1, Beta2: tr.Beta2, C: tr.C,
			Status: tableStatus(tr.Status), Step: tr.Step, Reason: tr.Reason, Best: best[i], Tied: tied[i], spreadJSON: spreadOf(tr.Spread)}
		if tr.Status == status.Completed {
			j.Value = &tr.Value
		}
		doc.Trials = append(doc.Trials, j)
	}
	doc.Rows, doc.Columns = nonNil(doc.Rows), nonNil(doc.Columns)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("report: write table json: %w", err)
	}
	return nil
}

func nonNil[S ~[]E, E any](s S) S {
	if s == nil {
		return S{}
	}
	return s
}
