package analysis

// The sweep's figures, drawn next to its tables: validation curves at each iterate
// (fig:EMA_y, fig:Obs1 middle), validation loss before and after the decay probe
// (fig:Obs1 right, fig:Decay_AdamW_betas) and the heat map of a C-sensitivity table. Each is
// a pure function of plain data returning a Figure, which Figure.Write renders as PNG or
// SVG; the same data give the same bytes. Non-finite values are never drawn.

import (
	"cmp"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/sfsweep/sfsweep/sfadamw"
)

// Figure formats accepted by Figure.Write.
const (
	FormatPNG = "png" // 150 dpi, as Figure.Save writes
	FormatSVG = "svg"
)

// Write renders the figure to w in the named format, FormatPNG or FormatSVG. Rendering the
// same figure twice writes the same bytes.
func (f *Figure) Write(w io.Writer, format string) error {
	var c vg.CanvasWriterTo
	switch format {
	case FormatPNG:
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(f.Width, f.Height), vgimg.UseDPI(150))}
	case FormatSVG:
		c = vgsvg.New(f.Width, f.Height)
	default:
		return fmt.Errorf("analysis: write figure: %w",
			&sfadamw.ConfigError{Field: "format", Value: strconv.Quote(format), Reason: "must be png or svg"})
	}
	if len(f.Plots) == 0 || len(f.Plots[0]) == 0 {
		return fmt.Errorf("analysis: write figure: %w", &sfadamw.ConfigError{Field: "Plots", Value: len(f.Plots), Reason: "no plots"})
	}
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: len(f.Plots), Cols: len(f.Plots[0]), PadX: vg.Millimeter * 3, PadY: vg.Millimeter * 3,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(f.Plots, tiles, dc)
	for i := range f.Plots {
		for j, p := range f.Plots[i] {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("analysis: write figure %s: %w", format, err)
	}
	return nil
}

// Curve is the validation curve of one trial, shaped like training.CurvePoint's series.
type Curve struct {
	Label  string // legend text, unique within a plot: "β1 = 0.95", "AdamW"
	Points []CurvePoint
}

// CurvePoint is one evaluation of a trial: the validation loss at each iterate evaluated
// ("x", "y", "ewa_x", "ewa_y" for SF-AdamW; "w", "ewa_w" for AdamW).
type CurvePoint struct {
	Step   int
	Tokens int64
	Val    map[string]float64
}

// CurvesOptions adjusts CurvesPlot. The zero value plots every iterate against tokens with
// the axes fitted to the data.
type CurvesOptions struct {
	Title string // "" for "Validation loss"
	// Iterates selects and orders the iterates drawn; nil draws every iterate present, in
	// the order x, y, ewa_x, ewa_y, w, ewa_w, then any others by name.
	Iterates []string
	Steps    bool // plot against steps instead of tokens
	// YMin and YMax fix the loss axis; both 0 fit it to the data. Lines are clipped to it.
	YMin, YMax float64
}

// iterateStyles gives each known iterate its dash pattern and legend text; an iterate and
// its EWA differ in dash, the SF output x and the AdamW weights w share the solid line.
var iterateStyles = []struct {
	name, text string
	dashes     []vg.Length
}{
	{"x", "x", nil},
	{"y", "y", []vg.Length{vg.Points(5), vg.Points(3)}},
	{"ewa_x", "EWA of x", []vg.Length{vg.Points(1), vg.Points(2)}},
	{"ewa_y", "EWA of y", []vg.Length{vg.Points(6), vg.Points(2), vg.Points(1.5), vg.Points(2)}},
	{"w", "w", nil},
	{"ewa_w", "EWA of w", []vg.Length{vg.Points(1), vg.Points(2)}},
}

// otherDashes are the dash patterns of iterates not in iterateStyles, in turn.
var otherDashes = [][]vg.Length{
	{vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2), vg.Points(2), vg.Points(2)},
	{vg.Points(3), vg.Points(1)},
	{vg.Points(10), vg.Points(4)},
}

func iterateRank(name string) int {
	for i, s := range iterateStyles {
		if s.name == name {
			return i
		}
	}
	return len(iterateStyles)
}

// trialColors are the colours of the trials of a plot, in turn (Tableau 10); trials beyond
// ten repeat them.
var trialColors = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
	{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255},
	{188, 189, 34, 255}, {23, 190, 207, 255},
}

