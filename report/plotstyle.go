package report

// What the plots share: series checks, axes, finite segments, glyphs and colour maps.

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/sfadamw"
)

// checkPlotInput checks the n series of a line plot: at least one, the loss axis's range,
// every point (check returns the error of point j of series i, or nil), and the labels and
// point counts (checkSeries).
func checkPlotInput(field string, n int, yMin, yMax float64, label func(i int) string, points func(i int) int, check func(i, j int) error) error {
	if n == 0 {
		return &sfadamw.ConfigError{Field: field, Value: 0, Reason: "no trials to plot"}
	}
	if err := checkYRange(yMin, yMax); err != nil {
		return err
	}
	labels := make([]string, n)
	for i := range n {
		labels[i] = label(i)
		for j := range points(i) {
			if err := check(i, j); err != nil {
				return err
			}
		}
	}
	return checkSeries(field, labels, points)
}

// linePlot starts a line plot of the validation loss against x, with a grid.
func linePlot(title, x string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = "validation loss"
	p.Add(plotter.NewGrid())
	return p
}

// checkSeries checks the labels and point counts of the series of a plot: each label one
// non-empty line, unique, and each series with at least one point.
func checkSeries(field string, labels []string, points func(int) int) error {
	for i, l := range labels {
		f := fmt.Sprintf("%s[%d].Label", field, i)
		if l == "" {
			return &sfadamw.ConfigError{Field: f, Value: `""`, Reason: "empty: the legend needs a label"}
		}
		if err := checkPlainText(f, l); err != nil {
			return err
		}
		if j := slices.Index(labels[:i], l); j >= 0 {
			return &sfadamw.ConfigError{Field: f, Value: strconv.Quote(l), Reason: fmt.Sprintf("same as %s[%d].Label", field, j)}
		}
		if points(i) == 0 {
			return &sfadamw.ConfigError{Field: fmt.Sprintf("%s[%d].Points", field, i), Value: 0, Reason: "empty: no point to plot"}
		}
	}
	return nil
}

func checkYRange(lo, hi float64) error {
	if lo == 0 && hi == 0 {
		return nil
	}
	if math.IsNaN(lo) || math.IsInf(lo, 0) {
		return &sfadamw.ConfigError{Field: "opts.YMin", Value: lo, Reason: "must be finite"}
	}
	if math.IsNaN(hi) || math.IsInf(hi, 0) || !(hi > lo) {
		return &sfadamw.ConfigError{Field: "opts.YMax", Value: hi, Reason: fmt.Sprintf("must be finite and above YMin = %g", lo)}
	}
	return nil
}

// setYRange fixes the loss axis when asked.
func setYRange(p *plot.Plot, lo, hi float64) {
	if lo != 0 || hi != 0 {
		p.Y.Min, p.Y.Max = lo, hi
	}
}

// tokenUnit returns the label of a tokens axis and the divisor that puts its largest value
// in readable units: "tokens (B)" and 1e9 for 2.5e9 tokens.
func tokenUnit(most int64) (string, float64) {
	switch {
	case most >= 1e9:
		return "tokens (B)", 1e9
	case most >= 1e6:
		return "tokens (M)", 1e6
	case most >= 1e3:
		return "tokens (K)", 1e3
	}
	return "tokens", 1
}

// finiteSegments splits a series at its non-finite values: each run of consecutive points
// with finite x and y is one segment.
func finiteSegments(xs, ys []float64) []plotter.XYs {
	var segs []plotter.XYs
	var cur plotter.XYs
	for i := range xs {
		if math.IsNaN(xs[i]) || math.IsInf(xs[i], 0) || math.IsNaN(ys[i]) || math.IsInf(ys[i], 0) {
			if len(cur) > 0 {
				segs = append(segs, cur)
				cur = nil
			}
			continue
		}
		cur = append(cur, plotter.XY{X: xs[i], Y: ys[i]})
	}
	if len(cur) > 0 {
		segs = append(segs, cur)
	}
	return segs
}

// addSeries draws the finite segments of a series as lines, a lone point as a glyph, and
// returns the number of points drawn.
func addSeries(p *plot.Plot, xs, ys []float64, style draw.LineStyle, lone draw.GlyphStyle) (int, error) {
	n := 0
	for _, seg := range finiteSegments(xs, ys) {
		n += len(seg)
		if len(seg) == 1 {
			s, err := plotter.NewScatter(seg)
			if err != nil {
				return 0, err
			}
			s.GlyphStyle = lone
			p.Add(s)
			continue
		}
		l, err := plotter.NewLine(seg)
		if err != nil {
			return 0, err
		}
		l.LineStyle = style
		p.Add(l)
	}
	return n, nil
}

// addGlyphs marks every finite point of a series.
func addGlyphs(p *plot.Plot, xs, ys []float64, g draw.GlyphStyle) {
	for _, seg := range finiteSegments(xs, ys) {
		if len(seg) > 1 { // addSeries marked the lone points
			p.Add(&plotter.Scatter{XYs: seg, GlyphStyle: g})
		}
	}
}

func dotGlyph(c color.Color) draw.GlyphStyle {
	return draw.GlyphStyle{Color: c, Radius: vg.Points(2), Shape: draw.CircleGlyph{}}
}

func triangleGlyph(c color.Color) draw.GlyphStyle {
	return draw.GlyphStyle{Color: c, Radius: vg.Points(2.6), Shape: draw.PyramidGlyph{}}
}

// Heat-map cell colours for cells without a finished value.
var (
	missingFill = color.RGBA{217, 217, 217, 255} // not run: light grey
	failedFill  = color.RGBA{140, 140, 140, 255} // failed: dark grey
	divergeFill = color.RGBA{255, 255, 255, 255} // diverged: white under a red cross
	divergeMark = color.RGBA{200, 30, 30, 255}
)

// viridis holds nine evenly spaced stops of the viridis colour map, dark to light.
var viridis = []color.RGBA{
	{68, 1, 84, 255}, {71, 45, 123, 255}, {59, 82, 139, 255}, {44, 114, 142, 255}, {33, 145, 140, 255},
	{40, 174, 128, 255}, {94, 201, 98, 255}, {173, 220, 48, 255}, {253, 231, 37, 255},
}

// viridisAt interpolates the viridis map linearly at f ∈ [0, 1] (0 dark, 1 light).
func viridisAt(f float64) color.RGBA {
	f = min(max(f, 0), 1) * float64(len(viridis)-1)
	i := min(int(f), len(viridis)-2)
	t := f - float64(i)
	a, b := viridis[i], viridis[i+1]
	mix := func(u, v uint8) uint8 { return uint8(math.Round(float64(u) + t*(float64(v)-float64(u)))) }
	return color.RGBA{mix(a.R, b.R), mix(a.G, b.G), mix(a.B, b.B), 255}
}

// heatScale maps test perplexities to colours: linear in log perplexity (the test loss)
// between the table's lowest and highest finished values, the lowest (best) light yellow
// and the highest dark purple.
type heatScale struct{ lo, hi float64 } // log perplexities; lo > hi when the table has none

func (s heatScale) color(ppl float64) color.RGBA {
	if s.hi == s.lo {
		return viridisAt(1)
	}
	return viridisAt((s.hi - math.Log(ppl)) / (s.hi - s.lo))
}

// plottable reports whether a cell holds a value to colour: finished, finite and positive.
func plottable(c Cell) bool {
	return c.Status == status.Completed && c.Value > 0 && !math.IsInf(c.Value, 0)
}
