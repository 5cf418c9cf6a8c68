package analysis

import (
	"bytes"
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/sfadamw"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/tables")

// tableFormats maps each format to the extension of its golden files.
var tableFormats = []struct{ format, ext string }{
	{FormatMarkdown, "md"}, {FormatCSV, "csv"}, {FormatLaTeX, "tex"}, {FormatJSON, "json"},
}

// paperTable is a table environment copied verbatim from the paper's source.
type paperTable struct {
	lines  []string   // every line of the environment
	header []string   // the cells of the header line
	body   [][]string // the cells of each body line
}

func readPaperTable(t *testing.T, name string) paperTable {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "tables", "paper", name+".tex"))
	if err != nil {
		t.Fatal(err)
	}
	p := paperTable{lines: strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")}
	state := ""
	for _, l := range p.lines {
		l = strings.TrimSpace(l)
		switch l {
		case `\toprule`, `\midrule`, `\bottomrule`:
			state = l
			continue
		}
		cells := strings.Split(strings.TrimSuffix(l, ` \\`), " & ")
		switch state {
		case `\toprule`:
			p.header = cells
		case `\midrule`:
			p.body = append(p.body, cells)
		}
	}
	if len(p.header) == 0 || len(p.body) == 0 {
		t.Fatalf("%s: no header or body found", name)
	}
	return p
}

// paperCInputs turns a C-sensitivity table of the paper into its inputs: the rows, the
// columns and one cell per number ("--" cells are left out: not run).
func paperCInputs(t *testing.T, p paperTable) (cells []Cell, rows []float64, cols []string) {
	t.Helper()
	for _, h := range p.header[1:] {
		switch {
		case h == "Vanilla":
			cols = append(cols, "vanilla")
		case strings.HasPrefix(h, "$C="):
			cols = append(cols, strings.Trim(h, "$C="))
		default:
			cols = append(cols, h)
		}
	}
	for _, line := range p.body {
		beta1, err := strconv.ParseFloat(line[0], 64)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, beta1)
		for k, s := range line[1:] {
			if s == "--" {
				continue
			}
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatal(err)
			}
			cells = append(cells, Cell{Row: beta1, Col: cols[k], Value: v})
		}
	}
	return cells, rows, cols
}

func renderAll(t *testing.T, tab *Table) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, f := range tableFormats {
		var b bytes.Buffer
		if err := tab.Write(&b, f.format); err != nil {
			t.Fatalf("%s: %v", f.format, err)
		}
		out[f.format] = b.Bytes()
	}
	return out
}

func render(t *testing.T, tab *Table, format string) string {
	t.Helper()
	var b bytes.Buffer
	if err := tab.Write(&b, format); err != nil {
		t.Fatalf("%s: %v", format, err)
	}
	return b.String()
}

// markdownBody returns the cells of the body rows of a Markdown pipe table.
func markdownBody(t *testing.T, md string) (header []string, body [][]string) {
	t.Helper()
	var rows [][]string
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| ") && strings.HasSuffix(l, " |") {
			cells := strings.Split(l[2:len(l)-2], " | ")
			rows = append(rows, cells)
		}
	}
	if len(rows) < 2 {
		t.Fatalf("no pipe table in\n%s", md)
	}
	return rows[0], rows[2:]
}

var latexBold = regexp.MustCompile(`\\textbf\{([^{}]*)\}`)
var markdownBold = regexp.MustCompile(`\*\*([^*]*)\*\*`)