func trialColor(i int) color.Color { return trialColors[i%len(trialColors)] }

// keyColor draws the style entries of a legend (the iterates, before and after).
var keyColor = color.RGBA{60, 60, 60, 255}

// CurvesPlot returns the validation loss of one or more trials against tokens (or steps):
// one line per trial and iterate, the colour saying the trial and the dash the iterate, as
// in the paper's fig:EMA_y and fig:Obs1 (middle). Points are drawn in order of tokens (or
// steps); a non-finite or absent value breaks its line there and is not drawn, and a
// finite point with no finite neighbour is drawn as a dot. The legend lists the trials by
// label, then the iterates drawn.
func CurvesPlot(curves []Curve, opts CurvesOptions) (*Figure, error) {
	fail := func(err error) (*Figure, error) { return nil, fmt.Errorf("analysis: curves plot: %w", err) }
	if len(curves) == 0 {
		return fail(&sfadamw.ConfigError{Field: "curves", Value: len(curves), Reason: "no trials to plot"})
	}
	if err := checkYRange(opts.YMin, opts.YMax); err != nil {
		return fail(err)
	}
	labels := make([]string, len(curves))
	for i, c := range curves {
		labels[i] = c.Label
		for j, q := range c.Points {
			if q.Tokens < 0 {
				return fail(&sfadamw.ConfigError{Field: fmt.Sprintf("curves[%d].Points[%d].Tokens", i, j), Value: q.Tokens, Reason: "must be ≥ 0"})
			}
			if q.Step < 0 {
				return fail(&sfadamw.ConfigError{Field: fmt.Sprintf("curves[%d].Points[%d].Step", i, j), Value: q.Step, Reason: "must be ≥ 0"})
			}
		}
	}
	if err := checkSeries("curves", labels, func(i int) int { return len(curves[i].Points) }); err != nil {
		return fail(err)
	}
	iterates, err := curveIterates(curves, opts.Iterates)
	if err != nil {
		return fail(err)
	}

	xOf := func(q CurvePoint) float64 { return float64(q.Tokens) }
	xLabel, scale := "step", 1.0
	if opts.Steps {
		xOf = func(q CurvePoint) float64 { return float64(q.Step) }
	} else {
		var most int64
		for _, c := range curves {
			for _, q := range c.Points {
				most = max(most, q.Tokens)
			}
		}
		xLabel, scale = tokenUnit(most)
	}

	p := plot.New()
	p.Title.Text = cmp.Or(opts.Title, "Validation loss")
	p.X.Label.Text = xLabel
	p.Y.Label.Text = "validation loss"
	p.Add(plotter.NewGrid())
	drawn := make([]bool, len(iterates))
	drewAny := false
	for i, c := range curves {
		pts := slices.Clone(c.Points)
		slices.SortStableFunc(pts, func(a, b CurvePoint) int { return cmp.Compare(xOf(a), xOf(b)) })
		for k, it := range iterates {
			xs, ys := make([]float64, len(pts)), make([]float64, len(pts))
			for j, q := range pts {
				xs[j] = xOf(q) / scale
				v, ok := q.Val[it]
				if !ok {
					v = math.NaN()
				}
				ys[j] = v
			}
			style := draw.LineStyle{Color: trialColor(i), Width: vg.Points(1.3), Dashes: iterateDashes(it, iterates)}
			n, err := addSeries(p, xs, ys, style, dotGlyph(trialColor(i)))
			if err != nil {
				return fail(err)
			}
			if n > 0 {
				drawn[k], drewAny = true, true
			}
		}
	}
	if !drewAny {
		return fail(&sfadamw.ConfigError{Field: "curves[].Points[].Val", Value: "no finite value", Reason: "nothing to plot at iterates " + fmt.Sprint(iterates)})
	}
	setYRange(p, opts.YMin, opts.YMax)
	for i, c := range curves {
		p.Legend.Add(c.Label, &plotter.Line{LineStyle: draw.LineStyle{Color: trialColor(i), Width: vg.Points(2)}})
	}
	for k, it := range iterates {
		if drawn[k] {
			p.Legend.Add(iterateText(it), &plotter.Line{LineStyle: draw.LineStyle{Color: keyColor, Width: vg.Points(1.3), Dashes: iterateDashes(it, iterates)}})
		}
	}
	return lineFigure(p), nil
}

