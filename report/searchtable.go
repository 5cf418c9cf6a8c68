package report

// The table of a search: its best configuration and metric, then every configuration it
// tried, ranked, with how far each got. Built from the search's state (search.State).

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sfsweep/sfsweep/search"
	"github.com/sfsweep/sfsweep/sweeps"
)

// SearchMarkdownRows bounds the ranked rows of a search table's Markdown and LaTeX: a
// search of thousands of configurations reads through its best; CSV and JSON hold all.
const SearchMarkdownRows = 100

// SearchRow is one configuration of a search, as its table shows it.
type SearchRow struct {
	Rank      int                `json:"rank"`  // 1 for the best
	Index     int                `json:"index"` // the candidate's index: order of suggestion
	Optimizer string             `json:"optimizer"`
	Params    map[string]float64 `json:"params"` // by SearchTable.Params
	// Text is how a parameter's value reads where it is not its number: a choice among a
	// program parameter's strings, by name (sweeps.Manifest.ValueText).
	Text     map[string]string `json:"text,omitempty"`
	Status   search.Status     `json:"status"`
	Step     int               `json:"step,omitempty"`          // stopped, diverged or failed: the step it ended at
	Metric   *float64          `json:"metric,omitempty"`        // completed: the search's metric (mean over seeds)
	Rung     int               `json:"rung,omitempty"`          // the last rung it reached with a finite value
	RungLoss *float64          `json:"rung_val_loss,omitempty"` // its value there, of SearchTable.RungMetric
}

// SearchTable is a search's configurations, ranked: completed by their metric, then
// stopped (the later the rung, the higher; then by the loss there), diverged, failed, and
// those not finished; ties by candidate index.
type SearchTable struct {
	Title  string `json:"title"`
	Metric string `json:"metric"` // the metric's name (Manifest.MetricName)
	// RungMetric is what a rung's value is (Manifest.RungMetric).
	RungMetric string      `json:"rung_metric"`
	Params     []string    `json:"params"` // the searched parameters, in the order of the grids' Dims
	Rows       []SearchRow `json:"rows"`
}

// Best is the best configuration: the completed one of the lowest metric; nil if none.
func (t *SearchTable) Best() *SearchRow {
	if len(t.Rows) > 0 && t.Rows[0].Metric != nil {
		return &t.Rows[0]
	}
	return nil
}

// NewSearchTable ranks the configurations of search state st, of manifest m.
func NewSearchTable(m *sweeps.Manifest, st *search.State) *SearchTable {
	t := &SearchTable{Title: m.Name + ": search", Metric: m.MetricName(), RungMetric: m.RungMetric()}
	for gi := range m.Optimizers {
		for _, d := range m.Dims(gi) {
			if !slices.Contains(t.Params, d.Name) {
				t.Params = append(t.Params, d.Name)
			}
		}
	}
	for _, c := range st.Candidates {
		g := m.Optimizers[c.Grid]
		r := SearchRow{Index: c.Index, Optimizer: cmp.Or(g.Label, g.Name), Params: map[string]float64{}, Status: c.Status}
		for k, v := range c.Point {
			r.Params[k] = v
			if text := m.ValueText(k, v); text != "" {
				if r.Text == nil {
					r.Text = map[string]string{}
				}
				r.Text[k] = text
			}
		}
		if c.Status == search.StatusStopped || c.Status == search.StatusDiverged || c.Status == search.StatusFailed {
			r.Step = c.StoppedAt
		}
		if c.Status == search.StatusCompleted && c.Final != nil && finiteValue(*c.Final) {
			v := *c.Final
			r.Metric = &v
		}
		for step, v := range c.Values {
			// a rung holds what the search ranks it by (RungMetric), but the end of a
			// search by a named metric holds the validation loss: the metric is its own
			// column there
			if finiteValue(v) && step > r.Rung && (step < m.Steps || !m.NamedMetric()) {
				v *= m.MetricSign()
				r.Rung, r.RungLoss = step, &v
			}
		}
		t.Rows = append(t.Rows, r)
	}
	slices.SortFunc(t.Rows, compareSearchRows)
	for i := range t.Rows {
		t.Rows[i].Rank = i + 1
	}
	return t
}

