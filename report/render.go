package report

// Rendering a Table as Markdown, LaTeX (booktabs), CSV and JSON: each a pure function of
// the Table.

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/sfadamw"
)

// formatPerplexity formats a perplexity as the paper does: two decimals below 100 (67.20),
// one decimal at or above (110.8), so four significant digits from 10 to 1000. Non-finite
// values, which a validated table never holds, come out as "n/a".
func formatPerplexity(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	s := strconv.FormatFloat(v, 'f', 2, 64)
	if math.Abs(v) >= 100 || strings.HasPrefix(strings.TrimPrefix(s, "-"), "100.") {
		s = strconv.FormatFloat(v, 'f', 1, 64) // 99.996 rounds to 100.0, not 100.00
	}
	if s == "-0.00" {
		s = "0.00"
	}
	return s
}

// formatLR formats a learning rate as the paper does: 5e-4, 2e-3, 1e-2.
func formatLR(v float64) string {
	s := strconv.FormatFloat(v, 'e', -1, 64)
	mant, exp, _ := strings.Cut(s, "e")
	e, _ := strconv.Atoi(exp)
	return mant + "e" + strconv.Itoa(e)
}

// formatG formats a number in the shortest form that parses back to it: 0.95, 200.
func formatG(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// Plain text of a cell: the number (mean ± standard deviation over seeds), div@N,
// stopped (step N), failed or --.
func (c Cell) text() string {
	switch c.Status {
	case status.Completed:
		return valueText(c.Value, c.Spread, " ± ")
	case status.Diverged:
		if c.Step > 0 {
			return "div@" + strconv.Itoa(c.Step)
		}
		return "div"
	case status.Stopped:
		return stoppedText(c.Step)
	case status.Failed:
		return "failed"
	}
	return "--"
}

// valueText formats a value with its standard deviation over seeds where there are two or
// more: "18.20 ± 0.31".
func valueText(v float64, sp Spread, pm string) string {
	s := formatPerplexity(v)
	if sp.N >= 2 {
		s += pm + formatPerplexity(sp.Std)
	}
	return s
}

// stoppedText is how an outcome that a search's early stopping ended reads: "stopped
// (step N)", N its rung.
func stoppedText(step int) string {
	if step > 0 {
		return "stopped (step " + strconv.Itoa(step) + ")"
	}
	return "stopped"
}

// seedNote says how a cell's seeds differ from the table's n seeds: fewer completed, some
// diverged, stopped or failed. "" when they do not.
func seedNote(sp Spread, n int) string {
	var parts []string
	if sp.N > 0 && sp.N != n {
		parts = append(parts, "n="+strconv.Itoa(sp.N))
	}
	if sp.Diverged > 0 {
		parts = append(parts, strconv.Itoa(sp.Diverged)+" diverged")
	}
	if sp.Stopped > 0 {
		parts = append(parts, strconv.Itoa(sp.Stopped)+" stopped")
	}
	if sp.Failed > 0 {
		parts = append(parts, strconv.Itoa(sp.Failed)+" failed")
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func (c TableCell) markdown(n int) string {
	switch c.Status {
	case status.Completed:
		return bold(valueText(c.Value, c.Spread, " ± "), c.Best, "**", "**") + seedNote(c.Spread, n)
	case status.Diverged:
		if c.Step > 0 {
			return "diverged (step " + strconv.Itoa(c.Step) + ")"
		}
		return "diverged"
	}
	return c.text()
}

func (c TableCell) latex(n int) string {
	switch c.Status {
	case status.Completed:
		return bold(valueText(c.Value, c.Spread, ` $\pm$ `), c.Best, `\textbf{`, `}`) + seedNote(c.Spread, n)
	case status.Diverged:
		if c.Step > 0 {
			return `$\dagger$\,` + strconv.Itoa(c.Step)
		}
		return `$\dagger$`
	}
	return c.text()
}

// seeds returns the number of seeds of the table's values: the most seeds any cell or trial
// has an outcome for (0 when all were given by hand as single values).
func (t *Table) seeds() int {
	n := 0
	for _, c := range t.Cells {
		n = max(n, c.N+c.Diverged+c.Failed+c.Stopped)
	}
	for _, tr := range t.Trials {
		n = max(n, tr.N+tr.Diverged+tr.Failed+tr.Stopped)
	}
	return n
}

func bold(s string, on bool, open, close string) string {
	if on {
		return open + s + close
	}
	return s
}

// style holds what differs between the Markdown and the LaTeX rendering of a table.
type style struct {
	latex               bool
	boldOpen, boldClose string
	setOpen, setClose   string
	escape              func(string) string
}

var (
	markdownStyle = style{boldOpen: "**", boldClose: "**", setOpen: "{", setClose: "}", escape: escapeMarkdown}
	latexStyle    = style{latex: true, boldOpen: `\textbf{`, boldClose: `}`, setOpen: `\{`, setClose: `\}`, escape: escapeLaTeX}
)

// grid renders a table as its header row and body rows, each a row heading and its cells.
func (t *Table) grid(st style) (header []string, body [][]string) {
	switch t.Kind {
	case TableCSensitivity:
		header = []string{"β1"}
		if st.latex {
			header[0] = `\textbf{$\beta_1$}`
		}
		first := true
		for _, k := range t.Columns {
			switch {
			case k == "vanilla":
				header = append(header, "Vanilla")
			case first && st.latex:
				header = append(header, "$C="+k+"$")
			case first:
				header = append(header, "C="+k)
			default:
				header = append(header, k)
			}
			if k != "vanilla" {
				first = false
			}
		}
		n := t.seeds()
		for r, key := range t.Rows {
			line := []string{key}
			for _, c := range t.Cells[r*len(t.Columns) : (r+1)*len(t.Columns)] {
				if st.latex {
					line = append(line, c.latex(n))
				} else {
					line = append(line, c.markdown(n))
				}
			}
			body = append(body, line)
		}
	case TableHyperparameters:
		header = []string{"Optimizer", "Learning Rate", "(β1, β2)", "C (Refined SF)"}
		if st.latex {
			header = []string{"Optimizer", "Learning Rate", `$(\beta_1, \beta_2)$`, `$C$ (Refined \texttt{SF})`}
		}
		for _, g := range t.Grids {
			o := optimizers[optimizerRank(g.Optimizer)]
			name := o.text
			if st.latex {
				name = o.latex
			}
			if g.Schedule != "" {
				name += " (" + st.escape(g.Schedule) + ")"
			}
			var best *TrialSummary
			if g.Best >= 0 {
				best = &t.Trials[g.Best]
			}
			lr, lrBest := texts(g.LR, formatLR, func(v float64) bool { return best != nil && v == best.LR })
			betas, betasBest := texts(g.Betas, func(b [2]float64) string { return "(" + formatG(b[0]) + ", " + formatG(b[1]) + ")" },
				func(b [2]float64) bool { return best != nil && b == [2]float64{best.Beta1, best.Beta2} })
			cs, cBest := texts(g.C, formatG, func(v float64) bool { return best != nil && v == best.C })
			body = append(body, []string{name, st.set(lr, lrBest), st.set(betas, betasBest), st.set(cs, cBest)})
		}
	}
	return header, body
}

// texts formats each value of a grid's set and tells which is the best trial's (the last
// that isBest accepts; -1 if none).
func texts[T any](vs []T, format func(T) string, isBest func(T) bool) ([]string, int) {
	out, best := make([]string, len(vs)), -1
	for i, v := range vs {
		out[i] = format(v)
		if isBest(v) {
			best = i
		}
	}
	return out, best
}

// set renders a list of grid values as the paper does: "--" when empty, the bare value when
// single, else {a, b, c} with the best one in bold.
func (st style) set(items []string, best int) string {
	switch len(items) {
	case 0:
		return "--"
	case 1:
		return items[0]
	}
	var b strings.Builder
	b.WriteString(st.setOpen)
	for i, s := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(bold(s, i == best, st.boldOpen, st.boldClose))
	}
	b.WriteString(st.setClose)
	return b.String()
}

// note returns the caption text after the title.
func (t *Table) note(st style) string {
	s := t.kindNote(st)
	if len(t.Engines) > 1 {
		s += " Results from engines of different arithmetic (" + st.escape(strings.Join(t.Engines, ", ")) + "): cells may differ in their last digits."
	}
	return s
}

// kindNote is the caption's note of the table's kind.
func (t *Table) kindNote(st style) string {
	n := t.seeds()
	if t.Kind == TableHyperparameters {
		s := "Bold entries indicate the best-performing configuration for each optimizer."
		if n >= 2 {
			s += fmt.Sprintf(" Best: the lowest mean test perplexity over n = %d seeds.", n)
		}
		return s
	}
	c, pm := "C", "±"
	if st.latex {
		c, pm = "$C$", `$\pm$`
	}
	s := "Test perplexity under varying " + c + " values. Bold: the best value in each row; --: not run."
	if n >= 2 {
		s = fmt.Sprintf("Test perplexity under varying %s values: mean %s standard deviation over n = %d seeds "+
			"(a cell with fewer says so, and counts the seeds that diverged or failed). "+
			"Bold: the lowest mean in each row, and every cell that a paired t-test over seeds (two-sided, 5%%) "+
			"cannot tell apart from it; a cell with a diverged seed is never bold. --: not run.", c, pm, n)
		if st.latex {
			s = strings.ReplaceAll(s, "5%", `5\%`)
		}
	}
	if st.latex {
		for _, cell := range t.Cells {
			if cell.Status == status.Diverged {
				s += ` $\dagger$\,$N$: diverged at step $N$.`
				break
			}
		}
	}
	for _, cell := range t.Cells {
		if cell.Status == status.Stopped || cell.Stopped > 0 {
			s += " Stopped (step N): the search's early stopping ended it at step N; never bold."
			break
		}
	}
	return s
}

// check reports whether the table's parts fit together, so that a Table assembled or
// edited by hand fails to render instead of panicking.
func (t *Table) check() error {
	switch t.Kind {
	case TableCSensitivity:
		if len(t.Cells) != len(t.Rows)*len(t.Columns) {
			return fmt.Errorf("%d cells for %d rows × %d columns", len(t.Cells), len(t.Rows), len(t.Columns))
		}
	case TableHyperparameters:
		if len(t.Grids) != len(t.Rows) {
			return fmt.Errorf("%d grids for %d rows", len(t.Grids), len(t.Rows))
		}
		for i, g := range t.Grids {
			if optimizerRank(g.Optimizer) < 0 {
				return fmt.Errorf("grid %d: %w", i, &sfadamw.ConfigError{Field: "Optimizer", Value: strconv.Quote(g.Optimizer), Reason: "must be adamw, sfadamw or refined"})
			}
			if g.Best < -1 || g.Best >= len(t.Trials) {
				return fmt.Errorf("grid %d: best trial %d out of range [-1, %d)", i, g.Best, len(t.Trials))
			}
		}
	default:
		return &sfadamw.ConfigError{Field: "Kind", Value: strconv.Quote(string(t.Kind)), Reason: "unknown table kind"}
	}
	return nil
}

// WriteMarkdown writes the table as a GitHub pipe table, the title in bold above it and
// the caption note below. Best values are **bold**.
func (t *Table) WriteMarkdown(w io.Writer) error {
	if err := t.check(); err != nil {
		return fmt.Errorf("report: write table markdown: %w", err)
	}
	header, body := t.grid(markdownStyle)
	var b strings.Builder
	if t.Title != "" {
		b.WriteString("**" + escapeMarkdown(t.Title) + "**\n\n")
	}
	writePipeRow(&b, header)
	align := make([]string, len(header))
	for i := range align {
		align[i] = ":---:"
	}
	if t.Kind == TableHyperparameters {
		align[0] = "---:"
		for i := 1; i < len(align); i++ {
			align[i] = ":---"
		}
	}
	writePipeRow(&b, align)
	for _, row := range body {
		writePipeRow(&b, row)
	}
	b.WriteString("\n" + t.note(markdownStyle) + "\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("report: write table markdown: %w", err)
	}
	return nil
}

func writePipeRow(b *strings.Builder, cells []string) {
	b.WriteString("|")
	for _, c := range cells {
		b.WriteString(" " + c + " |")
	}
	b.WriteString("\n")
}

// WriteLaTeX writes the table as a booktabs table environment like the paper's source:
// tabular, \toprule, \midrule, \bottomrule, best values in \textbf{}, the title in bold
// leading the caption, and the label.
func (t *Table) WriteLaTeX(w io.Writer) error {
	if err := t.check(); err != nil {
		return fmt.Errorf("report: write table latex: %w", err)
	}
	header, body := t.grid(latexStyle)
	var b strings.Builder
	placement, spec := "[h]", "@{}c|"+strings.Repeat("c", len(t.Columns))+"@{}"
	if t.Kind == TableHyperparameters {
		placement, spec = "[!htp]", "@{}r|lll@{}"
	}
	b.WriteString(`\begin{table}` + placement + "\n")
	b.WriteString("    \\centering\n    \\small\n")
	b.WriteString(`    \begin{tabular}{` + spec + "}\n")
	b.WriteString("        \\toprule\n")
	b.WriteString("        " + strings.Join(header, " & ") + ` \\` + "\n")
	b.WriteString("        \\midrule\n")
	for _, row := range body {
		b.WriteString("        " + strings.Join(row, " & ") + ` \\` + "\n")
	}
	b.WriteString("        \\bottomrule\n")
	b.WriteString("    \\end{tabular}\n")
	b.WriteString("    \\vspace{5pt}\n")
	caption := t.note(latexStyle)
	if t.Title != "" {
		caption = `\textbf{` + escapeLaTeX(t.Title) + `} ` + caption
	}
	b.WriteString(`    \caption{` + caption + "}\n")
	if t.Label != "" {
		b.WriteString(`    \label{` + t.Label + "}\n")
	}
	b.WriteString(`\end{table}` + "\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("report: write table latex: %w", err)
	}
	return nil
}

// tableStatus is a status as the tables' CSV and JSON write it: status.Completed as "ok",
// the others as they are. The formats are published and golden-tested (testdata/tables),
// and they wrote "ok" for a finished cell before the statuses had one vocabulary, so they
// still do.
type tableStatus status.Status

// String returns "ok" for status.Completed, the status itself otherwise.
func (s tableStatus) String() string {
	if status.Status(s) == status.Completed {
		return "ok"
	}
	return string(s)
}

// MarshalText encodes the status as String spells it, and refuses an unknown status.
func (s tableStatus) MarshalText() ([]byte, error) {
	if !slices.Contains(statusOrder, status.Status(s)) {
		return nil, fmt.Errorf("report: marshal status: %w", statusError(status.Status(s)))
	}
	return []byte(s.String()), nil
}

// WriteCSV writes the table's data in long form (RFC 4180, one header line), numbers with
// full precision and empty fields where a value does not apply.
//
// C-sensitivity: one record per cell, row-major in display order, with columns
// beta1, c, value, status, step, reason, best, std, n, diverged, failed, stopped (c is
// "vanilla" or the number; value, the mean over the completed seeds, only for status ok;
// step only for diverged with a known step and for stopped, its rung; reason only for
// failed; best as the bold of the Markdown; std only where n ≥ 2; n, the completed seeds,
// empty for a value given by hand; diverged, failed and stopped count seeds).
//
// Hyperparameters: one record per trial in canonical order, with columns optimizer,
// schedule, lr, beta1, beta2, c, value, status, step, reason, best, std, n, diverged,
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
		cw.Write([]string{"beta1", "c", "value", "status", "step", "reason", "best", "std", "n", "diverged", "failed", "stopped"})
		for _, c := range t.Cells {
			rec := append([]string{formatG(c.Row), c.Col}, outcome(c.Value, c.Status, c.Step, c.Reason)...)
			cw.Write(append(append(rec, strconv.FormatBool(c.Best)), spread(c.Spread)...))
		}
	case TableHyperparameters:
		cw.Write([]string{"optimizer", "schedule", "lr", "beta1", "beta2", "c", "value", "status", "step", "reason", "best",
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

// bestTrials tells which trials are their grid's best, and which tie with it.
func (t *Table) bestTrials() (best, tied []bool) {
	best, tied = make([]bool, len(t.Trials)), make([]bool, len(t.Trials))
	for _, g := range t.Grids {
		if g.Best >= 0 {
			best[g.Best] = true
		}
		for _, i := range g.Ties {
			tied[i] = true
		}
	}
	return best, tied
}

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

// Write writes the table in the named format: FormatMarkdown, FormatCSV, FormatLaTeX or
// FormatJSON.
func (t *Table) Write(w io.Writer, format string) error {
	switch format {
	case FormatMarkdown:
		return t.WriteMarkdown(w)
	case FormatCSV:
		return t.WriteCSV(w)
	case FormatLaTeX:
		return t.WriteLaTeX(w)
	case FormatJSON:
		return t.WriteJSON(w)
	}
	return fmt.Errorf("report: write table: %w",
		&sfadamw.ConfigError{Field: "format", Value: strconv.Quote(format), Reason: "must be markdown, csv, latex or json"})
}

// escapeMarkdown escapes the characters that would end a pipe-table cell or start emphasis
// or code.
func escapeMarkdown(s string) string {
	return markdownEscaper.Replace(s)
}

var markdownEscaper = strings.NewReplacer(`\`, `\\`, `|`, `\|`, `*`, `\*`, `_`, `\_`, "`", "\\`")

// escapeLaTeX escapes LaTeX's special characters in plain text. Other Unicode (β) is
// written as is, for engines with Unicode input (pdfLaTeX with inputenc, XeLaTeX, LuaLaTeX).
func escapeLaTeX(s string) string {
	return latexEscaper.Replace(s)
}

var latexEscaper = strings.NewReplacer(
	`\`, `\textbackslash{}`, `&`, `\&`, `%`, `\%`, `$`, `\$`, `#`, `\#`, `_`, `\_`,
	`{`, `\{`, `}`, `\}`, `~`, `\textasciitilde{}`, `^`, `\textasciicircum{}`,
)