// curveIterates returns the iterates to draw: those asked for, checked, or every one
// present in canonical order.
func curveIterates(curves []Curve, asked []string) ([]string, error) {
	if asked != nil {
		if len(asked) == 0 {
			return nil, &sfadamw.ConfigError{Field: "opts.Iterates", Value: "[]", Reason: "empty: nothing to plot (nil draws every iterate)"}
		}
		for k, it := range asked {
			if it == "" {
				return nil, &sfadamw.ConfigError{Field: fmt.Sprintf("opts.Iterates[%d]", k), Value: `""`, Reason: "empty iterate name"}
			}
			if j := slices.Index(asked[:k], it); j >= 0 {
				return nil, &sfadamw.ConfigError{Field: fmt.Sprintf("opts.Iterates[%d]", k), Value: strconv.Quote(it), Reason: fmt.Sprintf("given twice (also opts.Iterates[%d])", j)}
			}
		}
		return asked, nil
	}
	var names []string
	for _, c := range curves {
		for _, q := range c.Points {
			for it := range q.Val {
				names = append(names, it)
			}
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(iterateRank(a), iterateRank(b)), cmp.Compare(a, b))
	})
	return slices.Compact(names), nil
}

// iterateDashes returns the dash pattern of an iterate: its own if known, else the next of
// otherDashes by its place among the unknown iterates drawn.
func iterateDashes(it string, iterates []string) []vg.Length {
	if r := iterateRank(it); r < len(iterateStyles) {
		return iterateStyles[r].dashes
	}
	n := 0
	for _, o := range iterates {
		if o == it {
			break
		}
		if iterateRank(o) == len(iterateStyles) {
			n++
		}
	}
	return otherDashes[n%len(otherDashes)]
}

func iterateText(it string) string {
	if r := iterateRank(it); r < len(iterateStyles) {
		return iterateStyles[r].text
	}
	return it
}

// DecayProbeCurve is the decay probe of one trial: the validation loss at each checkpoint
// and after the short decay run from it.
type DecayProbeCurve struct {
	Label  string // legend text, unique within a plot
	Points []DecayProbePoint
}

// DecayProbePoint is one checkpoint of a trial and its decay probe.
type DecayProbePoint struct {
	Tokens        int64   // tokens trained when the checkpoint was taken
	Before, After float64 // validation loss at the checkpoint and after its decay probe
}

// DecayProbeOptions adjusts DecayProbePlot; the zero value fits the axes to the data.
type DecayProbeOptions struct {
	Title      string // "" for "Validation loss before and after the decay probe"
	After      string // legend of the dashed lines; "" for "after the decay probe"
	YMin, YMax float64
}

