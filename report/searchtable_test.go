package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/figure"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/search"
	"github.com/sfsweep/sfsweep/sweeps"
)

// searchManifest is a TPE search over lr, β1 and C (with vanilla), stopped by ASHA at
// rungs 10 and 30 of 90 steps.
const searchManifest = `name: s
model: micro-llama
data:
  default: byte
batch_tokens: 32
steps: 90
eval_every: 10
checkpoint_every: 10
seeds: [1, 2]
optimizers:
  - name: sfadamw
    lr: {distribution: log_uniform, min: 1e-4, max: 1e-2}
    beta1: [0.9, 0.95]
    beta2: 0.99
    c: [vanilla, 50, 200]
search:
  method: tpe
  trials: 12
  seed: 7
  metric: test_ppl
  early_stopping: {rule: asha, min_steps: 10, eta: 3}
`

// searchState is a search by hand: two completed configurations (the second the best), a
// tie of the first in its metric, one stopped at each rung, one diverged, one failed.
func searchState() *search.State {
	f := func(v float64) *float64 { return &v }
	pt := func(lr, b1, c float64) search.Point { return search.Point{"lr": lr, "beta1": b1, "c": c} }
	return &search.State{Config: search.Config{Rule: search.ASHA, Rungs: []int{10, 30, 90}, Eta: 3, Budget: 12, Parallel: 2},
		Candidates: []search.Candidate{
			{Index: 0, Point: pt(1e-3, 0.9, 0), Status: search.StatusCompleted, Until: 90, Values: map[int]float64{10: 4, 30: 3, 90: 2.5}, Final: f(30)},
			{Index: 1, Point: pt(3e-4, 0.95, 50), Status: search.StatusStopped, Until: 10, Values: map[int]float64{10: 4.5}, StoppedAt: 10},
			{Index: 2, Point: pt(2e-3, 0.95, 200), Status: search.StatusCompleted, Until: 90, Values: map[int]float64{10: 3.9, 30: 2.9, 90: 2.4}, Final: f(25)},
			{Index: 3, Point: pt(5e-3, 0.9, 50), Status: search.StatusStopped, Until: 30, Values: map[int]float64{10: 4.1, 30: 3.5}, StoppedAt: 30},
			{Index: 4, Point: pt(1e-2, 0.9, 200), Status: search.StatusDiverged, Until: 30, Values: map[int]float64{10: 5}, StoppedAt: 17},
			{Index: 5, Point: pt(1e-4, 0.9, 0), Status: search.StatusFailed, Until: 10, Values: map[int]float64{}, StoppedAt: 3},
			{Index: 6, Point: pt(8e-4, 0.95, 0), Status: search.StatusCompleted, Until: 90, Values: map[int]float64{90: 2.5}, Final: f(30)},
		}}
}

// searchStore is the search manifest and an empty store.
func searchStore(t *testing.T) (*sweeps.Manifest, blob.Store) {
	t.Helper()
	m, err := sweeps.Parse([]byte(searchManifest))
	if err != nil {
		t.Fatal(err)
	}
	store, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return m, store
}

// TestSearchBuild writes a search's state to a store and builds its tables and plots:
// the ranks, statuses and the best row, the minimum of the metric.
func TestSearchBuild(t *testing.T) {
	m, store := searchStore(t)
	ctx := context.Background()
	snap, _ := json.Marshal(search.Snapshot{Seq: 1, State: searchState()})
	if err := store.Put(ctx, keys.SearchState("sw"), snap); err != nil {
		t.Fatal(err)
	}
	written, err := Build(ctx, store, m, Options{SweepID: "sw"})
	if err != nil {
		t.Fatal(err)
	}
	out := Output(m)
	for _, k := range []string{keys.Table(out, "search", "md"), keys.Table(out, "search", "csv"), keys.Table(out, "search", "tex"),
		keys.Table(out, "search", "json"), keys.Plot(out, "search-lr", "svg"), keys.Plot(out, "search-c", "png"), keys.Plot(out, "search-beta1", "svg")} {
		if !slices.Contains(written, k) {
			t.Errorf("Build did not write %s; wrote %v", k, written)
		}
	}
	b, err := store.Get(ctx, keys.Table(out, "search", "csv"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"rank", "index", "optimizer", "lr", "beta1", "c", "status", "step", "test_ppl", "rung", "val_loss"}; !slices.Equal(recs[0], want) {
		t.Errorf("CSV header %q, want %q", recs[0], want)
	}
	// rank: completed by metric (ties by index), stopped by rung reached, diverged, failed
	var got [][]string
	for _, r := range recs[1:] {
		got = append(got, []string{r[0], r[1], r[6], r[7], r[8], r[9], r[10]})
	}
	want := [][]string{
		{"1", "2", "completed", "", "25", "90", "2.4"},
		{"2", "0", "completed", "", "30", "90", "2.5"},
		{"3", "6", "completed", "", "30", "90", "2.5"},
		{"4", "3", "stopped", "30", "", "30", "3.5"},
		{"5", "1", "stopped", "10", "", "10", "4.5"},
		{"6", "4", "diverged", "17", "", "10", "5"},
		{"7", "5", "failed", "3", "", "", ""},
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("ranked rows\n%q\nwant\n%q", got, want)
	}
	md, _ := store.Get(ctx, keys.Table(out, "search", "md"))
	for _, s := range []string{"Best: sfadamw lr = 2e-3, beta1 = 0.95, c = 200, test\\_ppl = 25.0000.", "| 4 | sfadamw | 5e-3 | 0.9 | 50 | stopped (step 30) |",
		"diverged (step 17)", "| 7 | sfadamw | 1e-4 | 0.9 | 0 | failed |"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("Markdown lacks %q:\n%s", s, md)
		}
	}
	var doc SearchTable
	js, _ := store.Get(ctx, keys.Table(out, "search", "json"))
	if err := json.Unmarshal(js, &doc); err != nil || len(doc.Rows) != 7 || doc.Best() == nil || *doc.Best().Metric != 25 {
		t.Errorf("JSON %s: %v", js, err)
	}
}

