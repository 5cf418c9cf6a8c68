package report

// The layout every sweep plot shares. The trials of one configuration (a Line) that differ
// only in seed are drawn as one line: their mean at each x that all of them have, over a
// light band from the lowest to the highest seed. Lines are faceted, one panel per β1 for
// SF-AdamW (vanilla and refined together) and one per schedule and β1 for AdamW, every
// panel on the same axes. Colour says C, on viridis by log C across the figure (vanilla
// black; AdamW colours of its own); the dash says the kind of series (the iterate, before
// or after a probe); a marker shape tells apart the lines of one panel and colour that
// differ in lr, β2 or batch size. The legend is a column right of the panels, outside
// every data area, headed by the figure's title.

import (
	"cmp"
	"fmt"
	"image/color"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/sfsweep/sfsweep/internal/figure"
	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training"
)

// Line is what one line of a sweep's plots stands for: a configuration of the sweep. The
// trials that differ only in seed share it and are drawn as one line, their mean.
type Line struct {
	Optimizer    string  // training.SFAdamW, training.AdamW (or another optimizer's name)
	Schedule     string  // the LR schedule of an optimizer other than SF-AdamW: constant, cosine, linear, wsd
	LR           float64 // peak learning rate
	Beta1, Beta2 float64
	C            float64 // refined SF-AdamW's C; 0 for vanilla (C = 1/(1−β1))
	BatchTokens  int     // tokens per step; 0 if not known
}

func (l Line) sf() bool { return l.Optimizer == training.SFAdamW }

// check checks a line's fields; field names the line ("curves[2].Line").
func (l Line) check(field string) error {
	if l.Optimizer == "" {
		return &sfadamw.ConfigError{Field: field + ".Optimizer", Value: `""`, Reason: "empty: the legend names the optimizer"}
	}
	for _, s := range []struct{ name, v string }{{"Optimizer", l.Optimizer}, {"Schedule", l.Schedule}} {
		if err := checkPlainText(field+"."+s.name, s.v); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"LR", l.LR}, {"Beta1", l.Beta1}, {"Beta2", l.Beta2}, {"C", l.C}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || (f.name == "C" && f.v < 0) {
			return &sfadamw.ConfigError{Field: field + "." + f.name, Value: f.v, Reason: "must be finite (C ≥ 0)"}
		}
	}
	if l.BatchTokens < 0 {
		return &sfadamw.ConfigError{Field: field + ".BatchTokens", Value: l.BatchTokens, Reason: "must be ≥ 0"}
	}
	return nil
}

// seriesID identifies a series given to a plot: two with equal IDs are refused.
type seriesID struct {
	line    Line
	seed    int
	decayed bool
}

// checkPlotInput checks the n series of a sweep plot: at least one, the loss axis's range,
// each series' line, at least one point each (points) and every point (check), and no two
// series of the same line, seed and kind (id).
func checkPlotInput(field string, n int, yMin, yMax float64, id func(i int) seriesID, points func(i int) int, check func(i, j int) error) error {
	if n == 0 {
		return &sfadamw.ConfigError{Field: field, Value: 0, Reason: "no trials to plot"}
	}
	if err := checkYRange(yMin, yMax); err != nil {
		return err
	}
	seen := make(map[seriesID]int, n)
	for i := range n {
		s := id(i)
		if err := s.line.check(fmt.Sprintf("%s[%d].Line", field, i)); err != nil {
			return err
		}
		if j, dup := seen[s]; dup {
			return &sfadamw.ConfigError{Field: fmt.Sprintf("%s[%d].Seed", field, i), Value: s.seed, Reason: fmt.Sprintf("same line and seed as %s[%d]", field, j)}
		}
		seen[s] = i
		if points(i) == 0 {
			return &sfadamw.ConfigError{Field: fmt.Sprintf("%s[%d].Points", field, i), Value: 0, Reason: "empty: no point to plot"}
		}
		for j := range points(i) {
			if err := check(i, j); err != nil {
				return err
			}
		}
	}
	return nil
}

// ---- seeds: one line per configuration ----

// seedSeries is one seed's values of one kind of series (an iterate; before or after a
// probe) of a line, at x in any order.
type seedSeries struct {
	line    Line
	seed    int
	kind    int
	stopped bool // a search stopped it early
	xs, ys  []float64
}

// meanLine is a line as drawn: the mean over a Line's seeds at each x that every one of
// them has, in order of x, and the lowest and highest seed there. A value that is not
// finite in any seed makes the point not finite.
type meanLine struct {
	line             Line
	kind             int
	n                int  // seeds averaged
	stopped          bool // a search stopped its seeds early: it ends with a cross
	xs, mean, lo, hi []float64
}

