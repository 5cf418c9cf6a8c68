package report

// A table of a sweep read against the paper's table it twins, cell by cell: for a
// C-sensitivity table, which cells improve on vanilla and where the best C of each row
// lies; for a hyperparameter table, each optimizer's best configuration. The paper's
// table is chosen by the sweep table's label, as the example manifests name their twins.

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sfsweep/sfsweep/internal/stats"
	"github.com/sfsweep/sfsweep/internal/status"
)

// paperCTable is one of the paper's C-sensitivity tables: test perplexity by β1 (row) and
// column ("vanilla", then C), NaN where the paper ran nothing ("--"), at one LR and β2.
type paperCTable struct {
	label     string
	lr, beta2 float64
	rows      []float64
	cols      []string
	ppl       [][]float64
}

var nan = math.NaN()

// paperCTables are tab:c_sweep_05M and tab:c_sweep_2M as the paper prints them, both at
// LR 2e-3 and β2 0.99 (their captions).
var paperCTables = []paperCTable{
	{"tab:c_sweep_05M", 2e-3, 0.99, []float64{0.1, 0.5, 0.9, 0.95}, []string{"vanilla", "5", "10", "20", "50", "100", "200", "500"}, [][]float64{
		{67.20, 37.06, 35.80, 36.62, 36.15, 37.27, nan, nan},
		{41.01, nan, nan, 29.32, 30.87, 29.96, 29.57, nan},
		{27.70, nan, 27.70, nan, 23.97, 24.64, 24.93, 25.11},
		{25.12, nan, nan, 25.12, 23.98, 23.60, 24.37, 24.83},
	}},
	{"tab:c_sweep_2M", 2e-3, 0.99, []float64{0.1, 0.5, 0.9, 0.95, 0.98}, []string{"vanilla", "5", "10", "20", "50", "100", "200", "500", "1000"}, [][]float64{
		{110.8, 54.80, 47.37, 44.31, 43.80, nan, nan, nan, nan},
		{54.24, 47.80, 38.42, 38.86, 38.49, 42.97, nan, nan, nan},
		{31.34, nan, 31.34, 29.86, 27.68, 28.16, 27.02, 27.88, nan},
		{27.29, nan, nan, 27.29, 25.77, 25.45, 25.77, 27.31, nan},
		{26.09, nan, nan, 30.23, 26.09, 25.49, 24.51, 23.95, 23.88},
	}},
}

// paperCFor is the paper's C table a sweep's table twins: tab:c_sweep_2M for a label that
// names the large batch (largeBatchLabel), else tab:c_sweep_05M; nil for a table without a
// label.
func paperCFor(label string) *paperCTable {
	switch {
	case label == "":
		return nil
	case largeBatchLabel(label):
		return &paperCTables[1]
	}
	return &paperCTables[0]
}

// at is the paper's perplexity at β1 row, column col; ok false where it ran nothing.
func (p *paperCTable) at(row float64, col string) (float64, bool) {
	r, c := slices.Index(p.rows, row), slices.Index(p.cols, col)
	if r < 0 || c < 0 || math.IsNaN(p.ppl[r][c]) {
		return 0, false
	}
	return p.ppl[r][c], true
}

// bestCol is the paper's column of lowest perplexity in row among the columns ran (those
// the twin ran too: a best the twin could not find is no test of it); "" if none.
func (p *paperCTable) bestCol(row float64, ran func(col string) bool) string {
	r := slices.Index(p.rows, row)
	if r < 0 {
		return ""
	}
	best, col := math.Inf(1), ""
	for c, v := range p.ppl[r] {
		if v < best && ran(p.cols[c]) {
			best, col = v, p.cols[c]
		}
	}
	return col
}

// cCellCheck is one refined cell of a twin's C table against vanilla in its row, beside
// the paper's cell.
type cCellCheck struct {
	row         float64
	col         string
	paperChange float64 // the paper's refined / vanilla − 1
	want        string  // the paper's direction: "<", ">", or "≈" within the margin
	twinChange  float64 // the twin's, of the means over seeds
	paired      stats.Paired
	p, adjusted float64
	verdict     Verdict // the twin's cell against the paper's direction
}

