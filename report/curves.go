package report

// The validation curves of a sweep's trials at each iterate (fig:EMA_y, fig:Obs1 middle):
// a pure function of plain data returning a figure; the same data give the same bytes.
// Non-finite values are never drawn.

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/sfsweep/sfsweep/sfadamw"

	"github.com/sfsweep/sfsweep/internal/figure"
)

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
func CurvesPlot(curves []Curve, opts CurvesOptions) (*figure.Figure, error) {
	fail := func(err error) (*figure.Figure, error) { return nil, fmt.Errorf("report: curves plot: %w", err) }
	err := checkPlotInput("curves", len(curves), opts.YMin, opts.YMax, func(i int) string { return curves[i].Label },
		func(i int) int { return len(curves[i].Points) }, func(i, j int) error {
			q := curves[i].Points[j]
			if q.Tokens < 0 {
				return &sfadamw.ConfigError{Field: fmt.Sprintf("curves[%d].Points[%d].Tokens", i, j), Value: q.Tokens, Reason: "must be ≥ 0"}
			}
			if q.Step < 0 {
				return &sfadamw.ConfigError{Field: fmt.Sprintf("curves[%d].Points[%d].Step", i, j), Value: q.Step, Reason: "must be ≥ 0"}
			}
			return nil
		})
	if err != nil {
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

	p := linePlot(cmp.Or(opts.Title, "Validation loss"), xLabel)
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