// TestCSensitivityPaper rebuilds tab:c_sweep_05M and tab:c_sweep_2M from the paper's numbers
// and checks that the LaTeX reproduces the paper's source line for line (but for the
// caption and the bold best values, which the paper leaves plain), that the Markdown holds
// the same cell text, and that the bold cells are the row minima read off the paper.
func TestCSensitivityPaper(t *testing.T) {
	for _, tc := range []struct {
		name string
		best map[string]string // β1 → best cell, read off the paper by eye
	}{
		{"c_sweep_05M", map[string]string{"0.1": "35.80", "0.5": "29.32", "0.9": "23.97", "0.95": "23.60"}},
		{"c_sweep_2M", map[string]string{"0.1": "43.80", "0.5": "38.42", "0.9": "27.02", "0.95": "25.45", "0.98": "23.88"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			paper := readPaperTable(t, tc.name)
			cells, rows, cols := paperCInputs(t, paper)
			tab, err := CSensitivityTable("Refined SF-AdamW on SlimPajama.", "tab:"+tc.name, cells, rows, cols)
			if err != nil {
				t.Fatal(err)
			}

			got := strings.Split(strings.TrimSuffix(render(t, tab, FormatLaTeX), "\n"), "\n")
			if len(got) != len(paper.lines) {
				t.Fatalf("LaTeX has %d lines, the paper %d:\n%s", len(got), len(paper.lines), strings.Join(got, "\n"))
			}
			inBody := false
			for i, want := range paper.lines {
				line := got[i]
				switch strings.TrimSpace(want) {
				case `\midrule`:
					inBody = true
				case `\bottomrule`:
					inBody = false
				}
				if strings.HasPrefix(strings.TrimSpace(want), `\caption{`) {
					if wantCap := `    \caption{\textbf{Refined SF-AdamW on SlimPajama.} Test perplexity under varying $C$ values. Bold: the best value in each row; --: not run.}`; line != wantCap {
						t.Errorf("caption\n got %s\nwant %s", line, wantCap)
					}
					continue
				}
				if inBody && want != `        \midrule` {
					bolds := latexBold.FindAllStringSubmatch(line, -1)
					row := strings.Fields(line)[0]
					if len(bolds) != 1 || bolds[0][1] != tc.best[row] {
						t.Errorf("row %s: bold cells %q, want only %s", row, bolds, tc.best[row])
					}
					line = latexBold.ReplaceAllString(line, "$1")
				}
				if line != want {
					t.Errorf("line %d\n got %q\nwant %q", i+1, line, want)
				}
			}

			header, body := markdownBody(t, render(t, tab, FormatMarkdown))
			if len(header) != len(paper.header) || len(body) != len(paper.body) {
				t.Fatalf("Markdown %d×%d, paper %d×%d", len(body), len(header), len(paper.body), len(paper.header))
			}
			for r, line := range body {
				row := line[0]
				var bolds []string
				for k, cell := range line {
					if m := markdownBold.FindStringSubmatch(cell); m != nil {
						bolds = append(bolds, m[1])
						cell = m[1]
					}
					if cell != paper.body[r][k] {
						t.Errorf("Markdown row %s cell %d = %q, paper %q", row, k, cell, paper.body[r][k])
					}
				}
				if len(bolds) != 1 || bolds[0] != tc.best[row] {
					t.Errorf("Markdown row %s: bold %q, want %s", row, bolds, tc.best[row])
				}
			}
		})
	}
}

// paperGrid is one row of a hyperparameter table of the paper, transcribed by hand; the
// best indices mark its bold entries.
type paperGrid struct {
	opt, sched           string
	lr                   []float64
	betas                [][2]float64
	c                    []float64
	bestLR, bestB, bestC int
}