func finiteValue(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// searchStatusOrder orders the statuses of a ranking.
var searchStatusOrder = []search.Status{search.StatusCompleted, search.StatusStopped, search.StatusDiverged, search.StatusFailed,
	search.StatusPaused, search.StatusRunning, search.StatusQueued}

func compareSearchRows(a, b SearchRow) int {
	ka, kb := slices.Index(searchStatusOrder, a.Status), slices.Index(searchStatusOrder, b.Status)
	if ka < 0 {
		ka = len(searchStatusOrder)
	}
	if kb < 0 {
		kb = len(searchStatusOrder)
	}
	if c := cmp.Compare(ka, kb); c != 0 {
		return c
	}
	val := func(p *float64) float64 {
		if p == nil {
			return math.Inf(1)
		}
		return *p
	}
	switch a.Status {
	case search.StatusCompleted:
		if c := cmp.Compare(val(a.Metric), val(b.Metric)); c != 0 {
			return c
		}
	case search.StatusStopped:
		if c := cmp.Or(cmp.Compare(b.Rung, a.Rung), cmp.Compare(val(a.RungLoss), val(b.RungLoss))); c != 0 {
			return c
		}
	}
	return cmp.Compare(a.Index, b.Index)
}

// statusText is a row's status as the table reads it: completed, stopped (step N), ...
func (r SearchRow) statusText() string {
	if r.Status == search.StatusStopped {
		return stoppedText(r.Step)
	}
	if r.Status == search.StatusDiverged && r.Step > 0 {
		return "diverged (step " + strconv.Itoa(r.Step) + ")"
	}
	return string(r.Status)
}

// cells are a row's fields as text: rank, optimizer, the parameters, status, metric, the
// last rung before the end and the metric there.
func (t *SearchTable) cells(r SearchRow) []string {
	out := []string{strconv.Itoa(r.Rank), r.Optimizer}
	for _, p := range t.Params {
		v, ok := r.Params[p]
		text, named := r.Text[p]
		switch {
		case !ok:
			out = append(out, "")
		case named:
			out = append(out, text)
		case p == sweeps.ParamLR:
			out = append(out, formatLR(v))
		default:
			out = append(out, formatG(v))
		}
	}
	num := func(p *float64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatFloat(*p, 'f', 4, 64)
	}
	rung := ""
	if r.RungLoss != nil {
		rung = strconv.Itoa(r.Rung)
	}
	return append(out, r.statusText(), num(r.Metric), rung, num(r.RungLoss))
}

func (t *SearchTable) header() []string {
	h := append([]string{"rank", "optimizer"}, t.Params...)
	return append(h, "status", t.Metric, "rung", t.RungMetric+" at rung")
}

// Write writes the table in the named format, as Table.Write.
func (t *SearchTable) Write(w io.Writer, format string) error {
	var err error
	switch format {
	case FormatMarkdown:
		err = t.writeText(w, false)
	case FormatLaTeX:
		err = t.writeText(w, true)
	case FormatCSV:
		err = t.writeCSV(w)
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		doc := *t
		doc.Params, doc.Rows = nonNil(doc.Params), nonNil(doc.Rows)
		err = enc.Encode(doc)
	default:
		return fmt.Errorf("report: write search table: unknown format %q", format)
	}
	if err != nil {
		return fmt.Errorf("report: write search table %s: %w", format, err)
	}
	return nil
}

// writeText writes the best configuration, then the first SearchMarkdownRows ranked rows,
// as a Markdown pipe table or a LaTeX booktabs tabular.
func (t *SearchTable) writeText(w io.Writer, latex bool) error {
	esc := escapeMarkdown
	if latex {
		esc = escapeLaTeX
	}
	var b strings.Builder
	best := "no configuration has completed yet."
	if r := t.Best(); r != nil {
		var ps []string
		for i, p := range t.Params {
			if v := t.cells(*r)[2+i]; v != "" {
				ps = append(ps, p+" = "+v)
			}
		}
		best = fmt.Sprintf("%s %s, %s = %s.", r.Optimizer, strings.Join(ps, ", "), t.Metric, strconv.FormatFloat(*r.Metric, 'f', 4, 64))
	}
	rows := t.Rows[:min(len(t.Rows), SearchMarkdownRows)]
	more := ""
	if n := len(t.Rows) - len(rows); n > 0 {
		more = fmt.Sprintf(" The first %d of %d configurations; %d more in the CSV and JSON.", len(rows), len(t.Rows), n)
	}
	note := fmt.Sprintf("Best: %s Ranked by %s (completed), then stopped by the rung they reached and their %s there.%s", best, t.Metric, t.RungMetric, more)
	header := t.header()
	if !latex {
		b.WriteString("**" + esc(t.Title) + "**\n\n")
		writePipeRow(&b, escAll(header, esc))
		writePipeRow(&b, repeat("---:", len(header)))
		for _, r := range rows {
			writePipeRow(&b, escAll(t.cells(r), esc))
		}
		b.WriteString("\n" + esc(note) + "\n")
	} else {
		b.WriteString("\\begin{table}[!htp]\n    \\centering\n    \\small\n")
		b.WriteString("    \\begin{tabular}{@{}" + strings.Repeat("r", len(header)) + "@{}}\n        \\toprule\n")
		b.WriteString("        " + strings.Join(escAll(header, esc), " & ") + " \\\\\n        \\midrule\n")
		for _, r := range rows {
			b.WriteString("        " + strings.Join(escAll(t.cells(r), esc), " & ") + " \\\\\n")
		}
		b.WriteString("        \\bottomrule\n    \\end{tabular}\n")
		b.WriteString("    \\caption{\\textbf{" + esc(t.Title) + "} " + esc(note) + "}\n\\end{table}\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func escAll(ss []string, esc func(string) string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = esc(s)
	}
	return out
}

// writeCSV writes every row: rank, index, optimizer, the parameters, status, step, the
// metric, rung and val_loss (empty where they do not apply), numbers in full precision.
func (t *SearchTable) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write(append(append([]string{"rank", "index", "optimizer"}, t.Params...), "status", "step", t.Metric, "rung", t.RungMetric))
	num := func(p *float64) string {
		if p == nil {
			return ""
		}
		return formatG(*p)
	}
	for _, r := range t.Rows {
		rec := []string{strconv.Itoa(r.Rank), strconv.Itoa(r.Index), r.Optimizer}
		for _, p := range t.Params {
			v, ok := r.Params[p]
			if text, named := r.Text[p]; named {
				rec = append(rec, text)
				continue
			}
			rec = append(rec, map[bool]string{true: formatG(v)}[ok])
		}
		step, rung := "", ""
		if r.Step > 0 {
			step = strconv.Itoa(r.Step)
		}
		if r.RungLoss != nil {
			rung = strconv.Itoa(r.Rung)
		}
		cw.Write(append(rec, string(r.Status), step, num(r.Metric), rung, num(r.RungLoss)))
	}
	cw.Flush()
	return cw.Error()
}
