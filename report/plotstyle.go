package report

// What the plots share: axes, finite segments, seed bands, markers, the legend of a
// faceted figure and colour maps.

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/internal/status"
)

// linePlot starts a panel of a sweep plot: its title, the validation loss against x, a
// light grid and the fonts of a figure of several panels.
func linePlot(title, x string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(10)
	p.X.Label.Text = x
	p.Y.Label.Text = "validation loss"
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(10)
		a.Tick.Label.Font.Size = vg.Points(8.5)
	}
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = gridColor, gridColor
	p.Add(g)
	return p
}

var gridColor = color.RGBA{225, 225, 225, 255}

func checkYRange(lo, hi float64) error {
	if lo == 0 && hi == 0 {
		return nil
	}
	if math.IsNaN(lo) || math.IsInf(lo, 0) {
		return &fielderr.Error{Field: "opts.YMin", Value: lo, Reason: "must be finite"}
	}
	if math.IsNaN(hi) || math.IsInf(hi, 0) || !(hi > lo) {
		return &fielderr.Error{Field: "opts.YMax", Value: hi, Reason: fmt.Sprintf("must be finite and above YMin = %g", lo)}
	}
	return nil
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

// band fills the area between two series where both are finite: the spread of a line's
// seeds. It is clipped to the data area.
type band struct {
	xs, lo, hi []float64
	fill       color.Color
}

// Plot implements plot.Plotter.
func (b *band) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	start := 0
	fill := func(end int) { // the run [start, end)
		if end-start >= 2 {
			var ring []vg.Point
			for i := start; i < end; i++ {
				ring = append(ring, vg.Point{X: trX(b.xs[i]), Y: trY(b.lo[i])})
			}
			for i := end - 1; i >= start; i-- {
				ring = append(ring, vg.Point{X: trX(b.xs[i]), Y: trY(b.hi[i])})
			}
			c.FillPolygon(b.fill, c.ClipPolygonXY(ring))
		}
		start = end + 1
	}
	for i := range b.xs {
		if !finite(b.xs[i]) || !finite(b.lo[i]) || !finite(b.hi[i]) {
			fill(i)
		}
	}
	fill(len(b.xs))
}

// markers draws a glyph at each of its points that lies in the data area.
type markers struct {
	xys   plotter.XYs
	glyph draw.GlyphStyle
}

// Plot implements plot.Plotter.
func (m *markers) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, q := range m.xys {
		c.DrawGlyph(m.glyph, vg.Point{X: trX(q.X), Y: trY(q.Y)})
	}
}

// legend is the key of a faceted figure, drawn down from the top left of the data area it
// is given (it may run below it): the figure's title, then headings and entries, each
// entry a thumbnail (a line, a marker or a band) and its text.
type legend struct {
	rows []legendRow
}

type legendRow struct {
	text  string
	font  text.Style
	above vg.Length // space above the row
	line  *draw.LineStyle
	glyph *draw.GlyphStyle
	band  color.Color
}

// The legend's geometry: the width of a thumbnail, the gap after it, the least width it
// wraps its title to.
const (
	keyThumb    = vg.Length(24)
	keyGap      = vg.Length(5)
	keyMinWidth = panelW - 6
)

// keyFont is the legend's text style at size pt, bold if asked.
func keyFont(pt float64, bold bool) text.Style {
	f := font.From(plot.DefaultFont, vg.Points(pt))
	if bold {
		f.Weight = xfont.WeightBold
	}
	return text.Style{Color: color.Black, Font: f, XAlign: text.XLeft, YAlign: text.YCenter, Handler: plot.DefaultTextHandler}
}

func (k *legend) heading(s string) {
	k.rows = append(k.rows, legendRow{text: s, font: keyFont(9.5, true), above: vg.Points(5)})
}

// entry adds a line of text after a thumbnail: a line, a marker or a band (those not nil).
func (k *legend) entry(s string, line *draw.LineStyle, glyph *draw.GlyphStyle, band color.Color) {
	k.rows = append(k.rows, legendRow{text: s, font: keyFont(9, false), line: line, glyph: glyph, band: band})
}

// setTitle puts the title on top, wrapped to the width of the entries (keyMinWidth at
// least: the legend's column is as wide as a panel).
func (k *legend) setTitle(title string) {
	if title == "" {
		return
	}
	w, _ := k.size()
	t := plot.New()
	t.Title.Text, t.Title.TextStyle = title, keyFont(11, true)
	wrapTitle(t, max(w, keyMinWidth)+vg.Points(12)) // wrapTitle leaves 12 pt spare
	var rows []legendRow
	for _, l := range strings.Split(t.Title.Text, "\n") {
		rows = append(rows, legendRow{text: l, font: t.Title.TextStyle})
	}
	if len(k.rows) > 0 {
		k.rows[0].above += vg.Points(3)
	}
	k.rows = append(rows, k.rows...)
}

func (r legendRow) height() vg.Length { return r.font.FontExtents().Height * 1.15 }

func (r legendRow) indent() vg.Length {
	if r.line == nil && r.glyph == nil && r.band == nil {
		return 0
	}
	return keyThumb + keyGap
}

// size returns the width and height the legend takes.
func (k *legend) size() (w, h vg.Length) {
	for _, r := range k.rows {
		w = max(w, r.indent()+r.font.Width(r.text))
		h += r.above + r.height()
	}
	return w, h
}

// rect is where the legend is drawn in data area c: from its top left corner down.
func (k *legend) rect(c vg.Rectangle) vg.Rectangle {
	w, h := k.size()
	return vg.Rectangle{Min: vg.Point{X: c.Min.X, Y: c.Max.Y - h}, Max: vg.Point{X: c.Min.X + w, Y: c.Max.Y}}
}

// Plot implements plot.Plotter: the legend in k.rect(c.Rectangle).
func (k *legend) Plot(c draw.Canvas, _ *plot.Plot) {
	r := k.rect(c.Rectangle)
	x0, y := r.Min.X, r.Max.Y
	for _, r := range k.rows {
		y -= r.above
		mid := y - r.height()/2
		if r.band != nil {
			c.FillPolygon(r.band, []vg.Point{{X: x0, Y: mid - 4}, {X: x0 + keyThumb, Y: mid - 4}, {X: x0 + keyThumb, Y: mid + 4}, {X: x0, Y: mid + 4}})
		}
		if r.line != nil {
			c.StrokeLine2(*r.line, x0, mid, x0+keyThumb, mid)
		}
		if r.glyph != nil {
			c.DrawGlyphNoClip(*r.glyph, vg.Point{X: x0 + keyThumb/2, Y: mid})
		}
		c.FillText(r.font, vg.Point{X: x0 + r.indent(), Y: mid}, r.text)
		y -= r.height()
	}
}

// Heat-map cell colours for cells without a finished value.
var (
	missingFill = color.RGBA{217, 217, 217, 255} // not run: light grey
	failedFill  = color.RGBA{140, 140, 140, 255} // failed: dark grey
	divergeFill = color.RGBA{255, 255, 255, 255} // diverged: white under a red cross
	stoppedFill = color.RGBA{198, 219, 239, 255} // stopped by a search's early stopping: pale blue
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
