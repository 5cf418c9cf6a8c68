package report

// The sensitivity plots of a search: its metric against each searched parameter (the
// learning-rate and C sensitivity curves), completed configurations as dots, those its
// early stopping ended as triangles at the validation loss of their last rung.

import (
	"fmt"
	"image/color"
	"math"
	"slices"

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

// SearchPlot draws the table's metric against parameter param: log x for the learning
// rate and C, vanilla (C = 0) at the left edge. An error if no configuration has a value
// to draw, or param is not searched.
func SearchPlot(t *SearchTable, param string) (*figure.Figure, error) {
	if !slices.Contains(t.Params, param) || param == sweeps.ParamBetas {
		return nil, fmt.Errorf("report: search plot: %q is not a searched numeric parameter", param)
	}
	logX := param == sweeps.ParamLR || param == sweeps.ParamC
	var done, stopped plotter.XYs
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
		switch {
		case r.Metric != nil:
			done = append(done, plotter.XY{X: x, Y: *r.Metric})
		case r.Status == "stopped" && r.RungLoss != nil:
			stopped = append(stopped, plotter.XY{X: x, Y: *r.RungLoss})
		}
	}
	if len(done)+len(stopped) == 0 {
		return nil, fmt.Errorf("report: search plot of %s: no configuration has a value", param)
	}
	p := linePlot(fmt.Sprintf("%s: %s against %s", t.Title, t.Metric, param), param)
	p.Y.Label.Text = t.Metric + " (stopped: val_loss at its last rung)"
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = vanillaTicks{hasVanilla, vanilla}
	}
	for _, s := range []struct {
		pts   plotter.XYs
		glyph draw.GlyphStyle
		name  string
	}{
		{done, draw.GlyphStyle{Color: searchDone, Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}, "completed"},
		{stopped, draw.GlyphStyle{Color: searchStopped, Radius: vg.Points(2.8), Shape: draw.TriangleGlyph{}}, "stopped (last rung)"},
	} {
		if len(s.pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(s.pts)
		if err != nil {
			return nil, fmt.Errorf("report: search plot of %s: %w", param, err)
		}
		sc.GlyphStyle = s.glyph
		p.Add(sc)
		p.Legend.Add(s.name, sc)
	}
	p.Legend.Top = true
	return &figure.Figure{Plots: [][]*plot.Plot{{p}}, Width: 6 * vg.Inch, Height: 4 * vg.Inch}, nil
}

// vanillaTicks are log ticks with vanilla (C = 0), drawn at at, labelled.
type vanillaTicks struct {
	on bool
	at float64
}

// Ticks implements plot.Ticker.
func (v vanillaTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.LogTicks{Prec: -1}.Ticks(lo, hi)
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