// TestSearchNoState checks that a search whose state is absent writes no search table.
func TestSearchNoState(t *testing.T) {
	m, store := searchStore(t)
	written, err := Build(context.Background(), store, m, Options{SweepID: "sw"})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range written {
		if strings.Contains(k, "search") {
			t.Errorf("wrote %s without a search state", k)
		}
	}
}

// TestSearchMarkdownRows checks that the Markdown of a long search shows its first rows
// and says how many more the CSV holds.
func TestSearchMarkdownRows(t *testing.T) {
	m, err := sweeps.Parse([]byte(searchManifest))
	if err != nil {
		t.Fatal(err)
	}
	st := &search.State{}
	for i := range 250 {
		v := float64(1000 - i)
		st.Candidates = append(st.Candidates, search.Candidate{Index: i, Point: search.Point{"lr": 1e-3, "beta1": 0.9, "c": 50},
			Status: search.StatusCompleted, Values: map[int]float64{90: 3}, Final: &v})
	}
	tab := NewSearchTable(m, st)
	var md, c bytes.Buffer
	if err := tab.Write(&md, FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	if err := tab.Write(&c, FormatCSV); err != nil {
		t.Fatal(err)
	}
	if rows := strings.Count(md.String(), "\n| "); rows != 1+SearchMarkdownRows+1 {
		t.Errorf("%d Markdown rows, want the header, its rule and %d", rows, SearchMarkdownRows)
	}
	if !strings.Contains(md.String(), "150 more in the CSV") || strings.Count(c.String(), "\n") != 251 {
		t.Errorf("long search: Markdown\n%s", md.String()[len(md.String())-300:])
	}
}

// TestSearchPlotLayout checks the C sensitivity plot: log x with vanilla labelled at its
// left edge, completed dots and stopped triangles in the legend.
func TestSearchPlotLayout(t *testing.T) {
	m, err := sweeps.Parse([]byte(searchManifest))
	if err != nil {
		t.Fatal(err)
	}
	tab := NewSearchTable(m, searchState())
	f, err := SearchPlot(tab, "c")
	if err != nil {
		t.Fatal(err)
	}
	svg := renderFigure(t, f, figure.FormatSVG)
	for _, s := range []string{">vanilla<", "the line through the best at each c<", "stopped (triangles)<", ">c<", ">val_loss at the last rung<"} {
		if !bytes.Contains(svg, []byte(s)) {
			t.Errorf("C plot lacks %s", s)
		}
	}
	if _, err := SearchPlot(tab, "betas"); err == nil {
		t.Error("a plot of the (β1, β2) index")
	}
	if _, err := SearchPlot(NewSearchTable(m, &search.State{}), "lr"); err == nil {
		t.Error("a plot of no configuration")
	}
}

// The line of a search plot joins the best metric of the completed configurations at each
// value of the parameter, sorted by it: recomputed here from the state's candidates
// (two completed at β1 = 0.95, of metrics 25 and 30, give the line its 25 there).
func TestSearchPlotBestLine(t *testing.T) {
	m, err := sweeps.Parse([]byte(searchManifest))
	if err != nil {
		t.Fatal(err)
	}
	st := searchState()
	tab := NewSearchTable(m, st)
	for _, param := range []string{"lr", "beta1"} {
		best := map[float64]float64{}
		for _, c := range st.Candidates {
			if c.Status != search.StatusCompleted {
				continue
			}
			x := c.Point[param]
			if y, ok := best[x]; !ok || *c.Final < y {
				best[x] = *c.Final
			}
		}
		ss, err := searchPlotSeries(tab, param)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, p := range ss.best {
			got = append(got, fmt.Sprintf("%g:%g", p.X, p.Y))
			if i > 0 && p.X <= ss.best[i-1].X {
				t.Errorf("%s: the line goes back, from %g to %g", param, ss.best[i-1].X, p.X)
			}
			if y, ok := best[p.X]; !ok || y != p.Y {
				t.Errorf("%s: the line is at %g at %g, the best completed there is %v (%v)", param, p.Y, p.X, y, ok)
			}
		}
		if len(ss.best) != len(best) || len(ss.metric) != 3 {
			t.Errorf("%s: line %v through %d values, %d points; want one per value of the %d, and the 3 completed", param, got, len(ss.best), len(ss.metric), len(best))
		}
	}
}