// average merges the seeds of each line and kind, summing in order of seed, so the same
// series give the same bits in any order. Of the points of one seed at one x, the first
// counts. A seed that has nothing of a kind leaves its line without that kind.
func average(series []seedSeries) []meanLine {
	type group struct {
		line Line
		kind int
	}
	seeds := map[Line][]int{}
	stopped := map[Line]bool{}
	values := map[group]map[int]map[float64]float64{} // seed → x → y
	for _, s := range series {
		stopped[s.line] = stopped[s.line] || s.stopped
		if !slices.Contains(seeds[s.line], s.seed) {
			seeds[s.line] = append(seeds[s.line], s.seed)
		}
		g := group{s.line, s.kind}
		if values[g] == nil {
			values[g] = map[int]map[float64]float64{}
		}
		at := values[g][s.seed]
		if at == nil {
			at = map[float64]float64{}
			values[g][s.seed] = at
		}
		for i, x := range s.xs {
			if _, ok := at[x]; !ok {
				at[x] = s.ys[i]
			}
		}
	}
	groups := slices.SortedFunc(maps.Keys(values), func(a, b group) int {
		return cmp.Or(compareLines(a.line, b.line), cmp.Compare(a.kind, b.kind))
	})
	var out []meanLine
	for _, g := range groups {
		ss := slices.Sorted(slices.Values(seeds[g.line]))
		bySeed := values[g]
		if len(bySeed) < len(ss) {
			continue
		}
		ml := meanLine{line: g.line, kind: g.kind, n: len(ss), stopped: stopped[g.line]}
	x:
		for _, x := range slices.Sorted(maps.Keys(bySeed[ss[0]])) {
			sum, lo, hi := 0.0, math.Inf(1), math.Inf(-1)
			for _, s := range ss {
				v, ok := bySeed[s][x]
				if !ok {
					continue x
				}
				sum, lo, hi = sum+v, min(lo, v), max(hi, v)
			}
			ml.xs = append(ml.xs, x)
			ml.mean = append(ml.mean, sum/float64(len(ss)))
			ml.lo, ml.hi = append(ml.lo, lo), append(ml.hi, hi)
		}
		out = append(out, ml)
	}
	return out
}

// ---- panels, colours and markers ----

// facet is a panel: the SF-AdamW lines of one β1, or the lines of another optimizer and
// schedule at one β1.
type facet struct {
	sf                  bool
	optimizer, schedule string // when not SF-AdamW
	beta1               float64
}

func facetOf(l Line) facet {
	if l.sf() {
		return facet{sf: true, beta1: l.Beta1}
	}
	return facet{optimizer: l.Optimizer, schedule: l.Schedule, beta1: l.Beta1}
}

