package report

// The probes' plots: validation loss before and after the decay probe or the LR-decay
// branch (fig:Obs1, fig:Decay_AdamW_betas) and along a checkpoint interpolation
// (fig:river_valley_loss_profile).

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/sfsweep/sfsweep/sfadamw"

	"github.com/sfsweep/sfsweep/internal/figure"
)

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
func DecayProbePlot(probes []DecayProbeCurve, opts DecayProbeOptions) (*figure.Figure, error) {
	fail := func(err error) (*figure.Figure, error) { return nil, fmt.Errorf("report: decay probe plot: %w", err) }
	err := checkPlotInput("probes", len(probes), opts.YMin, opts.YMax, func(i int) string { return probes[i].Label },
		func(i int) int { return len(probes[i].Points) }, func(i, j int) error {
			if q := probes[i].Points[j]; q.Tokens < 0 {
				return &sfadamw.ConfigError{Field: fmt.Sprintf("probes[%d].Points[%d].Tokens", i, j), Value: q.Tokens, Reason: "must be ≥ 0"}
			}
			return nil
		})
	if err != nil {
		return fail(err)
	}
	var most int64
	for _, pr := range probes {
		for _, q := range pr.Points {
			most = max(most, q.Tokens)
		}
	}
	xLabel, scale := tokenUnit(most)

	p := linePlot(cmp.Or(opts.Title, "Validation loss before and after the decay probe"), xLabel)
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
func InterpolationPlot(curves []InterpolationCurve, opts InterpolationOptions) (*figure.Figure, error) {
	fail := func(err error) (*figure.Figure, error) {
		return nil, fmt.Errorf("report: interpolation plot: %w", err)
	}
	err := checkPlotInput("curves", len(curves), opts.YMin, opts.YMax, func(i int) string { return curves[i].Label },
		func(i int) int { return len(curves[i].Points) }, func(i, j int) error {
			if q := curves[i].Points[j]; math.IsNaN(q.Alpha) || math.IsInf(q.Alpha, 0) {
				return &sfadamw.ConfigError{Field: fmt.Sprintf("curves[%d].Points[%d].Alpha", i, j), Value: q.Alpha, Reason: "must be finite"}
			}
			return nil
		})
	if err != nil {
		return fail(err)
	}
	p := linePlot(cmp.Or(opts.Title, "Validation loss between two checkpoints"), "α  (α·w(t1) + (1−α)·w(t2))")
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
func lineFigure(p *plot.Plot) *figure.Figure {
	p.Legend.Top = true
	p.Legend.ThumbnailWidth = vg.Points(28)
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	p.Legend.Padding = vg.Points(1)
	wrapTitle(p, 7*vg.Inch)
	return &figure.Figure{Plots: [][]*plot.Plot{{p}}, Width: 7 * vg.Inch, Height: 4.5 * vg.Inch}
}
