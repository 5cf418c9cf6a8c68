package report

// The validation curves of a sweep's trials at each iterate (fig:EMA_y, fig:Obs1 middle),
// seeds averaged and laid out in panels as facets.go says: a pure function of plain data
// returning a figure; the same data give the same bytes. Non-finite values are never drawn.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot/vg"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/internal/figure"
)

// Curve is the validation curve of one trial: one seed of a Line.
type Curve struct {
	Line   Line // the configuration; curves of one Line are its seeds, drawn as their mean
	Seed   int
	Points []CurvePoint
	// Stopped is the step at which a search's early stopping ended the trial (0: it ran
	// to its end); its line ends there with a cross.
	Stopped int
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
	// YMin and YMax fix the loss axis; both 0 fit it to the lines, its top to where they
	// are after the first tenth of the x axis. Lines are clipped to it.
	YMin, YMax float64
	// Seeds is the number of seeds each line was run with: a line that averages fewer (the
	// others diverged or are unfinished) says so in the legend. 0: the most any line has.
	Seeds int
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

// CurvesPlot returns the validation loss of a sweep's trials against tokens (or steps), as
// in the paper's fig:EMA_y and fig:Obs1 (middle): the seeds of each Line averaged into one
// line per iterate, at the evaluations every seed has, over a band from the lowest to the
// highest seed; one panel per β1 (SF-AdamW) or per schedule and β1 (AdamW), on shared
// axes; the colour saying C (or the optimizer) and the dash the iterate. Give the
// completed seeds only. A non-finite or absent value breaks its line there and is not
// drawn; a finite point with no finite neighbour is drawn as a marker. The legend, right of
// the panels, lists the colours, the iterates drawn, the markers (where lines of a panel
// differ in lr, β2 or batch size) and what the bands are.
func CurvesPlot(curves []Curve, opts CurvesOptions) (*figure.Figure, error) {
	return figureOf(curvesFigure(curves, opts))
}

func curvesFigure(curves []Curve, opts CurvesOptions) (*facetFigure, error) {
	fail := func(err error) (*facetFigure, error) { return nil, fmt.Errorf("report: curves plot: %w", err) }
	err := checkPlotInput("curves", len(curves), opts.YMin, opts.YMax,
		func(i int) seriesID { return seriesID{line: curves[i].Line, seed: curves[i].Seed} },
		func(i int) int { return len(curves[i].Points) }, func(i, j int) error {
			q := curves[i].Points[j]
			if q.Tokens < 0 {
				return &fielderr.Error{Field: fmt.Sprintf("curves[%d].Points[%d].Tokens", i, j), Value: q.Tokens, Reason: "must be ≥ 0"}
			}
			if q.Step < 0 {
				return &fielderr.Error{Field: fmt.Sprintf("curves[%d].Points[%d].Step", i, j), Value: q.Step, Reason: "must be ≥ 0"}
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
	spec := facetSpec{
		title: cmp.Or(opts.Title, "Validation loss"), xLabel: "step", xFrom0: true, kindHeading: "Iterate", trimEarly: true,
		yMin: opts.YMin, yMax: opts.YMax, seeds: opts.Seeds,
		empty: &fielderr.Error{Field: "curves[].Points[].Val", Value: "no finite value", Reason: "nothing to plot at iterates " + fmt.Sprint(iterates)},
	}
	xOf := func(q CurvePoint) float64 { return float64(q.Step) }
	if !opts.Steps {
		var most int64
		for _, c := range curves {
			for _, q := range c.Points {
				most = max(most, q.Tokens)
			}
		}
		spec.xLabel, spec.xScale = tokenUnit(most)
		xOf = func(q CurvePoint) float64 { return float64(q.Tokens) }
	}
	for _, it := range iterates {
		spec.kinds = append(spec.kinds, seriesKind{text: iterateText(it), dashes: iterateDashes(it, iterates)})
	}
	var series []seedSeries
	for _, c := range curves {
		for k, it := range iterates {
			s := seedSeries{line: c.Line, seed: c.Seed, kind: k, stopped: c.Stopped > 0}
			for _, q := range c.Points {
				v, ok := q.Val[it]
				if !ok {
					v = math.NaN()
				}
				s.xs, s.ys = append(s.xs, xOf(q)), append(s.ys, v)
			}
			series = append(series, s)
		}
	}
	ff, err := spec.build(series)
	if err != nil {
		return fail(err)
	}
	return ff, nil
}

// curveIterates returns the iterates to draw: those asked for, checked, or every one
// present in canonical order.
func curveIterates(curves []Curve, asked []string) ([]string, error) {
	if asked != nil {
		if len(asked) == 0 {
			return nil, &fielderr.Error{Field: "opts.Iterates", Value: "[]", Reason: "empty: nothing to plot (nil draws every iterate)"}
		}
		for k, it := range asked {
			if it == "" {
				return nil, &fielderr.Error{Field: fmt.Sprintf("opts.Iterates[%d]", k), Value: `""`, Reason: "empty iterate name"}
			}
			if j := slices.Index(asked[:k], it); j >= 0 {
				return nil, &fielderr.Error{Field: fmt.Sprintf("opts.Iterates[%d]", k), Value: strconv.Quote(it), Reason: fmt.Sprintf("given twice (also opts.Iterates[%d])", j)}
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

// linesPerPanel returns the most lines (configurations) that one panel of the curves'
// plot holds, per iterate.
func linesPerPanel(curves []Curve) int {
	lines := map[facet]map[Line]bool{}
	most := 0
	for _, c := range curves {
		f := facetOf(c.Line)
		if lines[f] == nil {
			lines[f] = map[Line]bool{}
		}
		lines[f][c.Line] = true
		most = max(most, len(lines[f]))
	}
	return most
}
