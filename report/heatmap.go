package report

// The heat map of a C-sensitivity table.

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/internal/figure"
	"github.com/sfsweep/sfsweep/internal/status"
)

// Heat-map cell size at the figure's nominal size.
const (
	heatCellW = 0.8 * vg.Inch
	heatCellH = 0.42 * vg.Inch
)

// HeatMap returns a C-sensitivity table as a heat map: one row per β1 (as in the table, the
// first on top), one column per C, each finished cell coloured by its test perplexity on a
// log scale (viridis: lighter is lower, the best light yellow) with the value written in it,
// the best of each row in bold and outlined. A cell not run is light grey with "--", a
// failed one dark grey reading "failed", a diverged one white with a red cross and its
// step. A finished cell whose value is not finite and positive is drawn as not run. The
// legend gives the colours of five perplexities spanning the table and the statuses
// present. Values are written where they fit their cell.
func HeatMap(t *Table) (*figure.Figure, error) {
	fail := func(err error) (*figure.Figure, error) { return nil, fmt.Errorf("report: heat map: %w", err) }
	if t == nil {
		return fail(&fielderr.Error{Field: "table", Value: nil, Reason: "no table"})
	}
	if t.Kind != TableCSensitivity {
		return fail(&fielderr.Error{Field: "Kind", Value: strconv.Quote(string(t.Kind)), Reason: "must be " + string(TableCSensitivity)})
	}
	if len(t.Rows) == 0 {
		return fail(&fielderr.Error{Field: "Rows", Value: 0, Reason: "empty: no β1 to plot"})
	}
	if len(t.Columns) == 0 {
		return fail(&fielderr.Error{Field: "Columns", Value: 0, Reason: "empty: no C to plot"})
	}
	if err := t.check(); err != nil {
		return fail(err)
	}

	h := &heatCells{t: t, scale: heatScale{lo: math.Inf(1), hi: math.Inf(-1)}}
	statuses := map[status.Status]bool{}
	for _, c := range t.Cells {
		if plottable(c.Cell) {
			v := math.Log(c.Value)
			h.scale.lo, h.scale.hi = min(h.scale.lo, v), max(h.scale.hi, v)
		}
		switch {
		case plottable(c.Cell):
		case c.Status == status.Diverged || c.Status == status.Failed || c.Status == status.Stopped:
			statuses[c.Status] = true
		default:
			statuses[status.Missing] = true
		}
	}

	p := plot.New()
	p.Title.Text = cmp.Or(t.Title, "C sensitivity") + " (test perplexity)"
	p.X.Label.Text = "C"
	p.Y.Label.Text = "β1"
	nr, nc := len(t.Rows), len(t.Columns)
	var xt, yt []plot.Tick
	for k, col := range t.Columns {
		xt = append(xt, plot.Tick{Value: float64(k), Label: col})
	}
	for r, row := range t.Rows {
		yt = append(yt, plot.Tick{Value: float64(nr - 1 - r), Label: row})
	}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.ConstantTicks(xt), plot.ConstantTicks(yt)
	p.X.LineStyle.Width, p.Y.LineStyle.Width = 0, 0
	p.X.Tick.LineStyle.Width, p.Y.Tick.LineStyle.Width = 0, 0
	p.X.Padding, p.Y.Padding = 0, 0

	// The legend sits right of the grid, in room reserved by widening the x range.
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Legend.ThumbnailWidth = vg.Points(14)
	p.Legend.Padding = vg.Points(2)
	p.Legend.Top = true
	if h.scale.lo <= h.scale.hi {
		p.Legend.Add("test perplexity:")
		const n = 5
		seen := map[string]bool{}
		for i := range n {
			ppl := math.Exp(h.scale.lo + (h.scale.hi-h.scale.lo)*float64(i)/(n-1))
			label := formatPerplexity(ppl)
			if seen[label] {
				continue
			}
			seen[label] = true
			p.Legend.Add(label, swatch{fill: h.scale.color(ppl)})
		}
	}
	if statuses[status.Missing] {
		p.Legend.Add("not run", swatch{fill: missingFill})
	}
	if statuses[status.Failed] {
		p.Legend.Add("failed", swatch{fill: failedFill})
	}
	if statuses[status.Diverged] {
		p.Legend.Add("diverged (step)", swatch{fill: divergeFill, cross: true})
	}
	if statuses[status.Stopped] {
		p.Legend.Add("stopped (step)", swatch{fill: stoppedFill})
	}
	legendW := p.Legend.ThumbnailWidth + vg.Points(12)
	for _, s := range []string{"test perplexity:", "diverged (step)", "000.00"} {
		legendW = max(legendW, p.Legend.ThumbnailWidth+vg.Points(12)+p.Legend.TextStyle.Width(s))
	}
	h.extra = float64(legendW/heatCellW) * 1.1
	p.Add(h)

	entries := 0
	if h.scale.lo <= h.scale.hi {
		entries += 6
	}
	for _, s := range statuses {
		if s {
			entries++
		}
	}
	dataH := max(vg.Length(nr)*heatCellH, vg.Length(entries)*vg.Points(13)+vg.Points(6))
	w := vg.Length(nc)*heatCellW + legendW*1.1 + 0.9*vg.Inch
	lines := wrapTitle(p, w)
	return &figure.Figure{Plots: [][]*plot.Plot{{p}}, Width: w, Height: dataH + 1.1*vg.Inch + vg.Length(lines-1)*p.Title.TextStyle.Height("M")}, nil
}

