package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/internal/status"
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
	return cells, []float64{0.1, 0.5, 0.9}, []string{"vanilla", "5", "50"}
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
