package report

import (
	"bytes"
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/internal/status"
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
	for i, l := range p.lines {
		// The paper's spec has a vertical rule after the row labels; ours, booktabs style,
		// has none but a quad of space there.
		if spec, ok := strings.CutPrefix(strings.TrimSpace(l), `\begin{tabular}`); ok {
			p.lines[i] = strings.Replace(l, spec, strings.Replace(spec, "|", `@{\quad}`, 1), 1)
		}
	}
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
// columns and one cell per number ("--" cells are left out: not run). The paper gives no
// validation loss: each cell's (paperVal) is the log of its perplexity, so that the bold,
// chosen on validation, falls where the paper's does.
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
			cells = append(cells, Cell{Row: beta1, Col: cols[k], Value: v, Status: status.Completed, Val: paperVal(v)})
		}
	}
	return cells, rows, cols
}

// paperVal is the validation loss a test perplexity v of the paper stands for: its log.
func paperVal(v float64) Seeds { return Seeds{Mean: math.Log(v), Status: status.Completed} }

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
					if wantCap := `    \caption{\textbf{Refined SF-AdamW on SlimPajama.} Test perplexity under varying $C$ values. Bold: the best in each row by validation loss (the test set is only reported); --: not run.}`; line != wantCap {
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
					trials = append(trials, TrialSummary{Optimizer: g.opt, Schedule: g.sched, LR: lr, Beta1: b[0], Beta2: b[1], C: c, Value: v, Status: status.Completed, Val: paperVal(v)})
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
			trials[worst].Status, trials[worst].Step, trials[worst].Value = status.Diverged, 1200, math.NaN()
			trials[second].Status, trials[second].Reason, trials[second].Value = status.Failed, "out of memory", math.Inf(1)
		}
		trials = append(trials, TrialSummary{Optimizer: g.opt, Schedule: g.sched, LR: 0.1, Beta1: g.betas[0][0], Beta2: g.betas[0][1], C: cs[0], Status: status.Missing})
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
	want := []string{"ok", "diverged", "stopped", "failed", "missing"}
	for i, s := range statusOrder {
		b, err := tableStatus(s).MarshalText()
		if err != nil || string(b) != want[i] || tableStatus(s).String() != want[i] {
			t.Errorf("status %q: %q, %v; want %q", s, b, err, want[i])
		}
	}
	for _, s := range []status.Status{"", "ok", "done"} {
		if _, err := tableStatus(s).MarshalText(); err == nil || !strings.Contains(err.Error(), strconv.Quote(string(s))) {
			t.Errorf("marshal %q: %v", s, err)
		}
	}
}

// fuzzStatuses are the statuses of fuzzed cells: the four, then one that is none of them.
var fuzzStatuses = []status.Status{status.Completed, status.Diverged, status.Failed, status.Missing, "done"}

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
				Status: fuzzStatuses[data[2]%5],
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
	val := func(loss float64) Seeds { return Seeds{Mean: loss, Status: status.Completed} } // chooses the bold
	cells := []Cell{
		{Row: 0.9, Col: "vanilla", Value: 27.70, Status: status.Completed, Val: val(3.33)},
		{Row: 0.9, Col: "50", Value: 23.97, Status: status.Completed, Val: val(3.18)},
		{Row: 0.9, Col: "200", Status: status.Diverged, Step: 1200},
		{Row: 0.95, Col: "vanilla", Value: 25.12, Status: status.Completed, Val: val(3.23)},
		{Row: 0.95, Col: "50", Value: 23.98, Status: status.Completed, Val: val(3.18)},
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
	// Test perplexity under varying C values. Bold: the best in each row by validation loss (the test set is only reported); --: not run.
}
