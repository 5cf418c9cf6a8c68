package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/internal/stats"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/trial"
)

// statusCells is a small sweep with every status, a value above 100, a tie for the best
// and a row with nothing finished.
func statusCells() ([]Cell, []float64, []string) {
	cells := []Cell{
		{Row: 0.1, Col: "vanilla", Value: 110.8, Status: status.Completed},
		{Row: 0.1, Col: "5", Value: 54.8, Status: status.Completed},
		{Row: 0.1, Col: "50", Status: status.Diverged, Step: 1200, Value: math.NaN()},
		{Row: 0.5, Col: "vanilla", Value: 38.42, Status: status.Completed},
		{Row: 0.5, Col: "5", Value: 38.42, Status: status.Completed},
		{Row: 0.5, Col: "50", Status: status.Failed, Reason: "node lost, \"retry\" exhausted", Value: math.Inf(1)},
		{Row: 0.9, Col: "vanilla", Status: status.Diverged},
		{Row: 0.9, Col: "5", Status: status.Missing, Value: 12},
	}
	return withVal(cells), []float64{0.1, 0.5, 0.9}, []string{"vanilla", "5", "50"}
}

// withVal gives each cell a validation loss that orders and scatters as its value does,
// so that the bold (chosen on validation) falls where the lowest value is.
func withVal(cells []Cell) []Cell {
	for i, c := range cells {
		cells[i].Val = Seeds{Spread: c.Spread, Mean: c.Value, Status: c.Status}
	}
	return cells
}

