package report

// The layout of the faceted plots: seeds averaged, colours, the legend outside the
// panels, the panels themselves.

import (
	"fmt"
	"image/color"
	"math"
	"reflect"
	"slices"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/sfsweep/sfsweep/training"

	"github.com/sfsweep/sfsweep/internal/figure"
)

// TestSeedsAveraged checks the mean and band of a line's seeds against a hand computation:
// seed 3 has no evaluation at x = 20, so the line skips it; a NaN in seed 2 at x = 30 makes
// the point there not finite; seed order and repeated points do not matter.
func TestSeedsAveraged(t *testing.T) {
	l := sfLine(0.9, 50)
	series := []seedSeries{
		{line: l, seed: 3, xs: []float64{30, 10, 40}, ys: []float64{3.3, 4.3, 3.0}},
		{line: l, seed: 1, xs: []float64{10, 20, 30, 40, 10}, ys: []float64{4.0, 3.6, 3.2, 2.9, 9}},
		{line: l, seed: 2, xs: []float64{40, 30, 20, 10}, ys: []float64{3.1, math.NaN(), 3.5, 4.2}},
		{line: adamWLine(1e-3), seed: 1, xs: []float64{10}, ys: []float64{5}},
	}
	got := average(series)
	if len(got) != 2 || got[0].line != l || got[0].n != 3 || got[1].n != 1 {
		t.Fatalf("average = %+v: want the SF-AdamW line of 3 seeds, then AdamW of 1", got)
	}
	m := got[0]
	// x = 10: (4.0 + 4.2 + 4.3)/3 = 4.1666…, lowest 4.0, highest 4.3; x = 40: 9.0/3 = 3.0
	if !slices.Equal(m.xs, []float64{10, 30, 40}) {
		t.Fatalf("xs %v, want 10, 30, 40 (20 lacks seed 3)", m.xs)
	}
	if m.mean[0] != (4.0+4.2+4.3)/3 || m.lo[0] != 4.0 || m.hi[0] != 4.3 {
		t.Errorf("x = 10: mean %v [%v, %v], want %v [4, 4.3]", m.mean[0], m.lo[0], m.hi[0], (4.0+4.2+4.3)/3)
	}
	if !math.IsNaN(m.mean[1]) {
		t.Errorf("x = 30: mean %v, want NaN (seed 2 is NaN there)", m.mean[1])
	}
	if math.Abs(m.mean[2]-3.0) > 1e-15 || m.lo[2] != 2.9 || m.hi[2] != 3.1 {
		t.Errorf("x = 40: mean %v [%v, %v], want 3 [2.9, 3.1]", m.mean[2], m.lo[2], m.hi[2])
	}
	slices.Reverse(series)
	if again := average(series); !reflect.DeepEqual(fmt.Sprint(again), fmt.Sprint(got)) {
		t.Errorf("seeds in another order average to %v, want %v", again, got)
	}
}

