package report

// A faceted figure drawn: its panels, their lines, marks and shared axes, and the legend
// beside them (the layout is described in facets.go).

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/sfsweep/sfsweep/internal/figure"
)

// seriesKind is a kind of series of a plot (an iterate; the loss before or after a
// probe): its legend text and dash pattern.
type seriesKind struct {
	text   string
	dashes []vg.Length // nil: solid
}

// facetSpec is what a sweep plot sets of the shared layout.
type facetSpec struct {
	title       string  // the figure's title, at the head of the legend
	xLabel      string  // under the bottom panels
	xScale      float64 // x values are divided by it; 0 for 1
	xFrom0      bool    // the x axis starts at 0
	kinds       []seriesKind
	kindHeading string  // the legend's heading of the kinds
	markAll     bool    // mark every point (a probe's checkpoints), not only a few to tell lines apart
	trimEarly   bool    // the top of the loss axis ignores the first tenth of the x axis
	yMin, yMax  float64 // a fixed loss axis; both 0 fit it to the lines
	seeds       int     // the seeds each line was run with; 0: the most any line has
	empty       error   // returned when nothing finite is left to draw
}

// facetFigure is a built faceted figure and where its parts are.
type facetFigure struct {
	fig    *figure.Figure
	panels []*plot.Plot  // in order of facets, row by row
	key    *legend       // drawn from the top left of the data area of fig.Plots[0][last]
	stops  []plotter.XYs // by panel: where the lines a search stopped end, each with a cross
}

// figureOf returns a built faceted figure's image, or the error that building it met.
func figureOf(ff *facetFigure, err error) (*figure.Figure, error) {
	if err != nil {
		return nil, err
	}
	return ff.fig, nil
}

// Panel sizes: the data area of a panel is about panelW × panelH.
const (
	panelW = 2.3 * vg.Inch
	panelH = 1.75 * vg.Inch
)

