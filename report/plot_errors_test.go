package report

// What the plots refuse (inputs that are not a plot) and what they leave out (points
// that are not finite).

import (
	"bytes"
	"errors"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/internal/figure"
	"github.com/sfsweep/sfsweep/internal/status"
)

func TestFiniteSegments(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, tc := range []struct {
		name string
		ys   []float64
		want []int // segment lengths
	}{
		{"all finite", []float64{1, 2, 3}, []int{3}},
		{"gap in the middle", []float64{1, nan, 3, 4}, []int{1, 2}},
		{"infinities", []float64{inf, 1, 2, math.Inf(-1), 3}, []int{2, 1}},
		{"trailing divergence", []float64{1, 2, 3, nan, nan}, []int{3}},
		{"nothing finite", []float64{nan, inf}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			xs := make([]float64, len(tc.ys))
			for i := range xs {
				xs[i] = float64(i)
			}
			var got []int
			for _, s := range finiteSegments(xs, tc.ys) {
				got = append(got, len(s))
				for _, p := range s {
					if math.IsNaN(p.Y) || math.IsInf(p.Y, 0) {
						t.Errorf("segment holds %v", p.Y)
					}
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("segments %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCurvesPlotNonFinite draws one AdamW trial at one iterate with a NaN and an Inf among
// its values and counts, in the SVG, the paths in the line's colour: two lines (the finite
// runs of two points), the legend's line and one dot for the lone finite point at the end.
func TestCurvesPlotNonFinite(t *testing.T) {
	vals := []float64{5, 4.5, math.NaN(), 4.2, 4.1, math.Inf(1), 4.0}
	c := Curve{Line: adamWLine(1e-3), Seed: 1}
	for i, v := range vals {
		c.Points = append(c.Points, CurvePoint{Step: i, Tokens: int64(i) * 1000, Val: map[string]float64{"w": v}})
	}
	f, err := CurvesPlot([]Curve{c}, CurvesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svg := renderFigure(t, f, figure.FormatSVG)
	checkSVG(t, svg)
	if got := bytes.Count(svg, []byte("stroke:#D62728")); got != 3 {
		t.Errorf("%d stroked paths in the line's colour, want 3 (two lines and the legend)", got)
	}
	if got := bytes.Count(svg, []byte("fill:#D62728")); got != 1 {
		t.Errorf("%d filled paths in the line's colour, want 1 (the lone point)", got)
	}

	// A line with nothing finite is left out, and so is its colour in the legend; the
	// others are drawn.
	dead := Curve{Line: sfLine(0.9, 50), Points: []CurvePoint{{Tokens: 1, Val: map[string]float64{"w": math.NaN()}}}}
	ff, err := curvesFigure([]Curve{dead, c}, CurvesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ff.panels) != 1 || keyHas(ff.key, "C = 50") {
		t.Errorf("%d panels and a legend of %q: the dead line is drawn", len(ff.panels), keyTexts(ff.key))
	}
	checkSVG(t, renderFigure(t, ff.fig, figure.FormatSVG))

	// A seed whose value is not finite makes the mean not finite there: not drawn.
	other := c
	other.Seed = 2
	other.Points = slices.Clone(c.Points)
	other.Points[0] = CurvePoint{Step: 0, Tokens: 0, Val: map[string]float64{"w": math.Inf(-1)}}
	f, err = CurvesPlot([]Curve{c, other}, CurvesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkSVG(t, renderFigure(t, f, figure.FormatSVG))

	probe := DecayProbeCurve{Line: sfLine(0.9, 0), Points: []DecayProbePoint{
		{Tokens: 1e6, Before: 4, After: math.NaN()}, {Tokens: 2e6, Before: math.Inf(1), After: 3.5},
		{Tokens: 3e6, Before: 3.8, After: 3.4}, {Tokens: 4e6, Before: 3.7, After: math.Inf(-1)},
	}}
	f, err = DecayProbePlot([]DecayProbeCurve{probe}, DecayProbeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkSVG(t, renderFigure(t, f, figure.FormatSVG))
}

// TestSweepPlotErrors checks that bad input is refused with an error naming the field.
func TestSweepPlotErrors(t *testing.T) {
	one := []CurvePoint{{Tokens: 10, Val: map[string]float64{"x": 4}}}
	good := Curve{Line: sfLine(0.9, 0), Seed: 1, Points: one}
	probe := []DecayProbePoint{{Tokens: 10, Before: 4, After: 3.9}}
	with := func(l Line) []Curve { return []Curve{{Line: l, Points: one}} }
	hyper, err := HyperparameterTable("", "", []TrialSummary{{Optimizer: "adamw", LR: 1e-3, Beta1: 0.9, Beta2: 0.95, Value: 20, Status: status.Completed}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		err   func() error
		field string
	}{
		{"no curves", func() error { _, err := CurvesPlot(nil, CurvesOptions{}); return err }, "curves"},
		{"no points", func() error {
			_, err := CurvesPlot([]Curve{good, {Line: sfLine(0.9, 50)}}, CurvesOptions{})
			return err
		}, "curves[1].Points"},
		{"no optimizer", func() error { _, err := CurvesPlot(with(Line{Beta1: 0.9}), CurvesOptions{}); return err }, "curves[0].Line.Optimizer"},
		{"optimizer of two lines", func() error {
			_, err := CurvesPlot(with(Line{Optimizer: "a\nb"}), CurvesOptions{})
			return err
		}, "curves[0].Line.Optimizer"},
		{"lr NaN", func() error {
			l := sfLine(0.9, 0)
			l.LR = math.NaN()
			_, err := CurvesPlot(with(l), CurvesOptions{})
			return err
		}, "curves[0].Line.LR"},
		{"negative C", func() error { _, err := CurvesPlot(with(sfLine(0.9, -5)), CurvesOptions{}); return err }, "curves[0].Line.C"},
		{"negative batch", func() error {
			l := sfLine(0.9, 0)
			l.BatchTokens = -1
			_, err := CurvesPlot(with(l), CurvesOptions{})
			return err
		}, "curves[0].Line.BatchTokens"},
		{"same line and seed", func() error { _, err := CurvesPlot([]Curve{good, good}, CurvesOptions{}); return err }, "curves[1].Seed"},
		{"negative tokens", func() error {
			_, err := CurvesPlot([]Curve{{Line: good.Line, Points: []CurvePoint{{Tokens: -1, Val: map[string]float64{"x": 4}}}}}, CurvesOptions{})
			return err
		}, "curves[0].Points[0].Tokens"},
		{"negative step", func() error {
			_, err := CurvesPlot([]Curve{{Line: good.Line, Points: []CurvePoint{{Step: -3, Val: map[string]float64{"x": 4}}}}}, CurvesOptions{Steps: true})
			return err
		}, "curves[0].Points[0].Step"},
		{"nothing finite", func() error {
			_, err := CurvesPlot([]Curve{{Line: good.Line, Points: []CurvePoint{{Val: map[string]float64{"x": math.Inf(1)}}}}}, CurvesOptions{})
			return err
		}, "curves[].Points[].Val"},
		{"no such iterate", func() error {
			_, err := CurvesPlot([]Curve{good}, CurvesOptions{Iterates: []string{"ewa_y"}})
			return err
		}, "curves[].Points[].Val"},
		{"empty iterates", func() error { _, err := CurvesPlot([]Curve{good}, CurvesOptions{Iterates: []string{}}); return err }, "opts.Iterates"},
		{"iterate twice", func() error {
			_, err := CurvesPlot([]Curve{good}, CurvesOptions{Iterates: []string{"x", "x"}})
			return err
		}, "opts.Iterates[1]"},
		{"loss range upside down", func() error { _, err := CurvesPlot([]Curve{good}, CurvesOptions{YMin: 4, YMax: 3}); return err }, "opts.YMax"},
		{"loss range NaN", func() error {
			_, err := CurvesPlot([]Curve{good}, CurvesOptions{YMin: math.NaN(), YMax: 3})
			return err
		}, "opts.YMin"},
		{"no probes", func() error { _, err := DecayProbePlot(nil, DecayProbeOptions{}); return err }, "probes"},
		{"probe without points", func() error {
			_, err := DecayProbePlot([]DecayProbeCurve{{Line: good.Line}}, DecayProbeOptions{})
			return err
		}, "probes[0].Points"},
		{"probe without optimizer", func() error {
			_, err := DecayProbePlot([]DecayProbeCurve{{Points: probe}}, DecayProbeOptions{})
			return err
		}, "probes[0].Line.Optimizer"},
		{"probe seed twice", func() error {
			pr := DecayProbeCurve{Line: good.Line, Seed: 4, Points: probe}
			_, err := DecayProbePlot([]DecayProbeCurve{pr, pr}, DecayProbeOptions{})
			return err
		}, "probes[1].Seed"},
		{"probe negative tokens", func() error {
			_, err := DecayProbePlot([]DecayProbeCurve{{Line: good.Line, Points: []DecayProbePoint{{Tokens: -5, Before: 4, After: 3}}}}, DecayProbeOptions{})
			return err
		}, "probes[0].Points[0].Tokens"},
		{"probe nothing finite", func() error {
			_, err := DecayProbePlot([]DecayProbeCurve{{Line: good.Line, Points: []DecayProbePoint{{Before: math.NaN(), After: math.Inf(-1)}}}}, DecayProbeOptions{})
			return err
		}, "probes[].Points[].Before/After"},
		{"no interpolation", func() error { _, err := InterpolationPlot(nil, InterpolationOptions{}); return err }, "curves"},
		{"interpolation α NaN", func() error {
			_, err := InterpolationPlot([]InterpolationCurve{{Line: good.Line, Points: []InterpolationPoint{{Alpha: math.NaN(), Loss: 3}}}}, InterpolationOptions{})
			return err
		}, "curves[0].Points[0].Alpha"},
		{"interpolation seed twice", func() error {
			c := InterpolationCurve{Line: good.Line, Points: []InterpolationPoint{{Alpha: 0, Loss: 3}}}
			_, err := InterpolationPlot([]InterpolationCurve{c, c}, InterpolationOptions{})
			return err
		}, "curves[1].Seed"},
		{"interpolation nothing finite", func() error {
			_, err := InterpolationPlot([]InterpolationCurve{{Line: good.Line, Points: []InterpolationPoint{{Alpha: 0, Loss: math.NaN()}}}}, InterpolationOptions{})
			return err
		}, "curves[].Points[].Loss"},
		{"no table", func() error { _, err := HeatMap(nil); return err }, "table"},
		{"hyperparameter table", func() error { _, err := HeatMap(hyper); return err }, "Kind"},
		{"no rows", func() error {
			_, err := HeatMap(&Table{Kind: TableCSensitivity, Columns: []string{"vanilla"}})
			return err
		}, "Rows"},
		{"no columns", func() error { _, err := HeatMap(&Table{Kind: TableCSensitivity, Rows: []string{"0.9"}}); return err }, "Columns"},
		{"bad format", func() error { f, _ := CurvesPlot([]Curve{good}, CurvesOptions{}); return f.Write(io.Discard, "gif") }, "format"},
		{"empty figure", func() error {
			return (&figure.Figure{Width: vg.Inch, Height: vg.Inch}).Write(io.Discard, figure.FormatSVG)
		}, "Plots"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			var ce *fielderr.Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %v, want a *fielderr.Error", err)
			}
			if ce.Field != tc.field {
				t.Errorf("error %q names field %q, want %q", err, ce.Field, tc.field)
			}
		})
	}

	// A table whose cells do not fill its grid is refused, not drawn.
	bad := paperHeatTable(t)
	bad.Cells = bad.Cells[1:]
	if _, err := HeatMap(bad); err == nil || !strings.Contains(err.Error(), "cells for") {
		t.Errorf("HeatMap of a table missing a cell: %v", err)
	}
}