var paperGrids = map[string][]paperGrid{
	"hyperparameter_main": {
		{opt: "adamw", lr: []float64{5e-4, 1e-3, 2e-3, 5e-3}, bestLR: 1, betas: [][2]float64{{0.9, 0.95}, {0.95, 0.99}}, bestB: 0},
		{opt: "sfadamw", lr: []float64{1e-3, 2e-3, 5e-3}, bestLR: 1, betas: [][2]float64{{0.9, 0.99}, {0.95, 0.99}, {0.98, 0.99}}, bestB: 1},
		{opt: "refined", lr: []float64{2e-3}, betas: [][2]float64{{0.95, 0.99}}, c: []float64{20, 50, 100, 200, 500}, bestC: 3},
	},
	"hyperparameter_main_largeBS": {
		{opt: "adamw", sched: "Cosine LR", lr: []float64{5e-4, 1e-3, 2e-3, 5e-3}, bestLR: 1, betas: [][2]float64{{0.9, 0.95}, {0.95, 0.99}}, bestB: 0},
		{opt: "sfadamw", lr: []float64{1e-3, 2e-3, 5e-3}, bestLR: 1, betas: [][2]float64{{0.9, 0.99}, {0.95, 0.99}, {0.98, 0.99}}, bestB: 2},
		{opt: "refined", lr: []float64{2e-3}, betas: [][2]float64{{0.98, 0.99}}, c: []float64{20, 50, 100, 200, 500}, bestC: 3},
	},
	"hyperparameter_owt": {
		{opt: "adamw", lr: []float64{5e-4, 1e-3, 2e-3}, bestLR: 1, betas: [][2]float64{{0.9, 0.95}, {0.95, 0.99}}, bestB: 0},
		{opt: "sfadamw", lr: []float64{1e-3, 2e-3, 5e-3}, bestLR: 1, betas: [][2]float64{{0.9, 0.99}, {0.95, 0.99}, {0.98, 0.99}}, bestB: 1},
		{opt: "refined", lr: []float64{2e-3}, betas: [][2]float64{{0.95, 0.99}}, c: []float64{50, 100, 200, 500}, bestC: 2},
	},
	"hyperparameter_owt_largeBS": {
		{opt: "adamw", sched: "Cosine LR", lr: []float64{5e-4, 1e-3, 2e-3, 5e-3}, bestLR: 3, betas: [][2]float64{{0.9, 0.95}, {0.95, 0.99}}, bestB: 0},
		{opt: "sfadamw", lr: []float64{5e-4, 1e-3, 2e-3, 5e-3}, bestLR: 2, betas: [][2]float64{{0.95, 0.99}, {0.98, 0.99}}, bestB: 1},
		{opt: "refined", lr: []float64{2e-3, 5e-3, 1e-2}, bestLR: 1, betas: [][2]float64{{0.98, 0.99}}, c: []float64{20, 50, 100, 200, 500, 1000}, bestC: 4},
	},
}

// syntheticTrials runs each grid in full with a made-up perplexity that grows with the
// distance from the grid's best entries, so its minimum is the paper's bold configuration.
// The worst configuration of each grid diverges and the second worst fails (their values
// still belong to the grid), and a trial that was never run adds an LR of 0.1 that must
// not appear.
func syntheticTrials(grids []paperGrid) []TrialSummary {
	var trials []TrialSummary
	for _, g := range grids {
		cs := g.c
		if cs == nil {
			cs = []float64{0}
		}
		worst, second := -1, -1
		var worstV, secondV float64
		start := len(trials)
		for i, lr := range g.lr {
			for j, b := range g.betas {
				for k, c := range cs {
					v := 20 + math.Abs(float64(i-g.bestLR)) + 0.5*math.Abs(float64(j-g.bestB)) + 0.25*math.Abs(float64(k-g.bestC))
					trials = append(trials, TrialSummary{Optimizer: g.opt, Schedule: g.sched, LR: lr, Beta1: b[0], Beta2: b[1], C: c, Value: v})
					n := len(trials) - 1
					if worst < 0 || v > worstV {
						second, secondV = worst, worstV
						worst, worstV = n, v
					} else if second < 0 || v > secondV {
						second, secondV = n, v
					}
				}
			}
		}
		if len(trials)-start >= 3 {
			trials[worst].Status, trials[worst].Step, trials[worst].Value = StatusDiverged, 1200, math.NaN()
			trials[second].Status, trials[second].Reason, trials[second].Value = StatusFailed, "out of memory", math.Inf(1)
		}
		trials = append(trials, TrialSummary{Optimizer: g.opt, Schedule: g.sched, LR: 0.1, Beta1: g.betas[0][0], Beta2: g.betas[0][1], C: cs[0], Status: StatusMissing})
	}
	return trials
}

