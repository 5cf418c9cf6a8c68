package report

// The sensitivity plots of a search: its metric against each searched parameter (the
// learning-rate and C sensitivity curves), completed configurations as dots joined by the
// line of the best at each value, those its early stopping ended as triangles at the
// validation loss of their last rung.

import (
	"fmt"
	"image/color"
	"maps"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/sfsweep/sfsweep/internal/figure"
	"github.com/sfsweep/sfsweep/sweeps"
)

var (
	searchDone    = color.RGBA{31, 119, 180, 255} // completed: blue dots
	searchStopped = color.RGBA{255, 127, 14, 255} // stopped: orange triangles
)

// searchSeries are the points of a search plot: the metric of the completed
// configurations, its best at each value of the parameter (the sensitivity curve, sorted
// by the parameter), and the validation loss at the last rung of the completed and of the
// stopped ones.
type searchSeries struct {
	metric, best, rungDone, rungStopped plotter.XYs
	logX, hasVanilla                    bool
	vanilla                             float64 // where C = 0 is drawn on a log axis
}

// SearchPlot draws the search against parameter param, in two panels of one x axis: the
// table's metric of the completed configurations, joined by the line of the best of them
// at each value of param (the other parameters at their best: the sensitivity curve), and
// the validation loss at the last rung each configuration reached (completed as dots,
// stopped as triangles), so that every panel has one quantity on its y axis. Log x for the
// learning rate and C, vanilla (C = 0) at the left edge. An error if no configuration has
// a value to draw, or param is not searched.
func SearchPlot(t *SearchTable, param string) (*figure.Figure, error) {
	ss, err := searchPlotSeries(t, param)
	if err != nil {
		return nil, err
	}
	top := linePlot(fmt.Sprintf("%s: %s of the completed configurations, the line through the best at each %s", t.Title, t.Metric, param), param)
	top.Y.Label.Text = t.Metric
	if len(ss.best) > 1 {
		l, err := plotter.NewLine(ss.best)
		if err != nil {
			return nil, fmt.Errorf("report: search plot of %s: %w", param, err)
		}
		l.Color, l.Width = searchDone, vg.Points(1)
		top.Add(l)
	}
	return drawSearchPanels(param, top, ss)
}

// searchPlotSeries are the points of the search plot of param.
func searchPlotSeries(t *SearchTable, param string) (searchSeries, error) {
	if !slices.Contains(t.Params, param) || param == sweeps.ParamBetas {
		return searchSeries{}, fmt.Errorf("report: search plot: %q is not a searched numeric parameter", param)
	}
	logX := param == sweeps.ParamLR || param == sweeps.ParamC
	lowest := math.Inf(1) // the least positive value, for the place of C = 0
	for _, r := range t.Rows {
		if v, ok := r.Params[param]; ok && v > 0 {
			lowest = min(lowest, v)
		}
	}
	vanilla := 0.0
	if logX && !math.IsInf(lowest, 1) {
		vanilla = lowest / 4
	}
	hasVanilla := false
	var metric, rungDone, rungStopped plotter.XYs
	for _, r := range t.Rows {
		x, ok := r.Params[param]
		if !ok {
			continue
		}
		if logX && x <= 0 {
			if param != sweeps.ParamC || vanilla == 0 {
				continue
			}
			x, hasVanilla = vanilla, true
		}
		if r.Metric != nil {
			metric = append(metric, plotter.XY{X: x, Y: *r.Metric})
		}
		if r.RungLoss != nil {
			switch r.Status {
			case "completed":
				rungDone = append(rungDone, plotter.XY{X: x, Y: *r.RungLoss})
			case "stopped":
				rungStopped = append(rungStopped, plotter.XY{X: x, Y: *r.RungLoss})
			}
		}
	}
	if len(metric)+len(rungDone)+len(rungStopped) == 0 {
		return searchSeries{}, fmt.Errorf("report: search plot of %s: no configuration has a value", param)
	}
	return searchSeries{metric: metric, best: bestAt(metric), rungDone: rungDone, rungStopped: rungStopped, logX: logX, hasVanilla: hasVanilla, vanilla: vanilla}, nil
}

