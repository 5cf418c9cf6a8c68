package report

// Rendering a Table: what its formats share (numbers as the paper writes them, the grid
// that Markdown and LaTeX lay out, the checks before writing, the statuses of CSV and
// JSON) and Write. Each format has its file: table_md.go, table_tex.go, table_csv.go,
// table_json.go; each is a pure function of the Table.

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/internal/status"
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
		s := "Bold entries indicate the best-performing configuration for each optimizer: the lowest validation loss (chosen on validation; test perplexity is only reported)."
		if n >= 2 {
			s += fmt.Sprintf(" Best: the lowest mean validation loss over n = %d seeds.", n)
		}
		return s
	}
	c, pm := "C", "±"
	if st.latex {
		c, pm = "$C$", `$\pm$`
	}
	s := "Test perplexity under varying " + c + " values. Bold: the best in each row by validation loss (the test set is only reported); --: not run."
	if n >= 2 {
		s = fmt.Sprintf("Test perplexity under varying %s values: mean %s standard deviation over n = %d seeds "+
			"(a cell with fewer says so, and counts the seeds that diverged or failed). "+
			"Bold: the lowest mean validation loss in each row, and every cell that a paired t-test over seeds (two-sided, 5%%) "+
			"cannot tell apart from it, chosen on validation while the test set is only reported; a cell with a diverged seed is never bold. --: not run.", c, pm, n)
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
				return fmt.Errorf("grid %d: %w", i, &fielderr.Error{Field: "Optimizer", Value: strconv.Quote(g.Optimizer), Reason: "must be adamw, sfadamw or refined"})
			}
			if g.Best < -1 || g.Best >= len(t.Trials) {
				return fmt.Errorf("grid %d: best trial %d out of range [-1, %d)", i, g.Best, len(t.Trials))
			}
		}
	default:
		return &fielderr.Error{Field: "Kind", Value: strconv.Quote(string(t.Kind)), Reason: "unknown table kind"}
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
		&fielderr.Error{Field: "format", Value: strconv.Quote(format), Reason: "must be markdown, csv, latex or json"})
}