// TestHyperparameterPaper rebuilds the paper's four hyperparameter tables from synthetic
// trials over their grids and checks that the LaTeX reproduces the paper's tabular line for
// line, bold entries included, and that each row's best trial is the paper's.
func TestHyperparameterPaper(t *testing.T) {
	for _, name := range []string{"hyperparameter_main", "hyperparameter_main_largeBS", "hyperparameter_owt", "hyperparameter_owt_largeBS"} {
		t.Run(name, func(t *testing.T) {
			paper := readPaperTable(t, name)
			grids := paperGrids[name]
			tab, err := HyperparameterTable("Hyperparameter sweep.", "tab:"+name, syntheticTrials(grids))
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Split(strings.TrimSuffix(render(t, tab, FormatLaTeX), "\n"), "\n")
			var want []string // the paper's lines without its (two-line) caption
			for _, l := range paper.lines {
				if !strings.HasPrefix(strings.TrimSpace(l), `\caption{`) && !strings.HasPrefix(l, "    Grid of") {
					want = append(want, l)
				}
			}
			var gotNoCaption []string
			for _, l := range got {
				if !strings.HasPrefix(l, `    \caption{`) {
					gotNoCaption = append(gotNoCaption, l)
				}
			}
			if strings.Join(gotNoCaption, "\n") != strings.Join(want, "\n") {
				t.Errorf("LaTeX differs from the paper\n got:\n%s\nwant:\n%s", strings.Join(gotNoCaption, "\n"), strings.Join(want, "\n"))
			}
			if len(tab.Grids) != len(grids) {
				t.Fatalf("%d rows, want %d", len(tab.Grids), len(grids))
			}
			for i, g := range grids {
				row := tab.Grids[i]
				if row.Best < 0 {
					t.Fatalf("row %s: no best trial", tab.Rows[i])
				}
				best := tab.Trials[row.Best]
				wantC := 0.0
				if g.c != nil {
					wantC = g.c[g.bestC]
				}
				if best.LR != g.lr[g.bestLR] || [2]float64{best.Beta1, best.Beta2} != g.betas[g.bestB] || best.C != wantC || best.Value != 20 {
					t.Errorf("row %s: best trial %+v", tab.Rows[i], best)
				}
				if fmt.Sprint(row.LR) != fmt.Sprint(g.lr) || fmt.Sprint(row.Betas) != fmt.Sprint(g.betas) {
					t.Errorf("row %s: grid lr %v betas %v, want %v %v", tab.Rows[i], row.LR, row.Betas, g.lr, g.betas)
				}
			}
		})
	}
}

// statusCells is a small sweep with every status, a value above 100, a tie for the best
// and a row with nothing finished.
func statusCells() ([]Cell, []float64, []string) {
	cells := []Cell{
		{Row: 0.1, Col: "vanilla", Value: 110.8},
		{Row: 0.1, Col: "5", Value: 54.8},
		{Row: 0.1, Col: "50", Status: StatusDiverged, Step: 1200, Value: math.NaN()},
		{Row: 0.5, Col: "vanilla", Value: 38.42},
		{Row: 0.5, Col: "5", Value: 38.42},
		{Row: 0.5, Col: "50", Status: StatusFailed, Reason: "node lost, \"retry\" exhausted", Value: math.Inf(1)},
		{Row: 0.9, Col: "vanilla", Status: StatusDiverged},
		{Row: 0.9, Col: "5", Status: StatusMissing, Value: 12},
	}
	return cells, []float64{0.1, 0.5, 0.9}, []string{"vanilla", "5", "50"}
}