// TestCSensitivityStatuses checks how diverged, failed and missing cells read in each
// format, that ties are all bold, and that no non-finite number is ever printed.
func TestCSensitivityStatuses(t *testing.T) {
	cells, rows, cols := statusCells()
	tab, err := CSensitivityTable("s", "", cells, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	out := renderAll(t, tab)
	for f, b := range out {
		for _, bad := range []string{"NaN", "nan", "Inf", "inf"} {
			if bytes.Contains(b, []byte(bad)) {
				t.Errorf("%s output contains %q:\n%s", f, bad, b)
			}
		}
	}

	_, md := markdownBody(t, string(out[FormatMarkdown]))
	wantMD := [][]string{
		{"0.1", "110.8", "**54.80**", "diverged (step 1200)"},
		{"0.5", "**38.42**", "**38.42**", "failed"},
		{"0.9", "diverged", "--", "--"},
	}
	if fmt.Sprint(md) != fmt.Sprint(wantMD) {
		t.Errorf("Markdown body %q, want %q", md, wantMD)
	}

	tex := string(out[FormatLaTeX])
	for _, want := range []string{
		`        0.1 & 110.8 & \textbf{54.80} & $\dagger$\,1200 \\`,
		`        0.5 & \textbf{38.42} & \textbf{38.42} & failed \\`,
		`        0.9 & $\dagger$ & -- & -- \\`,
		`$\dagger$\,$N$: diverged at step $N$.}`,
		"\\begin{tabular}{@{}c@{\\quad}ccc@{}}\n",
		"\\end{table}\n",
	} {
		if !strings.Contains(tex, want) {
			t.Errorf("LaTeX lacks %q:\n%s", want, tex)
		}
	}
	if strings.Contains(tex, `\label`) {
		t.Errorf("LaTeX has a label though none was given:\n%s", tex)
	}

	recs, err := csv.NewReader(bytes.NewReader(out[FormatCSV])).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	wantCSV := [][]string{
		{"beta1", "c", "test_ppl", "status", "step", "reason", "best", "std", "n", "diverged", "failed", "stopped"},
		{"0.1", "vanilla", "110.8", "ok", "", "", "false", "", "", "0", "0", "0"},
		{"0.1", "5", "54.8", "ok", "", "", "true", "", "", "0", "0", "0"},
		{"0.1", "50", "", "diverged", "1200", "", "false", "", "", "0", "0", "0"},
		{"0.5", "vanilla", "38.42", "ok", "", "", "true", "", "", "0", "0", "0"},
		{"0.5", "5", "38.42", "ok", "", "", "true", "", "", "0", "0", "0"},
		{"0.5", "50", "", "failed", "", `node lost, "retry" exhausted`, "false", "", "", "0", "0", "0"},
		{"0.9", "vanilla", "", "diverged", "", "", "false", "", "", "0", "0", "0"},
		{"0.9", "5", "", "missing", "", "", "false", "", "", "0", "0", "0"},
		{"0.9", "50", "", "missing", "", "", "false", "", "", "0", "0", "0"},
	}
	if fmt.Sprintf("%q", recs) != fmt.Sprintf("%q", wantCSV) {
		t.Errorf("CSV records\n%q\nwant\n%q", recs, wantCSV)
	}

	var doc struct {
		Cells []struct {
			Text   string   `json:"text"`
			Value  *float64 `json:"value"`
			Status string   `json:"status"`
			Step   int      `json:"step"`
			Best   bool     `json:"best"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(out[FormatJSON], &doc); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, c := range doc.Cells {
		texts = append(texts, c.Text)
		if (c.Value != nil) != (c.Status == "ok") {
			t.Errorf("JSON cell %q: value %v with status %v", c.Text, c.Value, c.Status)
		}
	}
	if want := "[110.8 54.80 div@1200 38.42 38.42 failed div -- --]"; fmt.Sprint(texts) != want {
		t.Errorf("JSON texts %v, want %s", texts, want)
	}
	if doc.Cells[2].Status != "diverged" || doc.Cells[2].Step != 1200 || !doc.Cells[1].Best {
		t.Errorf("JSON cells %+v", doc.Cells[:3])
	}
}

// TestCSensitivityOrder checks that rows and columns keep the order given, and that without
// one they are sorted numerically with vanilla first, column keys matched by value.
func TestCSensitivityOrder(t *testing.T) {
	cells := []Cell{
		{Row: 0.95, Col: "200", Value: 24.37, Status: status.Completed},
		{Row: 0.1, Col: "Vanilla", Value: 67.2, Status: status.Completed},
		{Row: 0.5, Col: "20.0", Value: 29.32, Status: status.Completed},
		{Row: 0.95, Col: "1e1", Value: 25, Status: status.Completed},
		{Row: 0.1, Col: " 5 ", Value: 37.06, Status: status.Completed},
	}
	for _, tc := range []struct {
		name       string
		rows       []float64
		cols       []string
		wantRows   string
		wantCols   string
		wantHeader string
	}{
		{"derived", nil, nil, "[0.1 0.5 0.95]", "[vanilla 5 10 20 200]", "[β1 Vanilla C=5 10 20 200]"},
		{"given", []float64{0.95, 0.5, 0.1, 0.9}, []string{"200", "20", "10", "5", "VANILLA", "1000"},
			"[0.95 0.5 0.1 0.9]", "[200 20 10 5 vanilla 1000]", "[β1 C=200 20 10 5 Vanilla 1000]"},
		{"no vanilla", []float64{0.1}, []string{"5"}, "[0.1]", "[5]", "[β1 C=5]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := cells
			if tc.name == "no vanilla" {
				in = cells[4:]
			}
			tab, err := CSensitivityTable("", "", in, tc.rows, tc.cols)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(tab.Rows) != tc.wantRows || fmt.Sprint(tab.Columns) != tc.wantCols {
				t.Errorf("rows %v columns %v, want %s %s", tab.Rows, tab.Columns, tc.wantRows, tc.wantCols)
			}
			header, body := markdownBody(t, render(t, tab, FormatMarkdown))
			if fmt.Sprint(header) != tc.wantHeader {
				t.Errorf("header %v, want %s", header, tc.wantHeader)
			}
			if len(body) != len(tab.Rows) {
				t.Fatalf("%d body rows, want %d", len(body), len(tab.Rows))
			}
			// Every input cell lands under its own row and column.
			for _, c := range in {
				key, _ := canonicalC(c.Col)
				r := indexOf(tab.Rows, formatG(c.Row))
				k := indexOf(tab.Columns, key)
				cell := strings.Trim(body[r][k+1], "*")
				if body[r][0] != formatG(c.Row) || cell != formatPerplexity(c.Value) {
					t.Errorf("cell (%v, %q) shows %q in row %q", c.Row, c.Col, body[r][k+1], body[r][0])
				}
			}
		})
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// seedCells is a C-sensitivity table over three seeds: in the first row C = 5 is lowest;
// C = 50 is higher by the same 0.3 on every seed (a real difference), C = 20 by 0.3 on
// average but with seed-to-seed scatter a paired test cannot tell from noise; vanilla is
// lowest of all but diverged on one seed. In the second row one seed failed.
func seedCells() ([]Cell, []float64, []string) {
	sp := func(div, failed int, vals ...float64) (float64, Spread) {
		var s Spread
		for i, v := range vals {
			s.Samples = append(s.Samples, SeedValue{i + 1, v})
		}
		sum := summarizeSeeds(s.Samples)
		s.N, s.Std, s.Diverged, s.Failed = len(vals), sum.Std, div, failed
		return sum.Mean, s
	}
	cell := func(row float64, col string, div, failed int, vals ...float64) Cell {
		m, s := sp(div, failed, vals...)
		return Cell{Row: row, Col: col, Value: m, Status: status.Completed, Spread: s}
	}
	cells := []Cell{
		cell(0.1, "vanilla", 1, 0, 19.0, 19.2),
		cell(0.1, "5", 0, 0, 19.9, 20.0, 20.1),
		cell(0.1, "20", 0, 0, 19.5, 20.8, 20.6),
		cell(0.1, "50", 0, 0, 20.2, 20.3, 20.4),
		cell(0.5, "vanilla", 0, 1, 25.0, 25.5),
		cell(0.5, "5", 0, 0, 22.0, 22.1, 22.3),
		{Row: 0.5, Col: "20", Status: status.Diverged, Step: 40, Spread: Spread{Diverged: 3}},
		{Row: 0.9, Col: "vanilla", Status: status.Stopped, Step: 20, Spread: Spread{Stopped: 3}},
		{Row: 0.9, Col: "5", Value: 21.0, Status: status.Completed, Spread: Spread{N: 2, Std: 0.1414213562373095, Stopped: 1,
			Samples: []SeedValue{{1, 20.9}, {2, 21.1}}}},
		cell(0.9, "20", 0, 0, 21.5, 21.6, 21.7),
	}
	return withVal(cells), []float64{0.1, 0.5, 0.9}, []string{"vanilla", "5", "20", "50"}
}

// summarizeSeeds is stats.Summarize of the seeds' values, for building test cells.
func summarizeSeeds(vs []SeedValue) stats.Summary {
	xs := make([]float64, len(vs))
	for i, v := range vs {
		xs[i] = v.Value
	}
	return stats.Summarize(xs)
}

// TestSeedsBest checks the bold of a table over seeds: the lowest mean, and every cell a
// paired t-test cannot tell apart from it; never a cell with a diverged seed.
func TestSeedsBest(t *testing.T) {
	cells, rows, cols := seedCells()
	tab, err := CSensitivityTable("seeds", "tab:seeds", cells, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	_, body := markdownBody(t, render(t, tab, FormatMarkdown))
	want := [][]string{
		{"0.1", "19.10 ± 0.14 (n=2, 1 diverged)", "**20.00 ± 0.10**", "**20.30 ± 0.70**", "20.30 ± 0.10"},
		{"0.5", "25.25 ± 0.35 (n=2, 1 failed)", "**22.13 ± 0.15**", "diverged (step 40)", "--"},
		// a stopped cell reads as one and is never bold, nor is one with a stopped seed
		{"0.9", "stopped (step 20)", "21.00 ± 0.14 (n=2, 1 stopped)", "**21.60 ± 0.10**", "--"},
	}
	if fmt.Sprint(body) != fmt.Sprint(want) {
		t.Errorf("Markdown body\n%q\nwant\n%q", body, want)
	}
	md := render(t, tab, FormatMarkdown)
	if !strings.Contains(md, "over n = 3 seeds") || !strings.Contains(md, "paired t-test") {
		t.Errorf("caption does not state the seeds and the rule:\n%s", md)
	}
}

// TestSeedsHyperparameterTies checks a hyperparameter table over seeds: the best trial is
// the lowest mean without a diverged seed, and the trials a paired test cannot tell apart
// from it are listed as ties, in the CSV's tied column too.
func TestSeedsHyperparameterTies(t *testing.T) {
	trial := func(lr float64, div int, vals ...float64) TrialSummary {
		var s Spread
		for i, v := range vals {
			s.Samples = append(s.Samples, SeedValue{i + 1, v})
		}
		sum := summarizeSeeds(s.Samples)
		s.N, s.Std, s.Diverged = len(vals), sum.Std, div
		return TrialSummary{Optimizer: "adamw", LR: lr, Beta1: 0.9, Beta2: 0.95, Value: sum.Mean, Status: status.Completed, Spread: s,
			Val: Seeds{Spread: s, Mean: sum.Mean, Status: status.Completed}}
	}
	tab, err := HyperparameterTable("h", "tab:h", []TrialSummary{
		trial(1e-3, 0, 20.0, 20.1, 19.9),
		trial(2e-3, 0, 19.6, 20.9, 20.3), // scattered: a tie
		trial(5e-3, 0, 20.5, 20.6, 20.4), // higher on every seed
		trial(5e-4, 1, 18.0, 18.1),       // lowest, but diverged once
	})
	if err != nil {
		t.Fatal(err)
	}
	g := tab.Grids[0]
	if tab.Trials[g.Best].LR != 1e-3 || len(g.Ties) != 1 || tab.Trials[g.Ties[0]].LR != 2e-3 {
		t.Fatalf("best %d ties %v of %+v", g.Best, g.Ties, tab.Trials)
	}
	recs, err := csv.NewReader(strings.NewReader(render(t, tab, FormatCSV))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var tied []string
	for _, r := range recs[1:] {
		if r[len(r)-1] == "true" {
			tied = append(tied, r[2])
		}
	}
	if fmt.Sprint(tied) != "[0.002]" || recs[0][len(recs[0])-1] != "tied" {
		t.Errorf("tied trials %v in\n%q", tied, recs)
	}
}

// TestGatherStopped checks that seeds a search stopped are counted as stopped, never as
// failed or missing: all stopped reads stopped at the earliest rung; some completed keeps
// the mean of those and counts the others.
func TestGatherStopped(t *testing.T) {
	ppl := func(r *training.Result) float64 { return r.TestPPL[r.Primary] }
	done := func(v float64) trial.Outcome {
		return trial.Outcome{Result: &training.Result{Status: status.Completed, Primary: "x", TestPPL: map[string]float64{"x": v}}}
	}
	all := Gather([]SeedOutcome{{1, trial.Outcome{Stopped: 40}}, {2, trial.Outcome{Stopped: 20}}}, ppl)
	if all.Status != status.Stopped || all.Step != 20 || all.Stopped != 2 || all.Failed != 0 || all.N != 0 {
		t.Errorf("all stopped: %+v, want stopped at step 20, 2 stopped", all)
	}
	some := Gather([]SeedOutcome{{1, done(20)}, {2, trial.Outcome{Stopped: 20}}, {3, done(22)}}, ppl)
	if some.Status != status.Completed || some.Mean != 21 || some.N != 2 || some.Stopped != 1 || some.Step != 0 {
		t.Errorf("some stopped: %+v, want the mean 21 of 2, 1 stopped", some)
	}
	c := Cell{Row: 0.9, Col: "5", Value: some.Mean, Status: some.Status, Spread: some.Spread}
	if got := (TableCell{Cell: c}).markdown(3); got != "21.00 ± 1.41 (n=2, 1 stopped)" {
		t.Errorf("cell with a stopped seed reads %q", got)
	}
	if bestCandidate(some.Status, some.Spread, Seeds{Status: status.Completed, Mean: 3}) {
		t.Error("a configuration with a stopped seed may be best")
	}
}