// checkCCells compares every refined cell of t that the paper also ran with the vanilla
// cell of its row, seed by seed (paired t-test), and judges it against the paper's
// direction: lower than vanilla where the paper's is lower, higher where it is higher, on
// test perplexity; where the paper's cell is within the margin of vanilla's (|log ratio| <
// margin, as its +0.1%), the same within the margin, by two one-sided tests on the log of
// test perplexity. Each cell is a claim of its own, so its p-values are adjusted together
// by Holm's method for either verdict.
func checkCCells(t *Table, p *paperCTable) []cCellCheck {
	var out []cCellCheck
	for r, rowKey := range t.Rows {
		beta1, _ := strconv.ParseFloat(rowKey, 64)
		cells := t.Cells[r*len(t.Columns) : (r+1)*len(t.Columns)]
		i := slices.IndexFunc(cells, func(c TableCell) bool { return c.Col == "vanilla" })
		pv, ok := p.at(beta1, "vanilla")
		if i < 0 || !ok {
			continue
		}
		v := cells[i]
		for _, c := range cells {
			pc, ok := p.at(beta1, c.Col)
			if c.Col == "vanilla" || !ok || isVanillaC(beta1, c.Col) || c.Status == status.Missing {
				continue // not a refined cell both ran
			}
			k := cCellCheck{row: beta1, col: c.Col, paperChange: pc/pv - 1, twinChange: math.NaN(), want: "<"}
			switch {
			case math.Abs(math.Log(pc/pv)) < margin:
				k.want = "≈"
			case pc > pv:
				k.want = ">"
			}
			if c.Status == status.Completed && v.Status == status.Completed {
				k.twinChange = c.Value/v.Value - 1
				if k.want == "≈" {
					k.paired = Compare(logSpread(c.Spread), logSpread(v.Spread))
				} else {
					k.paired = Compare(c.Spread, v.Spread)
				}
			}
			out = append(out, k)
		}
	}
	var ps []float64
	var tested []int
	for i := range out {
		out[i].p, out[i].adjusted = 1, 1
		if out[i].paired.N >= 2 {
			out[i].p = testP(out[i].paired, out[i].want, margin)
			ps, tested = append(ps, out[i].p), append(tested, i)
		}
	}
	for k, adj := range stats.Holm(ps) {
		out[tested[k]].adjusted = adj
	}
	for i := range out {
		k := &out[i]
		c := Comparison{Want: k.want, Paired: k.paired, P: k.p, Adjusted: k.adjusted}
		if k.want == "≈" {
			c.Margin = margin
		}
		// each cell is a claim of its own, so a "holds" too is read on the adjusted p-value
		k.verdict = judgeAt(c, k.adjusted)
	}
	return out
}

// logSpread is s with every seed's value replaced by its logarithm: a perplexity as a loss.
func logSpread(s Spread) Spread {
	out := s
	out.Samples = make([]SeedValue, len(s.Samples))
	for i, v := range s.Samples {
		out.Samples[i] = SeedValue{Seed: v.Seed, Value: math.Log(v.Value)}
	}
	return out
}

// isVanillaC reports whether column col is C = 1/(1−β1), where refined SF-AdamW is vanilla
// (the paper prints vanilla's number there).
func isVanillaC(beta1 float64, col string) bool {
	c, err := strconv.ParseFloat(col, 64)
	return err == nil && math.Abs(c*(1-beta1)-1) < 1e-9
}

// twinBest is the column of row r of t chosen best on validation (bestOf), with the columns
// tied with it; "" if none is a candidate.
func twinBest(t *Table, r int) (best string, tied []string) {
	cells := t.Cells[r*len(t.Columns) : (r+1)*len(t.Columns)]
	b, ties := bestOf(len(cells), func(k int) (status.Status, Spread, Seeds) { return cells[k].Status, cells[k].Spread, cells[k].Val })
	if b < 0 {
		return "", nil
	}
	for k, tie := range ties {
		if tie && k != b {
			tied = append(tied, cells[k].Col)
		}
	}
	return cells[b].Col, tied
}