// goldenTables builds every table that has golden files.
func goldenTables(t *testing.T) map[string]*Table {
	t.Helper()
	tabs := map[string]*Table{}
	for _, name := range []string{"c_sweep_05M", "c_sweep_2M"} {
		cells, rows, cols := paperCInputs(t, readPaperTable(t, name))
		tab, err := CSensitivityTable("Refined SF-AdamW on SlimPajama.", "tab:"+name, cells, rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		tabs[name] = tab
	}
	cells, rows, cols := statusCells()
	tab, err := CSensitivityTable("Statuses & rounding: 100%_done", "tab:statuses", cells, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	tabs["statuses"] = tab
	for _, name := range []string{"hyperparameter_main", "hyperparameter_owt_largeBS"} {
		tab, err := HyperparameterTable("Hyperparameter sweep.", "tab:"+name, syntheticTrials(paperGrids[name]))
		if err != nil {
			t.Fatal(err)
		}
		tabs[name] = tab
	}
	return tabs
}

// TestTablesGolden compares every format of every table with its golden file; -update
// rewrites them.
func TestTablesGolden(t *testing.T) {
	for name, tab := range goldenTables(t) {
		out := renderAll(t, tab)
		for _, f := range tableFormats {
			path := filepath.Join("testdata", "tables", name+"."+f.ext)
			if *update {
				if err := os.WriteFile(path, out[f.format], 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestTablesGolden -update)", err)
			}
			if !bytes.Equal(out[f.format], want) {
				t.Errorf("%s differs from its golden file:\n%s", path, out[f.format])
			}
		}
	}
}

// TestTablesByteStable renders each table twice from shuffled inputs, with the row and
// column order given and derived, and wants identical bytes.
func TestTablesByteStable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	type cInput struct {
		cells []Cell
		rows  []float64
		cols  []string
	}
	var cInputs []cInput
	for _, name := range []string{"c_sweep_05M", "c_sweep_2M"} {
		cells, rows, cols := paperCInputs(t, readPaperTable(t, name))
		cInputs = append(cInputs, cInput{cells, rows, cols}, cInput{cells, nil, nil})
	}
	cells, rows, cols := statusCells()
	cInputs = append(cInputs, cInput{cells, rows, cols}, cInput{cells, nil, nil})
	for i, in := range cInputs {
		var first map[string][]byte
		for range 4 {
			shuffled := append([]Cell(nil), in.cells...)
			rng.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
			tab, err := CSensitivityTable("t", "tab:t", shuffled, in.rows, in.cols)
			if err != nil {
				t.Fatal(err)
			}
			out := renderAll(t, tab)
			if first == nil {
				first = out
				continue
			}
			for _, f := range tableFormats {
				if !bytes.Equal(out[f.format], first[f.format]) {
					t.Errorf("input %d %s: bytes change with the input order", i, f.format)
				}
			}
		}
	}
	for name, grids := range paperGrids {
		trials := syntheticTrials(grids)
		// A second trial of the best configuration with the same value, and one of another
		// configuration tying with it: ties must not depend on the input order either.
		for _, tr := range trials {
			if tr.Value == 20 {
				tie := tr
				tie.Beta2 = 0.999
				trials = append(trials, tr, tie)
				break
			}
		}
		var first map[string][]byte
		for range 4 {
			rng.Shuffle(len(trials), func(a, b int) { trials[a], trials[b] = trials[b], trials[a] })
			tab, err := HyperparameterTable("t", "tab:t", trials)
			if err != nil {
				t.Fatal(err)
			}
			out := renderAll(t, tab)
			if first == nil {
				first = out
				continue
			}
			for _, f := range tableFormats {
				if !bytes.Equal(out[f.format], first[f.format]) {
					t.Errorf("%s %s: bytes change with the input order", name, f.format)
				}
			}
		}
	}
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
		"\\begin{tabular}{@{}c|ccc@{}}\n",
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
		{"beta1", "c", "value", "status", "step", "reason", "best"},
		{"0.1", "vanilla", "110.8", "ok", "", "", "false"},
		{"0.1", "5", "54.8", "ok", "", "", "true"},
		{"0.1", "50", "", "diverged", "1200", "", "false"},
		{"0.5", "vanilla", "38.42", "ok", "", "", "true"},
		{"0.5", "5", "38.42", "ok", "", "", "true"},
		{"0.5", "50", "", "failed", "", `node lost, "retry" exhausted`, "false"},
		{"0.9", "vanilla", "", "diverged", "", "", "false"},
		{"0.9", "5", "", "missing", "", "", "false"},
		{"0.9", "50", "", "missing", "", "", "false"},
	}
	if fmt.Sprintf("%q", recs) != fmt.Sprintf("%q", wantCSV) {
		t.Errorf("CSV records\n%q\nwant\n%q", recs, wantCSV)
	}

	var doc struct {
		Cells []struct {
			Text   string   `json:"text"`
			Value  *float64 `json:"value"`
			Status Status   `json:"status"`
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
		if (c.Value != nil) != (c.Status == StatusOK) {
			t.Errorf("JSON cell %q: value %v with status %v", c.Text, c.Value, c.Status)
		}
	}
	if want := "[110.8 54.80 div@1200 38.42 38.42 failed div -- --]"; fmt.Sprint(texts) != want {
		t.Errorf("JSON texts %v, want %s", texts, want)
	}
	if doc.Cells[2].Status != StatusDiverged || doc.Cells[2].Step != 1200 || !doc.Cells[1].Best {
		t.Errorf("JSON cells %+v", doc.Cells[:3])
	}
}

// TestCSensitivityOrder checks that rows and columns keep the order given, and that without
// one they are sorted numerically with vanilla first, column keys matched by value.
func TestCSensitivityOrder(t *testing.T) {
	cells := []Cell{
		{Row: 0.95, Col: "200", Value: 24.37},
		{Row: 0.1, Col: "Vanilla", Value: 67.2},
		{Row: 0.5, Col: "20.0", Value: 29.32},
		{Row: 0.95, Col: "1e1", Value: 25},
		{Row: 0.1, Col: " 5 ", Value: 37.06},
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

// TestTableErrors checks that bad input is refused with the field, the value and the reason.
func TestTableErrors(t *testing.T) {
	ok := Cell{Row: 0.9, Col: "5", Value: 24}
	trial := TrialSummary{Optimizer: "adamw", LR: 1e-3, Beta1: 0.9, Beta2: 0.95, Value: 30}
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
			return CSensitivityTable("", "", []Cell{{Row: 0.9, Col: "5", Value: math.NaN()}}, nil, nil)
		}, "Value", "Value = NaN: must be finite"},
		{"cell beta1", func() (*Table, error) {
			return CSensitivityTable("", "", []Cell{{Row: 1, Col: "5", Value: 3}}, nil, nil)
		}, "Row", "cells[0]: Row = 1: must be in [0, 1)"},
		{"cell col", func() (*Table, error) {
			return CSensitivityTable("", "", []Cell{ok, {Row: 0.9, Col: "ten", Value: 3}}, nil, nil)
		}, "Col", `cells[1]: Col = "ten"`},
		{"zero C", func() (*Table, error) {
			return CSensitivityTable("", "", []Cell{{Row: 0.9, Col: "0", Value: 3}}, nil, nil)
		}, "Col", "positive finite C"},
		{"cell step", func() (*Table, error) {
			return CSensitivityTable("", "", []Cell{{Row: 0.9, Col: "5", Status: StatusDiverged, Step: -3}}, nil, nil)
		}, "Step", "Step = -3"},
		{"cell status", func() (*Table, error) {
			return CSensitivityTable("", "", []Cell{{Row: 0.9, Col: "5", Status: 9}}, nil, nil)
		}, "Status", "Status = 9: unknown status"},
		{"duplicate cell", func() (*Table, error) {
			return CSensitivityTable("", "", []Cell{ok, {Row: 0.9, Col: "5.0", Value: 25}}, nil, nil)
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
			var ce *sfadamw.ConfigError
			if err == nil || !errors.As(err, &ce) {
				t.Fatalf("got table %v, error %v; want a ConfigError", tab, err)
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
		{Optimizer: "refined", LR: 2e-3, Beta1: 0.95, Beta2: 0.99, C: 500, Value: 24.8},
		{Optimizer: "refined", LR: 2e-3, Beta1: 0.95, Beta2: 0.99, C: 50, Value: 23.9},
		{Optimizer: "refined", LR: 2e-3, Beta1: 0.95, Beta2: 0.99, C: 200, Value: 24.1},
		{Optimizer: "adamw", Schedule: "Cosine LR", LR: 1e-3, Beta1: 0.9, Beta2: 0.95, Value: 25.0},
		{Optimizer: "adamw", Schedule: "Cosine LR", LR: 5e-4, Beta1: 0.9, Beta2: 0.95, Value: 24.0},
		{Optimizer: "adamw", Schedule: "Cosine LR", LR: 1e-3, Beta1: 0.95, Beta2: 0.99, Status: StatusDiverged, Step: 40},
		{Optimizer: "adamw", LR: 1e-3, Beta1: 0.9, Beta2: 0.95, Value: 26.0},
		{Optimizer: "sfadamw", LR: 2e-3, Beta1: 0.9, Beta2: 0.99, Status: StatusFailed, Reason: "oom"},
		{Optimizer: "sfadamw", LR: 5e-3, Beta1: 0.98, Beta2: 0.99, Status: StatusDiverged, Step: 10},
		{Optimizer: "sfadamw", LR: 1e-2, Beta1: 0.98, Beta2: 0.99, Status: StatusMissing},
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

func TestFormatPerplexity(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{67.2, "67.20"}, {23.97, "23.97"}, {110.8, "110.8"}, {100, "100.0"}, {99.994, "99.99"},
		{99.996, "100.0"}, {1234.56, "1234.6"}, {5.005, "5.00"}, {5.0051, "5.01"}, {0, "0.00"},
		{-0.001, "0.00"}, {-150.25, "-150.2"}, {math.NaN(), "n/a"}, {math.Inf(1), "n/a"},
	} {
		if got := formatPerplexity(tc.v); got != tc.want {
			t.Errorf("formatPerplexity(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{5e-4, "5e-4"}, {1e-3, "1e-3"}, {2e-3, "2e-3"}, {1e-2, "1e-2"}, {2.5e-3, "2.5e-3"}, {1, "1e0"}, {30, "3e1"},
	} {
		if got := formatLR(tc.v); got != tc.want {
			t.Errorf("formatLR(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestStatusText(t *testing.T) {
	for s := StatusOK; s <= StatusMissing; s++ {
		b, err := s.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Status
		if err := back.UnmarshalText(b); err != nil || back != s || s.String() != string(b) {
			t.Errorf("status %d: %q → %v, %v", s, b, back, err)
		}
	}
	if _, err := Status(7).MarshalText(); err == nil {
		t.Error("Status(7) marshalled")
	}
	var s Status
	if err := s.UnmarshalText([]byte("done")); err == nil || !strings.Contains(err.Error(), `"done"`) {
		t.Errorf("unmarshal done: %v", err)
	}
}

// FuzzCSensitivityTable builds tables from random cells: it must never panic, and a table it
// accepts renders in every format with rows×columns cells and no non-finite number.
func FuzzCSensitivityTable(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0x40, 0x50, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}, false)
	f.Add([]byte{3, 2, 1, 7, 0xff, 0xf8, 0, 0, 0, 0, 0, 0, 2, 4, 2, 0, 0, 0, 0, 0, 0, 0, 0x40, 0}, true)
	f.Add([]byte("the paper's tables, as bytes"), true)
	f.Fuzz(func(t *testing.T, data []byte, given bool) {
		betas := []float64{0, 0.1, 0.5, 0.9, 0.95, 0.98, 1, math.NaN()}
		cols := []string{"vanilla", "5", "10", "20", "5.0", "1e3", "0", "x"}
		var cells []Cell
		for len(data) >= 12 {
			c := Cell{
				Row:    betas[data[0]%8],
				Col:    cols[data[1]%8],
				Status: Status(data[2] % 5),
				Step:   int(int8(data[3])),
				Value:  math.Float64frombits(binary.LittleEndian.Uint64(data[4:12])),
				Reason: string(data[4:6]),
			}
			cells = append(cells, c)
			data = data[12:]
		}
		var rows []float64
		var colKeys []string
		if given {
			rows = []float64{0.98, 0.5, 0.1, 0.9, 0}
			colKeys = []string{"vanilla", "20", "10", "5", "1000"}
		}
		tab, err := CSensitivityTable("fuzz", "tab:fuzz", cells, rows, colKeys)
		if err != nil {
			return
		}
		nr, nc := len(tab.Rows), len(tab.Columns)
		if nr == 0 || nc == 0 || len(tab.Cells) != nr*nc {
			t.Fatalf("%d cells for %d×%d", len(tab.Cells), nr, nc)
		}
		out := renderAll(t, tab)
		for format, b := range out {
			if bytes.Contains(b, []byte("NaN")) || bytes.Contains(b, []byte("Inf")) {
				t.Fatalf("%s prints a non-finite number:\n%s", format, b)
			}
		}
		header, body := markdownBody(t, string(out[FormatMarkdown]))
		if len(header) != nc+1 || len(body) != nr {
			t.Fatalf("Markdown %d×%d, want %d×%d", len(body), len(header), nr, nc+1)
		}
		for _, line := range body {
			if len(line) != nc+1 {
				t.Fatalf("Markdown row %q has %d cells, want %d", line, len(line), nc+1)
			}
		}
		recs, err := csv.NewReader(bytes.NewReader(out[FormatCSV])).ReadAll()
		if err != nil || len(recs) != nr*nc+1 {
			t.Fatalf("CSV: %d records, err %v; want %d", len(recs), err, nr*nc+1)
		}
		bodyLines := 0
		for _, l := range strings.Split(string(out[FormatLaTeX]), "\n") {
			if strings.HasSuffix(l, `\\`) {
				if n := strings.Count(l, " & ") + 1; n != nc+1 {
					t.Fatalf("LaTeX line %q has %d cells, want %d", l, n, nc+1)
				}
				bodyLines++
			}
		}
		if bodyLines != nr+1 {
			t.Fatalf("LaTeX has %d table lines, want %d", bodyLines, nr+1)
		}
		var doc struct {
			Cells []json.RawMessage `json:"cells"`
		}
		if err := json.Unmarshal(out[FormatJSON], &doc); err != nil || len(doc.Cells) != nr*nc {
			t.Fatalf("JSON: %d cells, err %v; want %d", len(doc.Cells), err, nr*nc)
		}
	})
}

func ExampleCSensitivityTable() {
	cells := []Cell{
		{Row: 0.9, Col: "vanilla", Value: 27.70},
		{Row: 0.9, Col: "50", Value: 23.97},
		{Row: 0.9, Col: "200", Status: StatusDiverged, Step: 1200},
		{Row: 0.95, Col: "vanilla", Value: 25.12},
		{Row: 0.95, Col: "50", Value: 23.98},
	}
	tab, err := CSensitivityTable("Refined SF-AdamW, 0.5M-token batches.", "tab:c_sweep_05M", cells, nil, nil)
	if err != nil {
		panic(err)
	}
	if err := tab.WriteMarkdown(os.Stdout); err != nil {
		panic(err)
	}
	// Output:
	// **Refined SF-AdamW, 0.5M-token batches.**
	//
	// | β1 | Vanilla | C=50 | 200 |
	// | :---: | :---: | :---: | :---: |
	// | 0.9 | 27.70 | **23.97** | diverged (step 1200) |
	// | 0.95 | 25.12 | **23.98** | -- |
	//
	// Test perplexity under varying C values. Bold: the best value in each row; --: not run.
}
