package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"

	"github.com/sfsweep/sfsweep/sfadamw"

	"github.com/sfsweep/sfsweep/internal/figure"
	"github.com/sfsweep/sfsweep/internal/status"
)

var sweepPlotsOut = flag.String("sweepplots.out", "", "also write the sweep plots of TestSweepPlotsRender to this folder")

// lossAt is a smooth, decreasing validation loss after tok tokens, shaped like the paper's
// SlimPajama curves (≈ 10.8 at the start, ≈ 3.1 after 5B tokens).
func lossAt(tok int64) float64 { return 3.0 + 7.8/math.Sqrt(1+float64(tok)/2e7) }

// sfCurve is an SF-AdamW trial evaluated every 100M tokens up to 5B: x sits gapX above
// the base curve and y gapY above, each EWA a little below its iterate.
func sfCurve(label string, gapX, gapY float64) Curve {
	c := Curve{Label: label}
	for j := int64(1); j <= 50; j++ {
		tok := j * 100_000_000
		base := lossAt(tok)
		c.Points = append(c.Points, CurvePoint{Step: int(j) * 200, Tokens: tok, Val: map[string]float64{
			"x": base + gapX, "y": base + gapY, "ewa_x": base + gapX - 0.004, "ewa_y": base + gapY - 0.02,
		}})
	}
	return c
}

// adamWCurve is an AdamW trial evaluated like sfCurve, at w and its EWA.
func adamWCurve(label string) Curve {
	c := Curve{Label: label}
	for j := int64(1); j <= 50; j++ {
		tok := j * 100_000_000
		base := lossAt(tok)
		c.Points = append(c.Points, CurvePoint{Step: int(j) * 200, Tokens: tok, Val: map[string]float64{"w": base + 0.08, "ewa_w": base + 0.03}})
	}
	return c
}

// paperCurves are the runs of the paper's fig:EMA_y: SF-AdamW with β1 ∈ {0.1, 0.5, 0.95},
// x falling behind y as β1 drops, and an AdamW baseline.
func paperCurves() []Curve {
	return []Curve{
		sfCurve("SF-AdamW β1 = 0.1", 0.25, 0.06),
		sfCurve("SF-AdamW β1 = 0.5", 0.12, 0.04),
		sfCurve("SF-AdamW β1 = 0.95", 0.0, 0.02),
		adamWCurve("AdamW"),
	}
}

// paperProbes are the decay probes of fig:Obs1 (right) and fig:Decay_AdamW_betas: a checkpoint
// every 500M tokens; the probe helps AdamW and SF-AdamW with small β1, not β1 = 0.95.
func paperProbes() []DecayProbeCurve {
	mk := func(label string, gap, drop float64) DecayProbeCurve {
		pr := DecayProbeCurve{Label: label}
		for j := int64(1); j <= 10; j++ {
			tok := j * 500_000_000
			pr.Points = append(pr.Points, DecayProbePoint{Tokens: tok, Before: lossAt(tok) + gap, After: lossAt(tok) + gap - drop})
		}
		return pr
	}
	return []DecayProbeCurve{
		mk("AdamW", 0.08, 0.12),
		mk("SF-AdamW β1 = 0.1", 0.25, 0.2),
		mk("SF-AdamW β1 = 0.5", 0.12, 0.09),
		mk("SF-AdamW β1 = 0.95", 0.0, 0.004),
	}
}

