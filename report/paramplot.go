package report

// The plots of a program trainer's grid (parameters:): its metric against each parameter
// that takes more than one value, a line for each setting of the others, each point the
// mean over the seeds that completed with a bar of one sample sd.

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/sfsweep/sfsweep/internal/figure"
)

// paramLine is one line of a parameter plot: the setting of the other parameters it
// holds (its label), and at each x the mean and sample sd over the completed seeds.
type paramLine struct {
	label     string
	xs        []float64
	mean, std []float64
}

// paramAxis is a parameter plot's x axis: the parameter's values as numbers where every
// one is (log where they are positive and span a factor of 20), else the values in the
// table's order, at 0, 1, ..., labelled.
type paramAxis struct {
	numeric, log bool
	labels       []string // the categories, for a categorical axis
}

// paramPlotSeries are the lines of the plot of metric against param from table t.
func paramPlotSeries(t *ParamTable, metric, param string) (paramAxis, []paramLine, error) {
	if !slices.Contains(t.Params, param) {
		return paramAxis{}, nil, fmt.Errorf("report: parameter plot: %q is not a parameter of more than one value", param)
	}
	if !slices.Contains(t.Metrics, metric) {
		return paramAxis{}, nil, fmt.Errorf("report: parameter plot: no configuration reports %q", metric)
	}
	ax := paramAxis{numeric: true, log: true}
	var cats []string
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range t.Rows {
		v := r.Values[param]
		if !slices.Contains(cats, v) {
			cats = append(cats, v)
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			ax.numeric = false
			continue
		}
		lo, hi = min(lo, f), max(hi, f)
	}
	ax.log = ax.numeric && lo > 0 && hi/lo >= 20
	if !ax.numeric {
		ax.labels = cats
	}
	x := func(v string) float64 {
		if ax.numeric {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
		return float64(slices.Index(cats, v))
	}
	var lines []paramLine
	byLabel := map[string]int{}
	for _, r := range t.Rows {
		var others []string
		for _, p := range t.Params {
			if p != param {
				others = append(others, p+"="+r.Values[p])
			}
		}
		label := strings.Join(others, ", ")
		s, ok := r.Metrics[metric]
		if !ok {
			continue
		}
		i, seen := byLabel[label]
		if !seen {
			i = len(lines)
			byLabel[label] = i
			lines = append(lines, paramLine{label: label})
		}
		l := &lines[i]
		l.xs, l.mean, l.std = append(l.xs, x(r.Values[param])), append(l.mean, s.Mean), append(l.std, s.Std)
	}
	if len(lines) == 0 {
		return ax, nil, fmt.Errorf("report: parameter plot of %s: no configuration has completed", param)
	}
	for i := range lines {
		l := &lines[i]
		order := make([]int, len(l.xs))
		for j := range order {
			order[j] = j
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(l.xs[a], l.xs[b]) })
		l.xs, l.mean, l.std = permute(l.xs, order), permute(l.mean, order), permute(l.std, order)
	}
	return ax, lines, nil
}

func permute(v []float64, order []int) []float64 {
	out := make([]float64, len(order))
	for i, j := range order {
		out[i] = v[j]
	}
	return out
}

// ParamPlot draws the metric against parameter param of a program's grid: a line for each
// setting of the other parameters, each point the mean over the seeds that completed with
// a bar of ±1 sample sd. An error if param takes one value or no configuration completed.
func ParamPlot(t *ParamTable, metric, param string) (*figure.Figure, error) {
	ax, lines, err := paramPlotSeries(t, metric, param)
	if err != nil {
		return nil, err
	}
	p := linePlot(fmt.Sprintf("%s: %s against %s (mean ± sd over seeds)", t.Title, metric, param), param)
	p.Y.Label.Text = metric
	switch {
	case ax.log:
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, vanillaTicks{}
	case !ax.numeric:
		var ticks []plot.Tick
		for i, c := range ax.labels {
			ticks = append(ticks, plot.Tick{Value: float64(i), Label: c})
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		p.X.Min, p.X.Max = -0.5, float64(len(ax.labels))-0.5
	}
	colors := append([]color.RGBA{searchDone}, familyColors...)
	for i, l := range lines {
		c := colors[i%len(colors)]
		xys, errs := make(plotter.XYs, len(l.xs)), make(plotter.YErrors, len(l.xs))
		for j := range l.xs {
			xys[j] = plotter.XY{X: l.xs[j], Y: l.mean[j]}
			errs[j].Low, errs[j].High = l.std[j], l.std[j]
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, fmt.Errorf("report: parameter plot of %s: %w", param, err)
		}
		line.Color, line.Width = c, vg.Points(1.2)
		points.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}
		bars, err := plotter.NewYErrorBars(struct {
			plotter.XYs
			plotter.YErrors
		}{xys, errs})
		if err != nil {
			return nil, fmt.Errorf("report: parameter plot of %s: %w", param, err)
		}
		bars.Color = c
		p.Add(line, points, bars)
		if l.label != "" {
			p.Legend.Add(l.label, line, points)
		}
	}
	p.Legend.Top = true
	return &figure.Figure{Plots: [][]*plot.Plot{{p}}, Width: 6 * vg.Inch, Height: 4 * vg.Inch}, nil
}

// ParamPlotMetric is the metric a program grid's plots draw: the manifest's own where a
// configuration reports it, else the table's first.
func ParamPlotMetric(t *ParamTable, want string) string {
	if slices.Contains(t.Metrics, want) || len(t.Metrics) == 0 {
		return want
	}
	return t.Metrics[0]
}
