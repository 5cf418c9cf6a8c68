package report

// The probes' plots: validation loss before and after the decay probe or the LR-decay
// branch (fig:Obs1, fig:Decay_AdamW_betas) and along a checkpoint interpolation
// (fig:river_valley_loss_profile), in the layout of the validation curves (facets.go).

import (
	"cmp"
	"fmt"
	"math"

	"gonum.org/v1/plot/vg"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/internal/figure"
)

// DecayProbeCurve is the decay probe of one trial (one seed of a Line): the validation
// loss at each checkpoint and after the short decay run from it.
type DecayProbeCurve struct {
	Line   Line
	Seed   int
	Points []DecayProbePoint
}

// DecayProbePoint is one checkpoint of a trial and its decay probe.
type DecayProbePoint struct {
	Tokens        int64   // tokens trained when the checkpoint was taken
	Before, After float64 // validation loss at the checkpoint and after its decay probe
	// AfterTokens is where After is drawn: the tokens at the end of an LR-decay branch,
	// which trains as the run does, so that it is read against the run at the same step;
	// 0 for Tokens (a decay probe, drawn at its checkpoint as in the paper)
	AfterTokens int64
}

// DecayProbeOptions adjusts DecayProbePlot; the zero value fits the axes to the data.
type DecayProbeOptions struct {
	Title      string // "" for "Validation loss before and after the decay probe"
	After      string // legend of the dashed lines; "" for "after the decay probe"
	YMin, YMax float64
	Seeds      int // as CurvesOptions.Seeds
}

// afterDash is the dash of the loss after a probe, and of an interpolation into an LR decay.
var afterDash = []vg.Length{vg.Points(5), vg.Points(3)}

// DecayProbePlot returns the validation loss at each checkpoint (solid) and after its
// decay probe (dashed) against tokens, every checkpoint marked: the paper's fig:Obs1
// (right) and fig:Decay_AdamW_betas, in the layout of CurvesPlot (seeds averaged, panels
// by β1, colour by C, legend right of the panels). A non-finite value breaks its line and
// is not drawn.
func DecayProbePlot(probes []DecayProbeCurve, opts DecayProbeOptions) (*figure.Figure, error) {
	return figureOf(decayProbeFigure(probes, opts))
}

func decayProbeFigure(probes []DecayProbeCurve, opts DecayProbeOptions) (*facetFigure, error) {
	fail := func(err error) (*facetFigure, error) { return nil, fmt.Errorf("report: decay probe plot: %w", err) }
	err := checkPlotInput("probes", len(probes), opts.YMin, opts.YMax,
		func(i int) seriesID { return seriesID{line: probes[i].Line, seed: probes[i].Seed} },
		func(i int) int { return len(probes[i].Points) }, func(i, j int) error {
			if q := probes[i].Points[j]; q.Tokens < 0 {
				return &fielderr.Error{Field: fmt.Sprintf("probes[%d].Points[%d].Tokens", i, j), Value: q.Tokens, Reason: "must be ≥ 0"}
			} else if q.AfterTokens < 0 {
				return &fielderr.Error{Field: fmt.Sprintf("probes[%d].Points[%d].AfterTokens", i, j), Value: q.AfterTokens, Reason: "must be ≥ 0"}
			}
			return nil
		})
	if err != nil {
		return fail(err)
	}
	var most int64
	for _, pr := range probes {
		for _, q := range pr.Points {
			most = max(most, q.Tokens, q.AfterTokens)
		}
	}
	spec := facetSpec{
		title: cmp.Or(opts.Title, "Validation loss before and after the decay probe"), xFrom0: true, markAll: true, trimEarly: true,
		kinds:       []seriesKind{{text: "at the checkpoint"}, {text: cmp.Or(opts.After, "after the decay probe"), dashes: afterDash}},
		kindHeading: "Loss", yMin: opts.YMin, yMax: opts.YMax, seeds: opts.Seeds,
		empty: &fielderr.Error{Field: "probes[].Points[].Before/After", Value: "no finite value", Reason: "nothing to plot"},
	}
	spec.xLabel, spec.xScale = tokenUnit(most)
	var series []seedSeries
	for _, pr := range probes {
		before := seedSeries{line: pr.Line, seed: pr.Seed}
		after := seedSeries{line: pr.Line, seed: pr.Seed, kind: 1}
		for _, q := range pr.Points {
			x := float64(q.Tokens)
			before.xs, before.ys = append(before.xs, x), append(before.ys, q.Before)
			after.xs, after.ys = append(after.xs, cmp.Or(float64(q.AfterTokens), x)), append(after.ys, q.After)
		}
		series = append(series, before, after)
	}
	ff, err := spec.build(series)
	if err != nil {
		return fail(err)
	}
	return ff, nil
}