// TestLineColours checks the colours: the Cs in order along viridis on a log scale (the
// geometric mean of the extremes in the middle of the range used), vanilla black, AdamW
// apart from both, and a C the same colour in every panel.
func TestLineColours(t *testing.T) {
	var lines []meanLine
	for _, c := range []float64{500, 5, 50, 0, 20, 200} {
		lines = append(lines, meanLine{line: sfLine(0.9, c)}, meanLine{line: sfLine(0.95, c)})
	}
	cosine := Line{Optimizer: training.AdamW, Schedule: "cosine", LR: 1e-3, Beta1: 0.9, Beta2: 0.95}
	lines = append(lines, meanLine{line: adamWLine(1e-3)}, meanLine{line: adamWLine(2e-3)}, meanLine{line: cosine})
	pal := newPalette(lines)
	if !slices.Equal(pal.cs, []float64{5, 20, 50, 200, 500}) {
		t.Fatalf("palette Cs %v", pal.cs)
	}
	// position of each C's colour on viridis, found by search
	pos := func(c color.RGBA) float64 {
		best, at := math.Inf(1), -1.0
		for i := range 1001 {
			v := viridisAt(float64(i) / 1000)
			d := math.Abs(float64(v.R)-float64(c.R)) + math.Abs(float64(v.G)-float64(c.G)) + math.Abs(float64(v.B)-float64(c.B))
			if d < best {
				best, at = d, float64(i)/1000
			}
		}
		if best > 3 {
			t.Errorf("colour %v is not on viridis", c)
		}
		return at
	}
	prev := -1.0
	for _, c := range pal.cs {
		if a, b := pal.color(sfLine(0.9, c)), pal.color(sfLine(0.95, c)); a != b {
			t.Errorf("C = %v: %v at β1 = 0.9, %v at 0.95", c, a, b)
		}
		p := pos(pal.color(sfLine(0.9, c)))
		if p <= prev {
			t.Errorf("C = %v at %.3f on viridis, not after the smaller C at %.3f", c, p, prev)
		}
		prev = p
	}
	lo, hi := pos(pal.color(sfLine(0.9, 5))), pos(pal.color(sfLine(0.9, 500)))
	if mid := pos(cColor(50, pal.cs)); math.Abs(mid-(lo+hi)/2) > 0.01 {
		t.Errorf("C = 50 (the geometric mean of 5 and 500) at %.3f, want %.3f: not a log scale", mid, (lo+hi)/2)
	}
	vanilla, adamW := pal.color(sfLine(0.9, 0)), pal.color(adamWLine(1e-3))
	if vanilla != (color.RGBA{0, 0, 0, 255}) {
		t.Errorf("vanilla %v, want black", vanilla)
	}
	if adamW != pal.color(adamWLine(2e-3)) {
		t.Error("two AdamW lines of one schedule differ in colour (markers tell them apart)")
	}
	for _, c := range pal.cs {
		if col := pal.color(sfLine(0.9, c)); col == vanilla || col == adamW {
			t.Errorf("C = %v shares its colour %v with vanilla or AdamW", c, col)
		}
	}
	if adamW == vanilla || adamW == pal.color(cosine) || slices.Contains(pal.cs, 0) {
		t.Errorf("AdamW %v: not its own colour per schedule", adamW)
	}
}

// canvasRecorder records the data area its plot is drawn in.
type canvasRecorder struct{ r *vg.Rectangle }

func (c canvasRecorder) Plot(dc draw.Canvas, _ *plot.Plot) { *c.r = dc.Rectangle }