// wrapTitle breaks the plot's title at spaces into lines that fit a figure of the given
// width (a word longer than a line keeps a line of its own), and returns the number of lines.
func wrapTitle(p *plot.Plot, width vg.Length) int {
	room := width - vg.Points(12)
	var lines []string
	for _, word := range strings.Fields(p.Title.Text) {
		if n := len(lines); n > 0 && p.Title.TextStyle.Width(lines[n-1]+" "+word) <= room {
			lines[n-1] += " " + word
			continue
		}
		lines = append(lines, word)
	}
	if len(lines) == 0 {
		return 1
	}
	p.Title.Text = strings.Join(lines, "\n")
	return len(lines)
}

// heatCells draws the cells of a C-sensitivity table: column k at x = k, row r at
// y = rows−1−r, each a unit square.
type heatCells struct {
	t     *Table
	scale heatScale
	extra float64 // x units kept free right of the grid for the legend
}

// DataRange implements plot.DataRanger.
func (h *heatCells) DataRange() (xmin, xmax, ymin, ymax float64) {
	return -0.5, float64(len(h.t.Columns)) - 0.5 + h.extra, -0.5, float64(len(h.t.Rows)) - 0.5
}

// Plot implements plot.Plotter.
func (h *heatCells) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	nr, nc := len(h.t.Rows), len(h.t.Columns)
	gap := vg.Points(1)
	base := text.Style{Color: color.Black, Font: font.From(plot.DefaultFont, 10), XAlign: text.XCenter, YAlign: text.YCenter, Handler: plot.DefaultTextHandler}
	small := base
	small.Font.Size = vg.Points(8)
	for r := range nr {
		for k := range nc {
			cell := h.t.Cells[r*nc+k]
			x0, x1 := trX(float64(k)-0.5)+gap, trX(float64(k)+0.5)-gap
			y0, y1 := trY(float64(nr-1-r)-0.5)+gap, trY(float64(nr-1-r)+0.5)-gap
			box := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
			mid := vg.Point{X: (x0 + x1) / 2, Y: (y0 + y1) / 2}
			fits := func(sty text.Style, s string) bool {
				return sty.Width(s) <= x1-x0-vg.Points(4) && sty.Height(s) <= y1-y0-vg.Points(2)
			}
			write := func(sty text.Style, at vg.Point, s string) {
				if fits(sty, s) {
					c.FillText(sty, at, s)
				}
			}
			switch {
			case plottable(cell.Cell):
				fill := h.scale.color(cell.Value)
				c.FillPolygon(fill, box)
				sty := base
				sty.Color = inkOn(fill)
				if cell.Best {
					sty.Font.Weight = xfont.WeightBold
					c.StrokeLines(draw.LineStyle{Color: color.Black, Width: vg.Points(1.5)}, append(box, box[0]))
				}
				write(sty, mid, formatPerplexity(cell.Value))
			case cell.Status == status.Diverged:
				c.FillPolygon(divergeFill, box)
				c.StrokeLines(draw.LineStyle{Color: missingFill, Width: vg.Points(0.5)}, append(box, box[0]))
				mark := mid
				if cell.Step > 0 {
					mark.Y += (y1 - y0) / 6
					s := "step " + strconv.Itoa(cell.Step)
					if fits(small, s) {
						c.FillText(small, vg.Point{X: mid.X, Y: mid.Y - (y1-y0)/4}, s)
					} else {
						mark = mid
					}
				}
				drawCross(&c, mark, vg.Points(4), vg.Points(1.5))
			case cell.Status == status.Stopped:
				c.FillPolygon(stoppedFill, box)
				if cell.Step > 0 && fits(small, "stopped") {
					c.FillText(small, vg.Point{X: mid.X, Y: mid.Y + (y1-y0)/6}, "stopped")
					write(small, vg.Point{X: mid.X, Y: mid.Y - (y1-y0)/6}, "step "+strconv.Itoa(cell.Step))
				} else {
					write(small, mid, "stopped")
				}
			case cell.Status == status.Failed:
				c.FillPolygon(failedFill, box)
				sty := small
				sty.Color = inkOn(failedFill)
				write(sty, mid, "failed")
			default:
				c.FillPolygon(missingFill, box)
				write(base, mid, "--")
			}
		}
	}
}

// inkOn returns black or white, whichever reads better on fill.
func inkOn(fill color.RGBA) color.Color {
	if 0.299*float64(fill.R)+0.587*float64(fill.G)+0.114*float64(fill.B) >= 140 {
		return color.Black
	}
	return color.White
}

// swatch is a heat-map legend entry: a filled square, crossed for diverged.
type swatch struct {
	fill  color.RGBA
	cross bool
}

// Thumbnail implements plot.Thumbnailer.
func (s swatch) Thumbnail(c *draw.Canvas) {
	side := min(c.Max.X-c.Min.X, c.Max.Y-c.Min.Y)
	x0, y0 := c.Max.X-side, c.Min.Y
	box := []vg.Point{{X: x0, Y: y0}, {X: x0 + side, Y: y0}, {X: x0 + side, Y: y0 + side}, {X: x0, Y: y0 + side}}
	c.FillPolygon(s.fill, box)
	c.StrokeLines(draw.LineStyle{Color: color.Gray{Y: 90}, Width: vg.Points(0.5)}, append(box, box[0]))
	if s.cross {
		drawCross(c, vg.Point{X: x0 + side/2, Y: y0 + side/2}, side/3, vg.Points(1))
	}
}

// drawCross draws the diverged mark: a red × of half-width r centred at pt.
func drawCross(c *draw.Canvas, pt vg.Point, r, width vg.Length) {
	sty := draw.LineStyle{Color: divergeMark, Width: width}
	c.StrokeLine2(sty, pt.X-r, pt.Y-r, pt.X+r, pt.Y+r)
	c.StrokeLine2(sty, pt.X-r, pt.Y+r, pt.X+r, pt.Y-r)
}
