package report

import (
	"bytes"
	"image/color"
	"math"
	"regexp"
	"slices"
	"testing"

	"github.com/sfsweep/sfsweep/internal/figure"
	"github.com/sfsweep/sfsweep/internal/status"
)

// TestHeatScale checks the colour scale against its closed form: linear in log
// perplexity, so the geometric mean of the extremes takes the middle viridis stop.
func TestHeatScale(t *testing.T) {
	lo, hi := 23.60, 67.20
	s := heatScale{lo: math.Log(lo), hi: math.Log(hi)}
	for _, tc := range []struct {
		ppl  float64
		want int // viridis stop
	}{
		{lo, 8}, {hi, 0},
		{math.Sqrt(lo * hi), 4},
		{math.Exp(math.Log(lo) + 0.25*(math.Log(hi)-math.Log(lo))), 6},
		{math.Exp(math.Log(lo) + 0.875*(math.Log(hi)-math.Log(lo))), 1},
	} {
		if got := s.color(tc.ppl); got != viridis[tc.want] {
			t.Errorf("color(%v) = %v, want stop %d %v", tc.ppl, got, tc.want, viridis[tc.want])
		}
	}
	a, b := viridis[0], viridis[1]
	half := func(u, v uint8) uint8 { return uint8(math.Round((float64(u) + float64(v)) / 2)) }
	want := color.RGBA{half(a.R, b.R), half(a.G, b.G), half(a.B, b.B), 255}
	if got := viridisAt(1.0 / 16); got != want {
		t.Errorf("viridisAt(1/16) = %v, want the midpoint of the first two stops %v", got, want)
	}
}

var boldText = regexp.MustCompile(`font-weight:bold[^>]*>([^<]*)</text>`)

// TestHeatMapCells checks the cells of the paper's tab:c_sweep_05M in the SVG: every value
// written, the row minima read off the paper in bold, one light grey fill per "--" cell
// (and the legend's), the lowest and highest perplexity at the ends of the scale.
func TestHeatMapCells(t *testing.T) {
	tab := paperHeatTable(t)
	f, err := HeatMap(tab)
	if err != nil {
		t.Fatal(err)
	}
	svg := renderFigure(t, f, figure.FormatSVG)
	notRun := 0
	for _, c := range tab.Cells {
		switch c.Status {
		case status.Completed:
			if s := ">" + formatPerplexity(c.Value) + "<"; !bytes.Contains(svg, []byte(s)) {
				t.Errorf("no cell text %s", s)
			}
		case status.Missing:
			notRun++
		}
	}
	if notRun != 9 {
		t.Fatalf("%d cells not run, the paper has 9", notRun)
	}
	if got := bytes.Count(svg, []byte(">--<")); got != notRun {
		t.Errorf("%d cells read --, want %d", got, notRun)
	}
	if got := bytes.Count(svg, []byte("fill:#D9D9D9")); got != notRun+1 {
		t.Errorf("%d light grey fills, want %d cells and the legend", got, notRun+1)
	}
	var bold []string
	for _, m := range boldText.FindAllSubmatch(svg, -1) {
		bold = append(bold, string(m[1]))
	}
	slices.Sort(bold)
	if want := []string{"23.60", "23.97", "29.32", "35.80"}; !slices.Equal(bold, want) {
		t.Errorf("bold cells %q, want the paper's row minima %q", bold, want)
	}
	// 23.60 (best) and 67.20 (worst) fill a cell and a legend swatch each.
	for _, fill := range []string{"fill:#FDE725", "fill:#440154"} {
		if got := bytes.Count(svg, []byte(fill)); got != 2 {
			t.Errorf("%d paths with %s, want 2", got, fill)
		}
	}

	// Shrunk to a fifth of its width, the cells are too narrow for their values.
	f.Width /= 5
	small := renderFigure(t, f, figure.FormatSVG)
	if bytes.Contains(small, []byte(">36.62<")) {
		t.Error("value written in a cell too narrow for it")
	}
	checkSVG(t, small)
}

// TestHeatMapStatuses checks the cells without a finished value: failed dark grey, each
// diverged cell a red cross (two strokes) with its step when known, and a finished cell
// holding a non-finite value (possible only in a table edited by hand) drawn as not run.
func TestHeatMapStatuses(t *testing.T) {
	tab := statusHeatTable(t)
	f, err := HeatMap(tab)
	if err != nil {
		t.Fatal(err)
	}
	svg := renderFigure(t, f, figure.FormatSVG)
	for _, tc := range []struct {
		what string
		want int
	}{
		{"fill:#8C8C8C", 2},   // the failed cell and its legend swatch
		{">failed<", 2},       // its text and its legend entry
		{"stroke:#C81E1E", 6}, // two diverged cells and the legend swatch, two strokes each
		{">step 1200<", 1},
		{"fill:#D9D9D9", 3}, // two cells not run and the legend swatch
	} {
		if got := bytes.Count(svg, []byte(tc.what)); got != tc.want {
			t.Errorf("%d × %s, want %d", got, tc.what, tc.want)
		}
	}

	tab.Cells[0].Value = math.NaN() // 110.8, finished
	f, err = HeatMap(tab)
	if err != nil {
		t.Fatal(err)
	}
	svg = renderFigure(t, f, figure.FormatSVG)
	checkSVG(t, svg)
	if got := bytes.Count(svg, []byte("fill:#D9D9D9")); got != 4 {
		t.Errorf("%d light grey fills with a NaN cell, want 4", got)
	}
	if bytes.Contains(svg, []byte(">110.8<")) {
		t.Error("the replaced value is still drawn")
	}
}