// paperHeatTable is the paper's tab:c_sweep_05M built from its numbers.
func paperHeatTable(t *testing.T) *Table {
	t.Helper()
	cells, rows, cols := paperCInputs(t, readPaperTable(t, "c_sweep_05M"))
	tab, err := CSensitivityTable("Refined SF-AdamW, 0.5M-token batches", "tab:c_sweep_05M", cells, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func statusHeatTable(t *testing.T) *Table {
	t.Helper()
	cells, rows, cols := statusCells()
	tab, err := CSensitivityTable("Every status", "", cells, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// renderFigure renders f in format and fails the test on error.
func renderFigure(t *testing.T, f *figure.Figure, format string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := f.Write(&b, format); err != nil {
		t.Fatalf("%s: %v", format, err)
	}
	return b.Bytes()
}

// checkSVG checks that b is well-formed XML with an svg root and no non-finite number.
func checkSVG(t *testing.T, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	root := ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Errorf("SVG root element %q, want svg", root)
	}
	for _, bad := range []string{"NaN", "Inf"} {
		if bytes.Contains(b, []byte(bad)) {
			t.Errorf("SVG holds %q", bad)
		}
	}
}

// TestSweepPlotsRender renders every sweep plot for realistic input to PNG and SVG, twice
// from independently built figures, and checks that the bytes agree, that the PNG has the
// figure's size at 150 dpi, that the SVG is well-formed and that the legend names every
// trial.
func TestSweepPlotsRender(t *testing.T) {
	for _, tc := range []struct {
		name   string
		build  func() (*figure.Figure, error)
		legend []string // texts the SVG must hold
	}{
		{"curves", func() (*figure.Figure, error) { return CurvesPlot(paperCurves(), CurvesOptions{}) },
			[]string{"SF-AdamW β1 = 0.1", "SF-AdamW β1 = 0.5", "SF-AdamW β1 = 0.95", "AdamW", "x", "y", "EWA of x", "EWA of y", "w", "EWA of w", "tokens (B)"}},
		{"curves_y_steps", func() (*figure.Figure, error) {
			return CurvesPlot(paperCurves()[:3], CurvesOptions{Title: "x, y and the EWA of y", Iterates: []string{"x", "y", "ewa_y"}, Steps: true, YMin: 3, YMax: 4})
		}, []string{"x, y and the EWA of y", "SF-AdamW β1 = 0.1", "EWA of y", "step"}},
		{"decay_probe", func() (*figure.Figure, error) { return DecayProbePlot(paperProbes(), DecayProbeOptions{}) },
			[]string{"AdamW", "SF-AdamW β1 = 0.95", "at the checkpoint", "after the decay probe"}},
		{"lr_decay_branch", func() (*figure.Figure, error) {
			return DecayProbePlot(paperProbes()[:1], DecayProbeOptions{Title: "LR-decay branch", After: "after the LR decay"})
		}, []string{"LR-decay branch", "AdamW", "after the LR decay"}},
		{"interpolation", func() (*figure.Figure, error) { return InterpolationPlot(riverProfiles(), InterpolationOptions{}) },
			[]string{"AdamW, constant LR", "AdamW, LR decayed", "SF-AdamW, constant LR", "Validation loss between two checkpoints"}},
		{"heatmap_c_sweep_05M", func() (*figure.Figure, error) { return HeatMap(paperHeatTable(t)) },
			[]string{"Refined SF-AdamW, 0.5M-token batches (test perplexity)", "vanilla", "500", "0.95", "not run"}},
		{"heatmap_statuses", func() (*figure.Figure, error) { return HeatMap(statusHeatTable(t)) },
			[]string{"failed", "step 1200", "diverged (step)", "110.8"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f1, err := tc.build()
			if err != nil {
				t.Fatal(err)
			}
			f2, err := tc.build()
			if err != nil {
				t.Fatal(err)
			}
			for _, format := range []string{figure.FormatPNG, figure.FormatSVG} {
				b := renderFigure(t, f1, format)
				if again := renderFigure(t, f1, format); !bytes.Equal(b, again) {
					t.Errorf("%s: rendering the same figure twice gives different bytes", format)
				}
				if other := renderFigure(t, f2, format); !bytes.Equal(b, other) {
					t.Errorf("%s: two figures built from the same data render differently", format)
				}
				switch format {
				case figure.FormatPNG:
					img, err := png.Decode(bytes.NewReader(b))
					if err != nil {
						t.Fatal(err)
					}
					want := int(f1.Width.Points() / 72 * 150)
					if w := img.Bounds().Dx(); w < want-2 || w > want+2 {
						t.Errorf("PNG width %d px, want %d", w, want)
					}
				case figure.FormatSVG:
					checkSVG(t, b)
					for _, s := range tc.legend {
						if !bytes.Contains(b, []byte(">"+s+"<")) {
							t.Errorf("SVG has no text %q", s)
						}
					}
				}
				if *sweepPlotsOut != "" {
					if err := os.WriteFile(filepath.Join(*sweepPlotsOut, tc.name+"."+format), b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}

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

// TestCurvesPlotNonFinite draws one trial at one iterate with a NaN and an Inf among its
// values and counts, in the SVG, the paths in the trial's colour: two lines (the finite
// runs of two points), the legend line and one dot for the lone finite point at the end.
func TestCurvesPlotNonFinite(t *testing.T) {
	vals := []float64{5, 4.5, math.NaN(), 4.2, 4.1, math.Inf(1), 4.0}
	c := Curve{Label: "diverging"}
	for i, v := range vals {
		c.Points = append(c.Points, CurvePoint{Step: i, Tokens: int64(i) * 1000, Val: map[string]float64{"x": v}})
	}
	f, err := CurvesPlot([]Curve{c}, CurvesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svg := renderFigure(t, f, figure.FormatSVG)
	checkSVG(t, svg)
	if got := bytes.Count(svg, []byte("stroke:#1F77B4")); got != 3 {
		t.Errorf("%d stroked paths in the trial's colour, want 3 (two lines and the legend)", got)
	}
	if got := bytes.Count(svg, []byte("fill:#1F77B4")); got != 1 {
		t.Errorf("%d filled paths in the trial's colour, want 1 (the lone point)", got)
	}

	// A trial with nothing finite is left out; the others are drawn.
	dead := Curve{Label: "dead", Points: []CurvePoint{{Tokens: 1, Val: map[string]float64{"x": math.NaN()}}}}
	f, err = CurvesPlot([]Curve{dead, c}, CurvesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkSVG(t, renderFigure(t, f, figure.FormatSVG))

	probe := DecayProbeCurve{Label: "probe", Points: []DecayProbePoint{
		{Tokens: 1e6, Before: 4, After: math.NaN()}, {Tokens: 2e6, Before: math.Inf(1), After: 3.5},
		{Tokens: 3e6, Before: 3.8, After: 3.4}, {Tokens: 4e6, Before: 3.7, After: math.Inf(-1)},
	}}
	f, err = DecayProbePlot([]DecayProbeCurve{probe}, DecayProbeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkSVG(t, renderFigure(t, f, figure.FormatSVG))
}

// TestCurvesPlotOrder checks that points given out of order draw the same figure as
// points in order.
func TestCurvesPlotOrder(t *testing.T) {
	sorted := paperCurves()
	shuffled := paperCurves()
	for _, c := range shuffled {
		slices.Reverse(c.Points)
	}
	a, err := CurvesPlot(sorted, CurvesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := CurvesPlot(shuffled, CurvesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(renderFigure(t, a, figure.FormatSVG), renderFigure(t, b, figure.FormatSVG)) {
		t.Error("reversed points draw a different figure")
	}
}

// TestSweepPlotErrors checks that bad input is refused with an error naming the field.
func TestSweepPlotErrors(t *testing.T) {
	one := []CurvePoint{{Tokens: 10, Val: map[string]float64{"x": 4}}}
	good := Curve{Label: "a", Points: one}
	probe := []DecayProbePoint{{Tokens: 10, Before: 4, After: 3.9}}
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
		{"no points", func() error { _, err := CurvesPlot([]Curve{good, {Label: "b"}}, CurvesOptions{}); return err }, "curves[1].Points"},
		{"no label", func() error { _, err := CurvesPlot([]Curve{{Points: one}}, CurvesOptions{}); return err }, "curves[0].Label"},
		{"label of two lines", func() error { _, err := CurvesPlot([]Curve{{Label: "a\nb", Points: one}}, CurvesOptions{}); return err }, "curves[0].Label"},
		{"same label", func() error { _, err := CurvesPlot([]Curve{good, good}, CurvesOptions{}); return err }, "curves[1].Label"},
		{"negative tokens", func() error {
			_, err := CurvesPlot([]Curve{{Label: "a", Points: []CurvePoint{{Tokens: -1, Val: map[string]float64{"x": 4}}}}}, CurvesOptions{})
			return err
		}, "curves[0].Points[0].Tokens"},
		{"negative step", func() error {
			_, err := CurvesPlot([]Curve{{Label: "a", Points: []CurvePoint{{Step: -3, Val: map[string]float64{"x": 4}}}}}, CurvesOptions{Steps: true})
			return err
		}, "curves[0].Points[0].Step"},
		{"nothing finite", func() error {
			_, err := CurvesPlot([]Curve{{Label: "a", Points: []CurvePoint{{Val: map[string]float64{"x": math.Inf(1)}}}}}, CurvesOptions{})
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
			_, err := DecayProbePlot([]DecayProbeCurve{{Label: "a"}}, DecayProbeOptions{})
			return err
		}, "probes[0].Points"},
		{"probe without label", func() error {
			_, err := DecayProbePlot([]DecayProbeCurve{{Points: probe}}, DecayProbeOptions{})
			return err
		}, "probes[0].Label"},
		{"probe negative tokens", func() error {
			_, err := DecayProbePlot([]DecayProbeCurve{{Label: "a", Points: []DecayProbePoint{{Tokens: -5, Before: 4, After: 3}}}}, DecayProbeOptions{})
			return err
		}, "probes[0].Points[0].Tokens"},
		{"probe nothing finite", func() error {
			_, err := DecayProbePlot([]DecayProbeCurve{{Label: "a", Points: []DecayProbePoint{{Before: math.NaN(), After: math.Inf(-1)}}}}, DecayProbeOptions{})
			return err
		}, "probes[].Points[].Before/After"},
		{"no interpolation", func() error { _, err := InterpolationPlot(nil, InterpolationOptions{}); return err }, "curves"},
		{"interpolation α NaN", func() error {
			_, err := InterpolationPlot([]InterpolationCurve{{Label: "a", Points: []InterpolationPoint{{Alpha: math.NaN(), Loss: 3}}}}, InterpolationOptions{})
			return err
		}, "curves[0].Points[0].Alpha"},
		{"interpolation labels twice", func() error {
			c := InterpolationCurve{Label: "a", Points: []InterpolationPoint{{Alpha: 0, Loss: 3}}}
			_, err := InterpolationPlot([]InterpolationCurve{c, c}, InterpolationOptions{})
			return err
		}, "curves[1].Label"},
		{"interpolation nothing finite", func() error {
			_, err := InterpolationPlot([]InterpolationCurve{{Label: "a", Points: []InterpolationPoint{{Alpha: 0, Loss: math.NaN()}}}}, InterpolationOptions{})
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
			var ce *sfadamw.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v, want a *sfadamw.ConfigError", err)
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

// riverProfiles are the shapes of fig:river_valley_loss_profile: convex (AdamW at a
// constant LR), falling sharply (into an LR decay), flat and slowly falling (SF-AdamW).
func riverProfiles() []InterpolationCurve {
	shapes := []struct {
		label string
		loss  func(a float64) float64
	}{
		{"AdamW, constant LR", func(a float64) float64 { return 3.2 + 0.3*(a-0.5)*(a-0.5) }},
		{"AdamW, LR decayed", func(a float64) float64 { return 3.0 + 0.25*a*a }},
		{"SF-AdamW, constant LR", func(a float64) float64 { return 3.05 + 0.02*a }},
	}
	out := make([]InterpolationCurve, len(shapes))
	for i, s := range shapes {
		out[i].Label = s.label
		for k := range 11 {
			a := float64(k) / 10
			out[i].Points = append(out[i].Points, InterpolationPoint{Alpha: a, Loss: s.loss(a)})
		}
	}
	return out
}

// A title wider than its figure is wrapped at spaces, every line within the figure, and
// the heat map grows by the lines added; a short title stays one line.
func TestTitlesWrap(t *testing.T) {
	long := "Refined SF-AdamW on llama-124m with 0.5M-token batches, LR 2e-3, beta2 0.99, 5,000 steps on SlimPajama-6B (twin of tab:c_sweep_05M)"
	cells, rows, cols := statusCells()
	short, err := CSensitivityTable("Every status", "", cells, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	wide, err := CSensitivityTable(long, "", cells, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	f1, err := HeatMap(short)
	if err != nil {
		t.Fatal(err)
	}
	f2, err := HeatMap(wide)
	if err != nil {
		t.Fatal(err)
	}
	title := f2.Plots[0][0].Title
	lines := strings.Split(title.Text, "\n")
	if len(lines) < 2 || strings.Join(lines, " ") != long+" (test perplexity)" {
		t.Fatalf("title %q: want the words of %q on several lines", title.Text, long)
	}
	for _, l := range lines {
		if w := title.TextStyle.Width(l); w > f2.Width {
			t.Errorf("title line %q is %v wide, the figure %v", l, w, f2.Width)
		}
	}
	if strings.Contains(f1.Plots[0][0].Title.Text, "\n") || f2.Height <= f1.Height {
		t.Errorf("short title %q, heights %v and %v", f1.Plots[0][0].Title.Text, f1.Height, f2.Height)
	}
	fc, err := CurvesPlot(paperCurves(), CurvesOptions{Title: long})
	if err != nil {
		t.Fatal(err)
	}
	if ct := fc.Plots[0][0].Title; !strings.Contains(ct.Text, "\n") || ct.TextStyle.Width(strings.Split(ct.Text, "\n")[0]) > fc.Width {
		t.Errorf("curves title %q not wrapped to %v", ct.Text, fc.Width)
	}
	if *sweepPlotsOut != "" {
		os.WriteFile(filepath.Join(*sweepPlotsOut, "heatmap_long_title.png"), renderFigure(t, f2, figure.FormatPNG), 0o644)
	}
	renderFigure(t, f2, figure.FormatPNG)
}
