package report

// The table of a program trainer's own grid (parameters:): each configuration of its
// parameters, with its metrics as the mean ± sd over its seeds.

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sfsweep/sfsweep/internal/stats"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/program"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/trial"
)

// ParamTable is a program trainer's grid of parameters: a row per configuration (its
// trials over the seeds), with each metric's mean and sample standard deviation over the
// seeds that completed.
type ParamTable struct {
	Title   string     `json:"title"`
	Params  []string   `json:"params"`  // the parameters that take more than one value, by name
	Metrics []string   `json:"metrics"` // val_loss, test_ppl where they are reported, then the program's named metrics
	Rows    []ParamRow `json:"rows"`
}

// ParamRow is one configuration of a ParamTable.
type ParamRow struct {
	Values    map[string]string        `json:"values"` // each parameter's value, as the program is passed it
	Seeds     int                      `json:"seeds"`
	Completed int                      `json:"completed"`
	Diverged  int                      `json:"diverged,omitempty"`
	Failed    int                      `json:"failed,omitempty"`
	Metrics   map[string]stats.Summary `json:"metrics"` // by ParamTable.Metrics, over the completed seeds
}

// NewParamTable is the table of manifest m's program grid from its trials' outcomes; nil
// where m is not a grid of a program's own parameters (none, optimizer grids beside them,
// or a search, whose table is the search's).
func NewParamTable(m *sweeps.Manifest, trials []sweeps.Trial, outcomes map[string]trial.Outcome) *ParamTable {
	if m.Trainer == nil || len(m.Parameters) == 0 || m.Searched() || (len(m.Optimizers) > 0 && m.Optimizers[0].Name != "") {
		return nil
	}
	t := &ParamTable{Title: m.Name + ": parameters"}
	for _, p := range m.Parameters {
		if len(p.Values) > 1 {
			t.Params = append(t.Params, p.Name)
		}
	}
	type group struct {
		row  ParamRow
		vals map[string][]float64
	}
	var order []string
	groups := map[string]*group{}
	named := map[string]bool{}
	for _, tr := range trials {
		params := tr.Config.Trainer.Params
		values := map[string]string{}
		var key []string
		for _, p := range t.Params {
			v := program.Format(params[p])
			values[p] = v
			key = append(key, p+"="+v)
		}
		k := strings.Join(key, "\x00")
		g, ok := groups[k]
		if !ok {
			g = &group{row: ParamRow{Values: values}, vals: map[string][]float64{}}
			groups[k] = g
			order = append(order, k)
		}
		g.row.Seeds++
		o := outcomes[tr.ID]
		switch {
		case o.Result != nil && o.Result.Status == status.Completed:
			g.row.Completed++
			r := o.Result
			add := func(name string, v float64, ok bool) {
				if ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
					g.vals[name] = append(g.vals[name], v)
				}
			}
			v, ok := r.Val[r.Primary]
			add("val_loss", v, ok)
			v, ok = r.TestPPL[r.Primary]
			add("test_ppl", v, ok)
			for name, v := range r.Metrics {
				named[name] = true
				add(name, v, true)
			}
		case o.Result != nil && o.Result.Status == status.Diverged:
			g.row.Diverged++
		case o.Failed != "":
			g.row.Failed++
		}
	}
	seen := map[string]bool{}
	for _, g := range groups {
		for name := range g.vals {
			seen[name] = true
		}
	}
	for _, name := range []string{"val_loss", "test_ppl"} {
		if seen[name] {
			t.Metrics = append(t.Metrics, name)
		}
	}
	var rest []string
	for name := range named {
		if seen[name] && name != "val_loss" && name != "test_ppl" {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	t.Metrics = append(t.Metrics, rest...)
	for _, k := range order {
		g := groups[k]
		g.row.Metrics = map[string]stats.Summary{}
		for _, name := range t.Metrics {
			if vs := g.vals[name]; len(vs) > 0 {
				g.row.Metrics[name] = stats.Summarize(vs)
			}
		}
		t.Rows = append(t.Rows, g.row)
	}
	return t
}

// header and cells are the table's columns and a row's, as text.
func (t *ParamTable) header() []string {
	return append(append(slices.Clone(t.Params), t.Metrics...), "seeds")
}

func (t *ParamTable) cells(r ParamRow) []string {
	var out []string
	for _, p := range t.Params {
		out = append(out, r.Values[p])
	}
	for _, name := range t.Metrics {
		s, ok := r.Metrics[name]
		switch {
		case !ok:
			out = append(out, "")
		case s.N > 1:
			out = append(out, fmt.Sprintf("%.4f ± %.4f", s.Mean, s.Std))
		default:
			out = append(out, fmt.Sprintf("%.4f", s.Mean))
		}
	}
	seeds := fmt.Sprintf("%d/%d", r.Completed, r.Seeds)
	if r.Diverged > 0 {
		seeds += fmt.Sprintf(", %d diverged", r.Diverged)
	}
	if r.Failed > 0 {
		seeds += fmt.Sprintf(", %d failed", r.Failed)
	}
	return append(out, seeds)
}

// Write writes the table in the named format, as Table.Write.
func (t *ParamTable) Write(w io.Writer, format string) error {
	var b bytes.Buffer
	switch format {
	case FormatMarkdown:
		var sb strings.Builder
		sb.WriteString("**" + escapeMarkdown(t.Title) + "**\n\n")
		writePipeRow(&sb, escAll(t.header(), escapeMarkdown))
		writePipeRow(&sb, repeat("---:", len(t.header())))
		for _, r := range t.Rows {
			writePipeRow(&sb, escAll(t.cells(r), escapeMarkdown))
		}
		sb.WriteString("\nMean ± sample sd over the seeds that completed (\"seeds\": completed of all).\n")
		b.WriteString(sb.String())
	case FormatLaTeX:
		h := t.header()
		b.WriteString("\\begin{table}[!htp]\n    \\centering\n    \\small\n")
		b.WriteString("    \\begin{tabular}{@{}" + strings.Repeat("r", len(h)) + "@{}}\n        \\toprule\n")
		b.WriteString("        " + strings.Join(escAll(h, escapeLaTeX), " & ") + " \\\\\n        \\midrule\n")
		for _, r := range t.Rows {
			b.WriteString("        " + strings.Join(escAll(t.cells(r), escapeLaTeX), " & ") + " \\\\\n")
		}
		b.WriteString("        \\bottomrule\n    \\end{tabular}\n")
		b.WriteString("    \\caption{\\textbf{" + escapeLaTeX(t.Title) + "} Mean $\\pm$ sample sd over the seeds that completed.}\n\\end{table}\n")
	case FormatCSV:
		cw := csv.NewWriter(&b)
		h := slices.Clone(t.Params)
		for _, name := range t.Metrics {
			h = append(h, name, name+"_sd", name+"_n")
		}
		cw.Write(append(h, "seeds", "completed", "diverged", "failed"))
		for _, r := range t.Rows {
			var rec []string
			for _, p := range t.Params {
				rec = append(rec, r.Values[p])
			}
			for _, name := range t.Metrics {
				s, ok := r.Metrics[name]
				if !ok {
					rec = append(rec, "", "", "0")
					continue
				}
				rec = append(rec, formatG(s.Mean), formatG(s.Std), strconv.Itoa(s.N))
			}
			cw.Write(append(rec, strconv.Itoa(r.Seeds), strconv.Itoa(r.Completed), strconv.Itoa(r.Diverged), strconv.Itoa(r.Failed)))
		}
		cw.Flush()
		if err := cw.Error(); err != nil {
			return err
		}
	case FormatJSON:
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		doc := *t
		doc.Params, doc.Metrics, doc.Rows = nonNil(doc.Params), nonNil(doc.Metrics), nonNil(doc.Rows)
		if err := enc.Encode(doc); err != nil {
			return err
		}
	default:
		return fmt.Errorf("report: write parameters table: unknown format %q", format)
	}
	_, err := w.Write(b.Bytes())
	return err
}