// settingsNote says, where t's cells ran at another LR or β2 than the paper's table, at
// which each ran: the comparison is then of the direction of each cell's change, across
// settings. "" where they agree, or where t's are not one LR and one β2.
func settingsNote(t *Table, p *paperCTable) string {
	if t.LR == 0 || (t.LR == p.lr && t.Beta2 == p.beta2) {
		return ""
	}
	return fmt.Sprintf("; the paper's cells at LR %s and β2 %s, this table's at LR %s and β2 %s",
		formatLR(p.lr), formatG(p.beta2), formatLR(t.LR), formatG(t.Beta2))
}

// writeCAgainstPaper writes t's cells against the paper's table: the direction of each
// refined cell both ran against vanilla, then the best C of each row among the columns
// both ran.
func writeCAgainstPaper(b *strings.Builder, t *Table) {
	p := paperCFor(t.Label)
	if p == nil {
		return
	}
	checks := checkCCells(t, p)
	fmt.Fprintf(b, "**Against the paper's %s**, cell by cell (the paper's table chosen by this table's label, %s%s):\n\n", p.label, t.Label, settingsNote(t, p))
	if len(checks) == 0 {
		b.WriteString("no refined cell of this table is one the paper ran.\n\n")
	} else {
		writePipeRow(b, []string{"β1", "C", "paper: against vanilla", "twin: against vanilla", "n", "95% CI of the difference", "p Holm", "verdict"})
		writePipeRow(b, []string{"---:", "---:", "---:", "---:", "---:", ":---:", "---:", "---"})
		tally := map[Verdict]int{}
		for _, k := range checks {
			twin, ci, adj := "--", "--", "--"
			if !math.IsNaN(k.twinChange) {
				twin = fmt.Sprintf("%+.1f%%", 100*k.twinChange)
			}
			if k.paired.N >= 2 {
				lo, hi := k.paired.Interval()
				ci, adj = "["+formatNum(lo)+", "+formatNum(hi)+"]", formatP(k.adjusted)
			}
			tally[k.verdict]++
			writePipeRow(b, []string{formatG(k.row), k.col, fmt.Sprintf("%+.1f%%", 100*k.paperChange), twin, strconv.Itoa(k.paired.N), ci, adj, string(k.verdict)})
		}
		fmt.Fprintf(b, "\n*A cell holds where the twin's refined SF-AdamW differs from vanilla in the paper's direction (lower where the paper's is lower, higher where it is higher), beyond seed noise: a paired t-test of test perplexity, its p-values adjusted by Holm's method over this table's %d cells.* "+
			"Of %d cells: %d hold, %d do not hold, %d not distinguishable from noise, %d without data.\n\n",
			len(checks), len(checks), tally[Holds], tally[DoesNotHold], tally[Noise], tally[NoData])
	}
	var rows []string
	agree, amongTies, n := 0, 0, 0
	for r, rowKey := range t.Rows {
		beta1, _ := strconv.ParseFloat(rowKey, 64)
		cells := t.Cells[r*len(t.Columns) : (r+1)*len(t.Columns)]
		pb := p.bestCol(beta1, func(col string) bool {
			return slices.ContainsFunc(cells, func(c TableCell) bool {
				return c.Status != status.Missing && (c.Col == col || col == "vanilla" && isVanillaC(beta1, c.Col))
			})
		})
		tb, tied := twinBest(t, r)
		if pb == "" || tb == "" {
			continue
		}
		n++
		same := "differs"
		switch {
		case pb == tb || (isVanillaC(beta1, pb) && tb == "vanilla"):
			same, agree = "agrees", agree+1
		case slices.Contains(tied, pb):
			same, amongTies = "differs; the paper's best is among the twin's ties", amongTies+1
		}
		tiedText := ""
		if len(tied) > 0 {
			tiedText = " (not distinguishable from it: " + strings.Join(tied, ", ") + ")"
		}
		rows = append(rows, fmt.Sprintf("β1 %s: paper C = %s, twin C = %s%s: %s", rowKey, pb, tb, tiedText, same))
	}
	if n > 0 {
		fmt.Fprintf(b, "Best C of each row, among the columns both ran (the twin's the argmin of mean validation loss, the paper's of its test perplexity; the columns not distinguishable from the twin's best beside it): %s. The twin's best agrees with the paper's in %d of %d rows; in %d more the paper's best is among the twin's ties.\n\n",
			strings.Join(rows, "; "), agree, n, amongTies)
	}
}