// compareFacets orders panels: SF-AdamW by β1, then the other optimizers by name, schedule
// and β1.
func compareFacets(a, b facet) int {
	return cmp.Or(compareBool(b.sf, a.sf), cmp.Compare(a.optimizer, b.optimizer), cmp.Compare(a.schedule, b.schedule), cmp.Compare(a.beta1, b.beta1))
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// compareLines orders lines by panel, then C (vanilla last, so drawn on top), lr, β2 and
// batch size.
func compareLines(a, b Line) int {
	return cmp.Or(compareFacets(facetOf(a), facetOf(b)), compareBool(a.C == 0, b.C == 0), cmp.Compare(a.C, b.C),
		cmp.Compare(a.LR, b.LR), cmp.Compare(a.Beta2, b.Beta2), cmp.Compare(a.BatchTokens, b.BatchTokens))
}

// title is the panel's title: β1, after the optimizer where the figure has more than
// SF-AdamW (named).
func (f facet) title(named bool) string {
	b1 := "β1 = " + formatG(f.beta1)
	switch {
	case !f.sf:
		return familyText(f.optimizer, f.schedule) + ", " + b1
	case named:
		return "SF-AdamW, " + b1
	}
	return b1
}

// familyText names an optimizer other than SF-AdamW with its schedule: "AdamW, constant LR".
func familyText(optimizer, schedule string) string {
	name := optimizer
	if optimizer == training.AdamW {
		name = "AdamW"
	}
	if schedule == "" {
		return name
	}
	return name + ", " + scheduleText(schedule)
}

func scheduleText(s string) string {
	switch sfadamw.ScheduleKind(s) {
	case sfadamw.Constant:
		return "constant LR"
	case sfadamw.Cosine:
		return "cosine LR"
	case sfadamw.Linear:
		return "linear LR decay"
	case sfadamw.WSD:
		return "WSD"
	}
	return s
}

// Colours of the lines that C does not place on viridis, and of the legend's entries for
// dashes, markers and bands.
var (
	vanillaColor = color.RGBA{0, 0, 0, 255}
	familyColors = []color.RGBA{{214, 39, 40, 255}, {255, 127, 14, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}}
	keyColor     = color.RGBA{110, 110, 110, 255}
)

// family is an optimizer other than SF-AdamW with its schedule: a colour of its own.
type family struct{ optimizer, schedule string }

// palette gives lines their colours: SF-AdamW by C, vanilla black; every other optimizer
// and schedule one of familyColors.
type palette struct {
	cs       []float64 // the Cs > 0 of the SF-AdamW lines, ascending
	families []family  // in order
}

func newPalette(lines []meanLine) palette {
	var p palette
	for _, ml := range lines {
		l := ml.line
		switch {
		case !l.sf():
			p.families = append(p.families, family{l.Optimizer, l.Schedule})
		case l.C > 0:
			p.cs = append(p.cs, l.C)
		}
	}
	slices.Sort(p.cs)
	p.cs = slices.Compact(p.cs)
	slices.SortFunc(p.families, func(a, b family) int {
		return cmp.Or(cmp.Compare(a.optimizer, b.optimizer), cmp.Compare(a.schedule, b.schedule))
	})
	p.families = slices.Compact(p.families)
	return p
}

func (p palette) color(l Line) color.RGBA {
	switch {
	case !l.sf():
		return familyColors[slices.Index(p.families, family{l.Optimizer, l.Schedule})%len(familyColors)]
	case l.C == 0:
		return vanillaColor
	}
	return cColor(l.C, p.cs)
}

// cColor places c on viridis by log C between the least and the greatest of cs, from dark
// purple to light green: the yellow end is too light for a thin line on white.
func cColor(c float64, cs []float64) color.RGBA {
	const dark, light = 0.12, 0.85
	lo, hi := math.Log(cs[0]), math.Log(cs[len(cs)-1])
	if lo == hi {
		return viridisAt((dark + light) / 2)
	}
	return viridisAt(dark + (light-dark)*(math.Log(c)-lo)/(hi-lo))
}

// colourOf is what sets a line's colour: its C (SF-AdamW), else its optimizer and schedule.
func colourOf(l Line) Line {
	if l.sf() {
		return Line{Optimizer: l.Optimizer, C: l.C}
	}
	return Line{Optimizer: l.Optimizer, Schedule: l.Schedule}
}

// translucent is a band's fill: the line's colour at a sixth of its strength.
func translucent(c color.RGBA) color.NRGBA { return color.NRGBA{R: c.R, G: c.G, B: c.B, A: 40} }

// fields are the hyperparameters besides the panel and the colour that set lines apart:
// lr, β2 and batch size.
type fields struct{ lr, beta2, batch bool }

// varying returns the fields in which some line differs from another line of the same
// group (group: the panel, or one group for the whole figure).
func varying(lines []meanLine, group func(Line) facet) fields {
	var f fields
	first := map[facet]Line{}
	for _, ml := range lines {
		l := ml.line
		l0, ok := first[group(l)]
		if !ok {
			first[group(l)] = l
			continue
		}
		f.lr = f.lr || l.LR != l0.LR
		f.beta2 = f.beta2 || l.Beta2 != l0.Beta2
		f.batch = f.batch || l.BatchTokens != l0.BatchTokens
	}
	return f
}

func (f fields) none() bool { return !f.lr && !f.beta2 && !f.batch }

// minus returns the fields of f not in g.
func (f fields) minus(g fields) fields {
	return fields{lr: f.lr && !g.lr, beta2: f.beta2 && !g.beta2, batch: f.batch && !g.batch}
}

// of returns the line's values of the fields, the others zero: lines with equal values
// share a marker.
func (f fields) of(l Line) Line {
	var k Line
	if f.lr {
		k.LR = l.LR
	}
	if f.beta2 {
		k.Beta2 = l.Beta2
	}
	if f.batch {
		k.BatchTokens = l.BatchTokens
	}
	return k
}

// text writes the line's values of the fields: "lr = 2e-3, β2 = 0.99, batch 0.5M tokens".
func (f fields) text(l Line) string {
	var parts []string
	if f.lr {
		parts = append(parts, "lr = "+formatLR(l.LR))
	}
	if f.beta2 {
		parts = append(parts, "β2 = "+formatG(l.Beta2))
	}
	if f.batch {
		parts = append(parts, "batch "+batchText(l.BatchTokens)+" tokens")
	}
	return strings.Join(parts, ", ")
}

// batchText writes a batch in tokens as the paper does, in binary units: 0.5M, 2K.
func batchText(tokens int) string {
	switch v := float64(tokens); {
	case v >= 1<<18:
		return strconv.FormatFloat(v/(1<<20), 'g', 3, 64) + "M"
	case v >= 1<<10:
		return strconv.FormatFloat(v/(1<<10), 'g', 3, 64) + "K"
	}
	return strconv.Itoa(tokens)
}

// markShapes are the markers that tell lines apart, in turn: filled shapes first.
var markShapes = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, draw.RingGlyph{},
	draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{},
}

func markGlyph(c color.Color, i int) draw.GlyphStyle {
	return draw.GlyphStyle{Color: c, Radius: vg.Points(2.3), Shape: markShapes[i%len(markShapes)]}
}

// ---- the figure ----

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

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