// DecayProbePlot returns the validation loss at each checkpoint (solid, dots) and after its
// decay probe (dashed, triangles) against tokens, one colour per trial: the paper's
// fig:Obs1 (right) and fig:Decay_AdamW_betas. A non-finite value breaks its line and is
// not drawn.
func DecayProbePlot(probes []DecayProbeCurve, opts DecayProbeOptions) (*Figure, error) {
	fail := func(err error) (*Figure, error) { return nil, fmt.Errorf("analysis: decay probe plot: %w", err) }
	if len(probes) == 0 {
		return fail(&sfadamw.ConfigError{Field: "probes", Value: len(probes), Reason: "no trials to plot"})
	}
	if err := checkYRange(opts.YMin, opts.YMax); err != nil {
		return fail(err)
	}
	labels := make([]string, len(probes))
	var most int64
	for i, pr := range probes {
		labels[i] = pr.Label
		for j, q := range pr.Points {
			if q.Tokens < 0 {
				return fail(&sfadamw.ConfigError{Field: fmt.Sprintf("probes[%d].Points[%d].Tokens", i, j), Value: q.Tokens, Reason: "must be ≥ 0"})
			}
			most = max(most, q.Tokens)
		}
	}
	if err := checkSeries("probes", labels, func(i int) int { return len(probes[i].Points) }); err != nil {
		return fail(err)
	}
	xLabel, scale := tokenUnit(most)

	p := plot.New()
	p.Title.Text = cmp.Or(opts.Title, "Validation loss before and after the decay probe")
	p.X.Label.Text = xLabel
	p.Y.Label.Text = "validation loss"
	p.Add(plotter.NewGrid())
	beforeDash, afterDash := []vg.Length(nil), []vg.Length{vg.Points(5), vg.Points(3)}
	drewAny := false
	for i, pr := range probes {
		pts := slices.Clone(pr.Points)
		slices.SortStableFunc(pts, func(a, b DecayProbePoint) int { return cmp.Compare(a.Tokens, b.Tokens) })
		xs := make([]float64, len(pts))
		before, after := make([]float64, len(pts)), make([]float64, len(pts))
		for j, q := range pts {
			xs[j], before[j], after[j] = float64(q.Tokens)/scale, q.Before, q.After
		}
		for _, s := range []struct {
			ys     []float64
			dashes []vg.Length
			glyph  draw.GlyphStyle
		}{
			{before, beforeDash, dotGlyph(trialColor(i))},
			{after, afterDash, triangleGlyph(trialColor(i))},
		} {
			n, err := addSeries(p, xs, s.ys, draw.LineStyle{Color: trialColor(i), Width: vg.Points(1.3), Dashes: s.dashes}, s.glyph)
			if err != nil {
				return fail(err)
			}
			if n > 0 {
				addGlyphs(p, xs, s.ys, s.glyph)
				drewAny = true
			}
		}
	}
	if !drewAny {
		return fail(&sfadamw.ConfigError{Field: "probes[].Points[].Before/After", Value: "no finite value", Reason: "nothing to plot"})
	}
	setYRange(p, opts.YMin, opts.YMax)
	for i, pr := range probes {
		p.Legend.Add(pr.Label, &plotter.Line{LineStyle: draw.LineStyle{Color: trialColor(i), Width: vg.Points(2)}})
	}
	p.Legend.Add("at the checkpoint", &plotter.Line{LineStyle: draw.LineStyle{Color: keyColor, Width: vg.Points(1.3), Dashes: beforeDash}},
		&plotter.Scatter{GlyphStyle: dotGlyph(keyColor)})
	p.Legend.Add(cmp.Or(opts.After, "after the decay probe"), &plotter.Line{LineStyle: draw.LineStyle{Color: keyColor, Width: vg.Points(1.3), Dashes: afterDash}},
		&plotter.Scatter{GlyphStyle: triangleGlyph(keyColor)})
	return lineFigure(p), nil
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
	return c.Status == StatusOK && c.Value > 0 && !math.IsInf(c.Value, 0)
}

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
func HeatMap(t *Table) (*Figure, error) {
	fail := func(err error) (*Figure, error) { return nil, fmt.Errorf("analysis: heat map: %w", err) }
	if t == nil {
		return fail(&sfadamw.ConfigError{Field: "table", Value: nil, Reason: "no table"})
	}
	if t.Kind != TableCSensitivity {
		return fail(&sfadamw.ConfigError{Field: "Kind", Value: strconv.Quote(string(t.Kind)), Reason: "must be " + string(TableCSensitivity)})
	}
	if len(t.Rows) == 0 {
		return fail(&sfadamw.ConfigError{Field: "Rows", Value: 0, Reason: "empty: no β1 to plot"})
	}
	if len(t.Columns) == 0 {
		return fail(&sfadamw.ConfigError{Field: "Columns", Value: 0, Reason: "empty: no C to plot"})
	}
	if err := t.check(); err != nil {
		return fail(err)
	}

	h := &heatCells{t: t, scale: heatScale{lo: math.Inf(1), hi: math.Inf(-1)}}
	var statuses [4]bool
	for _, c := range t.Cells {
		if plottable(c.Cell) {
			v := math.Log(c.Value)
			h.scale.lo, h.scale.hi = min(h.scale.lo, v), max(h.scale.hi, v)
		}
		switch {
		case plottable(c.Cell):
		case c.Status == StatusDiverged || c.Status == StatusFailed:
			statuses[c.Status] = true
		default:
			statuses[StatusMissing] = true
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
	if statuses[StatusMissing] {
		p.Legend.Add("not run", swatch{fill: missingFill})
	}
	if statuses[StatusFailed] {
		p.Legend.Add("failed", swatch{fill: failedFill})
	}
	if statuses[StatusDiverged] {
		p.Legend.Add("diverged (step)", swatch{fill: divergeFill, cross: true})
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
	return &Figure{Plots: [][]*plot.Plot{{p}}, Width: w, Height: dataH + 1.1*vg.Inch + vg.Length(lines-1)*p.Title.TextStyle.Height("M")}, nil
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
			case cell.Status == StatusDiverged:
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
			case cell.Status == StatusFailed:
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

// InterpolationCurve is the validation loss of one trial along the segment between two of
// its weights: at α·w(t1) + (1−α)·w(t2).
type InterpolationCurve struct {
	Label  string // legend text, unique within a plot
	Points []InterpolationPoint
}

// InterpolationPoint is the loss at one α.
type InterpolationPoint struct {
	Alpha, Loss float64
}

// InterpolationOptions adjusts InterpolationPlot; the zero value fits the axes to the data.
type InterpolationOptions struct {
	Title      string // "" for "Validation loss between two checkpoints"
	YMin, YMax float64
}

// InterpolationPlot returns the validation loss against α, one colour per curve: the
// paper's fig:river_valley_loss_profile (convex for AdamW at a constant LR, falling
// sharply into a decay, flat for SF-AdamW). A non-finite loss breaks its line.
func InterpolationPlot(curves []InterpolationCurve, opts InterpolationOptions) (*Figure, error) {
	fail := func(err error) (*Figure, error) { return nil, fmt.Errorf("analysis: interpolation plot: %w", err) }
	if len(curves) == 0 {
		return fail(&sfadamw.ConfigError{Field: "curves", Value: 0, Reason: "no trials to plot"})
	}
	if err := checkYRange(opts.YMin, opts.YMax); err != nil {
		return fail(err)
	}
	labels := make([]string, len(curves))
	for i, c := range curves {
		labels[i] = c.Label
		for j, q := range c.Points {
			if math.IsNaN(q.Alpha) || math.IsInf(q.Alpha, 0) {
				return fail(&sfadamw.ConfigError{Field: fmt.Sprintf("curves[%d].Points[%d].Alpha", i, j), Value: q.Alpha, Reason: "must be finite"})
			}
		}
	}
	if err := checkSeries("curves", labels, func(i int) int { return len(curves[i].Points) }); err != nil {
		return fail(err)
	}
	p := plot.New()
	p.Title.Text = cmp.Or(opts.Title, "Validation loss between two checkpoints")
	p.X.Label.Text = "α  (α·w(t1) + (1−α)·w(t2))"
	p.Y.Label.Text = "validation loss"
	p.Add(plotter.NewGrid())
	drewAny := false
	for i, c := range curves {
		pts := slices.Clone(c.Points)
		slices.SortStableFunc(pts, func(a, b InterpolationPoint) int { return cmp.Compare(a.Alpha, b.Alpha) })
		xs, ys := make([]float64, len(pts)), make([]float64, len(pts))
		for j, q := range pts {
			xs[j], ys[j] = q.Alpha, q.Loss
		}
		n, err := addSeries(p, xs, ys, draw.LineStyle{Color: trialColor(i), Width: vg.Points(1.5)}, dotGlyph(trialColor(i)))
		if err != nil {
			return fail(err)
		}
		if n > 0 {
			addGlyphs(p, xs, ys, dotGlyph(trialColor(i)))
			drewAny = true
		}
		p.Legend.Add(c.Label, &plotter.Line{LineStyle: draw.LineStyle{Color: trialColor(i), Width: vg.Points(2)}})
	}
	if !drewAny {
		return fail(&sfadamw.ConfigError{Field: "curves[].Points[].Loss", Value: "no finite value", Reason: "nothing to plot"})
	}
	setYRange(p, opts.YMin, opts.YMax)
	return lineFigure(p), nil
}

// lineFigure is the figure of one line plot of the sweep, its legend at the top right and
// its title wrapped to the width.
func lineFigure(p *plot.Plot) *Figure {
	p.Legend.Top = true
	p.Legend.ThumbnailWidth = vg.Points(28)
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	p.Legend.Padding = vg.Points(1)
	wrapTitle(p, 7*vg.Inch)
	return &Figure{Plots: [][]*plot.Plot{{p}}, Width: 7 * vg.Inch, Height: 4.5 * vg.Inch}
}