// bestAt is the least y at each x of pts, sorted by x.
func bestAt(pts plotter.XYs) plotter.XYs {
	best := map[float64]float64{}
	for _, p := range pts {
		if y, ok := best[p.X]; !ok || p.Y < y {
			best[p.X] = p.Y
		}
	}
	var out plotter.XYs
	for _, x := range slices.Sorted(maps.Keys(best)) {
		out = append(out, plotter.XY{X: x, Y: best[x]})
	}
	return out
}

// drawSearchPanels adds the points of ss to the top panel (the metric) and to a bottom
// one (the loss at the last rung), on one x axis.
func drawSearchPanels(param string, top *plot.Plot, ss searchSeries) (*figure.Figure, error) {
	metric, rungDone, rungStopped, logX := ss.metric, ss.rungDone, ss.rungStopped, ss.logX
	dot := draw.GlyphStyle{Color: searchDone, Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}
	tri := draw.GlyphStyle{Color: searchStopped, Radius: vg.Points(2.8), Shape: draw.TriangleGlyph{}}
	bottom := linePlot("validation loss at the last rung reached: completed (dots), stopped (triangles)", param)
	bottom.Y.Label.Text = "val_loss at the last rung"
	for _, panel := range []struct {
		p   *plot.Plot
		pts []plotter.XYs
		gs  []draw.GlyphStyle
	}{{top, []plotter.XYs{metric}, []draw.GlyphStyle{dot}}, {bottom, []plotter.XYs{rungDone, rungStopped}, []draw.GlyphStyle{dot, tri}}} {
		if logX {
			panel.p.X.Scale = plot.LogScale{}
			panel.p.X.Tick.Marker = vanillaTicks{ss.hasVanilla, ss.vanilla}
		}
		for i, pts := range panel.pts {
			if len(pts) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, fmt.Errorf("report: search plot of %s: %w", param, err)
			}
			sc.GlyphStyle = panel.gs[i]
			panel.p.Add(sc)
		}
	}
	// one x axis for both panels
	lo, hi := math.Min(top.X.Min, bottom.X.Min), math.Max(top.X.Max, bottom.X.Max)
	if len(metric) == 0 {
		lo, hi = bottom.X.Min, bottom.X.Max
	}
	top.X.Min, top.X.Max, bottom.X.Min, bottom.X.Max = lo, hi, lo, hi
	return &figure.Figure{Plots: [][]*plot.Plot{{top}, {bottom}}, Width: 6 * vg.Inch, Height: 6.5 * vg.Inch}, nil
}

// vanillaTicks are log ticks with vanilla (C = 0), drawn at at, labelled.
type vanillaTicks struct {
	on bool
	at float64
}

// Ticks implements plot.Ticker: log ticks, labelled at 1, 2 and 5 times a power of ten
// (and more within a decade) where the range spans less than three decades (plot.LogTicks labels only powers of ten).
func (v vanillaTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.LogTicks{Prec: -1}.Ticks(lo, hi)
	if hi/lo < 1000 {
		ts = nil
		ms := []float64{1, 2, 5}
		if hi/lo < 10 {
			ms = []float64{1, 1.5, 2, 3, 4, 5, 7}
		}
		for k := math.Floor(math.Log10(lo)); math.Pow(10, k) <= hi; k++ {
			for _, m := range ms {
				if x := m * math.Pow(10, k); x >= lo && x <= hi {
					ts = append(ts, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', -1, 64)})
				}
			}
		}
	}
	if !v.on {
		return ts
	}
	ts = slices.DeleteFunc(ts, func(t plot.Tick) bool { return t.Value < v.at*2 && t.Label != "" })
	return append([]plot.Tick{{Value: v.at, Label: "vanilla"}}, ts...)
}

// searchPlotParams are the parameters of a search plotted: the searched numeric ones.
func searchPlotParams(t *SearchTable) []string {
	return slices.DeleteFunc(slices.Clone(t.Params), func(p string) bool { return p == sweeps.ParamBetas })
}