// TestLegendOutside renders figures of one to seven panels and finds, from the layout the
// renderer gives each plot, that the legend lies inside the figure and outside every
// panel's data area, right of the panels, and that panels share their axes.
func TestLegendOutside(t *testing.T) {
	many := func(n int) []Curve {
		var out []Curve
		for i := range n {
			for _, c := range []float64{0, 10, 100, 1000} {
				out = append(out, sfCurve(sfLine(0.1+0.1*float64(i), c), 1, 0.01*float64(i), 0))
			}
		}
		return out
	}
	long := "A sweep whose name is long enough to wrap over several lines of the legend: validation loss"
	for _, tc := range []struct {
		name  string
		build func() (*facetFigure, error)
	}{
		{"one panel", func() (*facetFigure, error) { return decayProbeFigure(paperProbes()[:1], DecayProbeOptions{}) }},
		{"two panels", func() (*facetFigure, error) { return interpolationFigure(riverProfiles(), InterpolationOptions{}) }},
		{"four panels", func() (*facetFigure, error) { return curvesFigure(paperCurves(), CurvesOptions{Title: long}) }},
		{"C sweep", func() (*facetFigure, error) { return curvesFigure(cSweepCurves(), CurvesOptions{Seeds: 5}) }},
		{"seven panels", func() (*facetFigure, error) { return curvesFigure(many(7), CurvesOptions{}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ff, err := tc.build()
			if err != nil {
				t.Fatal(err)
			}
			rects := make([][]vg.Rectangle, len(ff.fig.Plots))
			for i, row := range ff.fig.Plots {
				rects[i] = make([]vg.Rectangle, len(row))
				for j, p := range row {
					if p != nil {
						p.Add(canvasRecorder{&rects[i][j]})
					}
				}
			}
			renderFigure(t, ff.fig, figure.FormatPNG)
			last := len(ff.fig.Plots[0]) - 1
			key := ff.key.rect(rects[0][last])
			if key.Min.X < 0 || key.Min.Y < 0 || key.Max.X > ff.fig.Width || key.Max.Y > ff.fig.Height {
				t.Errorf("legend %v runs out of the figure (%v × %v)", key, ff.fig.Width, ff.fig.Height)
			}
			panels := 0
			var first vg.Rectangle
			for i, row := range ff.fig.Plots {
				for j, p := range row {
					if p == nil || (i == 0 && j == last) {
						continue
					}
					if j == last {
						t.Errorf("panel in the legend's column at row %d", i)
					}
					d := rects[i][j]
					if d.Min.X < key.Max.X && key.Min.X < d.Max.X && d.Min.Y < key.Max.Y && key.Min.Y < d.Max.Y {
						t.Errorf("legend %v overlaps the data area %v of panel (%d, %d)", key, d, i, j)
					}
					if d.Max.X > key.Min.X {
						t.Errorf("panel (%d, %d) ends at %v, right of the legend's start %v", i, j, d.Max.X, key.Min.X)
					}
					if panels == 0 {
						first = d
					} else if sz, fs := d.Size(), first.Size(); math.Abs(float64(sz.X-fs.X)) > 1 || math.Abs(float64(sz.Y-fs.Y)) > 1 {
						t.Errorf("panel (%d, %d) is %v, the first %v", i, j, d.Size(), first.Size())
					}
					if p.Y.Min != ff.panels[0].Y.Min || p.Y.Max != ff.panels[0].Y.Max || p.X.Max != ff.panels[0].X.Max {
						t.Errorf("panel (%d, %d) has its own axes", i, j)
					}
					panels++
				}
			}
			if panels != len(ff.panels) {
				t.Errorf("%d panels laid out, %d built", panels, len(ff.panels))
			}
		})
	}
}

// TestFacets checks what goes where in the C sweep: one panel per β1 and one for AdamW,
// in order; what the figure varies but a panel does not in its title; markers only for
// what varies within a panel (lr, in AdamW's); only the iterates drawn in the legend; a
// line averaging fewer seeds than were run saying so.
func TestFacets(t *testing.T) {
	ff, err := curvesFigure(cSweepCurves(), CurvesOptions{Seeds: 3})
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, p := range ff.panels {
		titles = append(titles, p.Title.Text)
	}
	want := []string{"SF-AdamW, β1 = 0.5\nlr = 2e-3, β2 = 0.99", "SF-AdamW, β1 = 0.9\nlr = 2e-3, β2 = 0.99",
		"SF-AdamW, β1 = 0.95\nlr = 2e-3, β2 = 0.99", "AdamW, constant LR, β1 = 0.9\nβ2 = 0.95"}
	if !slices.Equal(titles, want) {
		t.Errorf("panels %q, want %q", titles, want)
	}
	texts := keyTexts(ff.key)
	for _, s := range []string{"vanilla, C = 1/(1−β1)", "C = 5", "C = 200", "C = 500 (n=2–3 of 3)", "constant LR", "x", "w", "EWA of w", "lr = 1e-3", "lr = 2e-3"} {
		if !slices.Contains(texts, s) {
			t.Errorf("legend %q lacks %q", texts, s)
		}
	}
	for _, s := range []string{"y", "EWA of x", "C = 50 (n=2 of 3)", "C = 500"} {
		if slices.Contains(texts, s) {
			t.Errorf("legend %q has %q", texts, s)
		}
	}
	if i, j := slices.Index(texts, "C = 5"), slices.Index(texts, "C = 500 (n=2–3 of 3)"); i > j || slices.Index(texts, "vanilla, C = 1/(1−β1)") > i {
		t.Errorf("legend %q: vanilla, then the Cs ascending", texts)
	}

	// One SF-AdamW figure: panels are titled by β1 alone.
	ff, err = curvesFigure(paperCurves()[:3], CurvesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ff.panels[0].Title.Text; got != "β1 = 0.1" {
		t.Errorf("panel %q, want β1 = 0.1", got)
	}
}