// InterpolationCurve is the validation loss of one trial (one seed of a Line) along the
// segment between two of its weights: at α·w(t1) + (1−α)·w(t2), where w(t2) is the
// trial's own or, Decayed, the end of an LR-decay branch.
type InterpolationCurve struct {
	Line    Line
	Seed    int
	Decayed bool // the segment runs into an LR decay
	Points  []InterpolationPoint
}

// InterpolationPoint is the loss at one α.
type InterpolationPoint struct {
	Alpha, Loss float64
}

// InterpolationOptions adjusts InterpolationPlot; the zero value fits the axes to the data.
type InterpolationOptions struct {
	Title      string // "" for "Validation loss between two checkpoints"
	Decayed    string // legend of the curves into an LR decay (dashed); "" for "into an LR decay"
	YMin, YMax float64
	Seeds      int // as CurvesOptions.Seeds
}

// InterpolationPlot returns the validation loss against α, every α marked, the seeds of
// each Line averaged, in the layout of CurvesPlot: the paper's
// fig:river_valley_loss_profile (convex for AdamW at a constant LR, falling sharply into a
// decay, flat for SF-AdamW). A non-finite loss breaks its line.
func InterpolationPlot(curves []InterpolationCurve, opts InterpolationOptions) (*figure.Figure, error) {
	return figureOf(interpolationFigure(curves, opts))
}

func interpolationFigure(curves []InterpolationCurve, opts InterpolationOptions) (*facetFigure, error) {
	fail := func(err error) (*facetFigure, error) { return nil, fmt.Errorf("report: interpolation plot: %w", err) }
	err := checkPlotInput("curves", len(curves), opts.YMin, opts.YMax,
		func(i int) seriesID {
			return seriesID{line: curves[i].Line, seed: curves[i].Seed, decayed: curves[i].Decayed}
		},
		func(i int) int { return len(curves[i].Points) }, func(i, j int) error {
			if q := curves[i].Points[j]; math.IsNaN(q.Alpha) || math.IsInf(q.Alpha, 0) {
				return &fielderr.Error{Field: fmt.Sprintf("curves[%d].Points[%d].Alpha", i, j), Value: q.Alpha, Reason: "must be finite"}
			}
			return nil
		})
	if err != nil {
		return fail(err)
	}
	spec := facetSpec{
		title: cmp.Or(opts.Title, "Validation loss between two checkpoints"), xLabel: "α  (α·w(t1) + (1−α)·w(t2))", markAll: true,
		kinds:       []seriesKind{{text: "between the checkpoints"}, {text: cmp.Or(opts.Decayed, "into an LR decay"), dashes: afterDash}},
		kindHeading: "Segment", yMin: opts.YMin, yMax: opts.YMax, seeds: opts.Seeds,
		empty: &fielderr.Error{Field: "curves[].Points[].Loss", Value: "no finite value", Reason: "nothing to plot"},
	}
	var series []seedSeries
	for _, c := range curves {
		s := seedSeries{line: c.Line, seed: c.Seed}
		if c.Decayed {
			s.kind = 1
		}
		for _, q := range c.Points {
			s.xs, s.ys = append(s.xs, q.Alpha), append(s.ys, q.Loss)
		}
		series = append(series, s)
	}
	ff, err := spec.build(series)
	if err != nil {
		return fail(err)
	}
	return ff, nil
}