// build averages the series' seeds and lays the lines out in panels with the legend
// right of them.
func (s facetSpec) build(series []seedSeries) (*facetFigure, error) {
	scale := cmp.Or(s.xScale, 1)
	var lines []meanLine
	xlo, xhi := math.Inf(1), math.Inf(-1)
	for _, ml := range average(series) {
		drawn := false
		for i := range ml.xs {
			ml.xs[i] /= scale
			if finite(ml.mean[i]) {
				drawn, xlo, xhi = true, min(xlo, ml.xs[i]), max(xhi, ml.xs[i])
			}
		}
		if drawn {
			lines = append(lines, ml)
		}
	}
	if len(lines) == 0 {
		return nil, s.empty
	}
	if s.xFrom0 {
		xlo = min(xlo, 0)
	}
	if xlo == xhi {
		xlo, xhi = xlo-0.5, xhi+0.5
	}
	ylo, yhi := s.yMin, s.yMax
	if ylo == 0 && yhi == 0 {
		ylo, yhi = lossRange(lines, s.trimEarly, xlo+(xhi-xlo)/10)
	}

	var panels []panel
	for _, ml := range lines { // in order of facets
		if n := len(panels); n == 0 || panels[n-1].facet != facetOf(ml.line) {
			panels = append(panels, panel{facet: facetOf(ml.line)})
		}
		panels[len(panels)-1].lines = append(panels[len(panels)-1].lines, ml)
	}
	pal := newPalette(lines)
	marked := varying(lines, facetOf)
	across := varying(lines, func(Line) facet { return facet{} })
	var marks []Line // the marker keys, of the lines of panels that need markers
	for i, pn := range panels {
		panels[i].own = varying(pn.lines, facetOf)
		if !panels[i].own.none() {
			for _, ml := range pn.lines {
				marks = append(marks, marked.of(ml.line))
			}
		}
	}
	slices.SortFunc(marks, compareLines)
	marks = slices.Compact(marks)

	cols := min(len(panels), 3)
	if len(panels) == 4 {
		cols = 2
	}
	rows := (len(panels) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for r := range grid {
		grid[r] = make([]*plot.Plot, cols+1)
	}
	ff := &facetFigure{}
	named := !panels[len(panels)-1].facet.sf
	for i, pn := range panels {
		title := pn.facet.title(named)
		if t := across.minus(pn.own).text(pn.lines[0].line); t != "" {
			title += "\n" + t
		}
		p, stops, err := s.draw(pn, title, pal, marked, marks)
		if err != nil {
			return nil, err
		}
		ff.stops = append(ff.stops, stops)
		if i%cols == 0 {
			p.Y.Label.Text = "validation loss"
		}
		if i+cols >= len(panels) { // nothing below
			p.X.Label.Text = s.xLabel
		}
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = xlo, xhi, ylo, yhi
		grid[i/cols][i%cols] = p
		ff.panels = append(ff.panels, p)
	}

	ff.key = s.legend(lines, pal, marked, marks)
	lp := plot.New()
	lp.HideAxes()
	lp.Add(ff.key)
	grid[0][cols] = lp

	kw, kh := ff.key.size()
	dataW := max(panelW, kw+vg.Points(4))
	width := vg.Length(cols+1)*dataW + vg.Length(cols)*0.75*vg.Inch + 0.2*vg.Inch
	height := max(vg.Length(rows)*(panelH+0.95*vg.Inch), kh+0.75*vg.Inch)
	ff.fig = &figure.Figure{Plots: grid, Width: width, Height: height}
	return ff, nil
}

// panel is the lines of one facet, in order, and the fields in which they differ.
type panel struct {
	facet facet
	lines []meanLine
	own   fields
}

// draw returns a panel's plot, without axis labels: the seeds' bands under the lines, and
// markers at every point (markAll) or, where the panel's lines differ in lr, β2 or batch
// size, a few on each line, its shape the line's key (marked) among marks.
func (s facetSpec) draw(pn panel, title string, pal palette, marked fields, marks []Line) (*plot.Plot, plotter.XYs, error) {
	p := linePlot(title, "")
	p.Y.Label.Text = ""
	var stops plotter.XYs
	for _, ml := range pn.lines {
		if ml.n > 1 {
			p.Add(&band{xs: ml.xs, lo: ml.lo, hi: ml.hi, fill: translucent(pal.color(ml.line))})
		}
	}
	for _, ml := range pn.lines {
		col := pal.color(ml.line)
		k := max(slices.Index(marks, marked.of(ml.line)), 0)
		glyph := markGlyph(col, k)
		style := draw.LineStyle{Color: col, Width: vg.Points(1.4), Dashes: s.kinds[ml.kind].dashes}
		if _, err := addSeries(p, ml.xs, ml.mean, style, glyph); err != nil {
			return nil, nil, err
		}
		if s.markAll || !pn.own.none() {
			p.Add(&markers{xys: markAt(ml.xs, ml.mean, s.markAll, k, len(marks)), glyph: glyph})
		}
		if end, ok := lastFinite(ml.xs, ml.mean); ok && ml.stopped {
			p.Add(&markers{xys: plotter.XYs{end}, glyph: stopGlyph(col)})
			stops = append(stops, end)
		}
	}
	return p, stops, nil
}

// stopGlyph marks where a search stopped a line.
func stopGlyph(c color.Color) draw.GlyphStyle {
	return draw.GlyphStyle{Color: c, Radius: vg.Points(3.5), Shape: draw.CrossGlyph{}}
}

// lastFinite is a line's last point with a finite value.
func lastFinite(xs, ys []float64) (plotter.XY, bool) {
	for i := len(xs) - 1; i >= 0; i-- {
		if finite(xs[i]) && finite(ys[i]) {
			return plotter.XY{X: xs[i], Y: ys[i]}, true
		}
	}
	return plotter.XY{}, false
}

// lossRange fits the loss axis to the lines and their bands, with a margin; its top
// ignores the points left of top (the first steps of training, far above the rest).
func lossRange(lines []meanLine, trim bool, top float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, ml := range lines {
		for i, x := range ml.xs {
			if !finite(ml.mean[i]) {
				continue
			}
			vlo, vhi := ml.mean[i], ml.mean[i]
			if finite(ml.lo[i]) && finite(ml.hi[i]) {
				vlo, vhi = ml.lo[i], ml.hi[i]
			}
			lo = min(lo, vlo)
			if !trim || x >= top {
				hi = max(hi, vhi)
			}
		}
	}
	if hi < lo { // every point left of top
		return lossRange(lines, false, 0)
	}
	pad := (hi - lo) * 0.04
	if pad == 0 {
		pad = max(math.Abs(hi)*0.05, 0.05)
	}
	return lo - pad, hi + pad
}

// markAt returns the points of a line to mark: every finite one (all), or about six
// spread along it, shifted by the line's marker k of n so that lines mark different x.
func markAt(xs, ys []float64, all bool, k, n int) plotter.XYs {
	var pts plotter.XYs
	for i := range xs {
		if finite(xs[i]) && finite(ys[i]) {
			pts = append(pts, plotter.XY{X: xs[i], Y: ys[i]})
		}
	}
	if all {
		return pts
	}
	step := max(1, len(pts)/6)
	var out plotter.XYs
	for j := k * step / max(n, 1); j < len(pts); j += step {
		out = append(out, pts[j])
	}
	return out
}

// legend builds the figure's key: its title; the colours (vanilla, the Cs, the other
// optimizers), each saying how many seeds its lines average where that is fewer than
// were run; the kinds of series drawn; the markers; and what the bands are.
func (s facetSpec) legend(lines []meanLine, pal palette, marked fields, marks []Line) *legend {
	runs := s.seeds
	for _, ml := range lines {
		runs = max(runs, ml.n)
	}
	type colour struct {
		name string
		line Line
		ns   []int
	}
	var colours []*colour // vanilla, the Cs, then the other optimizers by name and schedule
	kinds := make([]bool, len(s.kinds))
	banded, stopped := false, false
	for _, ml := range lines {
		l := ml.line
		kinds[ml.kind] = true
		stopped = stopped || ml.stopped
		banded = banded || ml.n > 1
		name := cmp.Or(scheduleText(l.Schedule), "default schedule")
		switch {
		case l.sf() && l.C == 0:
			name = "vanilla, C = 1/(1−β1)"
		case l.sf():
			name = "C = " + formatG(l.C)
		}
		i := slices.IndexFunc(colours, func(c *colour) bool { return colourOf(c.line) == colourOf(l) })
		if i < 0 {
			i = len(colours)
			colours = append(colours, &colour{name: name, line: l})
		}
		colours[i].ns = append(colours[i].ns, ml.n)
	}
	slices.SortStableFunc(colours, func(a, b *colour) int {
		return cmp.Or(compareBool(!a.line.sf(), !b.line.sf()), compareBool(a.line.C != 0, b.line.C != 0), cmp.Compare(a.line.C, b.line.C),
			cmp.Compare(a.line.Optimizer, b.line.Optimizer), cmp.Compare(a.line.Schedule, b.line.Schedule))
	})

	k := &legend{}
	section := ""
	for _, c := range colours {
		if h := familyText(c.line.Optimizer, ""); c.line.sf() && section != "SF-AdamW" {
			section = "SF-AdamW"
			k.heading(section)
		} else if !c.line.sf() && section != h {
			section = h
			k.heading(section)
		}
		line := draw.LineStyle{Color: pal.color(c.line), Width: vg.Points(2.5)}
		k.entry(c.name+seedsText(c.ns, runs), &line, nil, nil)
	}
	k.heading(s.kindHeading)
	for i, kd := range s.kinds {
		if kinds[i] {
			line := draw.LineStyle{Color: keyColor, Width: vg.Points(1.4), Dashes: kd.dashes}
			k.entry(kd.text, &line, nil, nil)
		}
	}
	if !marked.none() {
		k.heading("Markers")
		for i, m := range marks {
			g := markGlyph(keyColor, i)
			k.entry(marked.text(m), nil, &g, nil)
		}
	}
	if stopped {
		k.heading("Search")
		g := stopGlyph(keyColor)
		k.entry("stopped early at a rung", nil, &g, nil)
	}
	if banded {
		k.heading("Seeds")
		line := draw.LineStyle{Color: keyColor, Width: vg.Points(1.4)}
		k.entry("line: their mean", &line, nil, nil)
		k.entry("band: lowest to highest", nil, nil, translucent(keyColor))
	}
	k.setTitle(s.title)
	return k
}

// seedsText notes the seeds a colour's lines average when some average fewer than runs:
// " (n=2 of 3)", " (n=1–3 of 3)".
func seedsText(ns []int, runs int) string {
	lo, hi := slices.Min(ns), slices.Max(ns)
	switch {
	case lo == runs:
		return ""
	case lo == hi:
		return fmt.Sprintf(" (n=%d of %d)", lo, runs)
	}
	return fmt.Sprintf(" (n=%d–%d of %d)", lo, hi, runs)
}
