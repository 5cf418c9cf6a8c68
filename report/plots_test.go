package report

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/figure"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/internal/status"
)

var sweepPlotsOut = flag.String("sweepplots.out", "", "also write the sweep plots of TestSweepPlotsRender to this folder")

// lossAt is a smooth, decreasing validation loss after tok tokens, shaped like the paper's
// SlimPajama curves (≈ 10.8 at the start, ≈ 3.1 after 5B tokens).
func lossAt(tok int64) float64 { return 3.0 + 7.8/math.Sqrt(1+float64(tok)/2e7) }

// Lines of the fixtures: SF-AdamW (C = 0: vanilla) and AdamW at a constant LR, with the
// paper's hyperparameters.
func sfLine(beta1, c float64) Line {
	return Line{Optimizer: training.SFAdamW, LR: 2e-3, Beta1: beta1, Beta2: 0.99, C: c, BatchTokens: 1 << 19}
}

func adamWLine(lr float64) Line {
	return Line{Optimizer: training.AdamW, Schedule: "constant", LR: lr, Beta1: 0.9, Beta2: 0.95, BatchTokens: 1 << 19}
}

// seedNoise is a seed's offset of the loss, different for every seed and evaluation.
func seedNoise(seed int, j int64) float64 {
	return 0.015 * math.Sin(float64(seed)*1.7+float64(j)*0.9)
}

// sfCurve is one seed of an SF-AdamW line evaluated every 100M tokens up to 5B: x sits
// gapX above the base curve and y gapY above, each EWA a little below its iterate.
func sfCurve(l Line, seed int, gapX, gapY float64) Curve {
	c := Curve{Line: l, Seed: seed}
	for j := int64(1); j <= 50; j++ {
		tok := j * 100_000_000
		base := lossAt(tok) + seedNoise(seed, j)
		c.Points = append(c.Points, CurvePoint{Step: int(j) * 200, Tokens: tok, Val: map[string]float64{
			"x": base + gapX, "y": base + gapY, "ewa_x": base + gapX - 0.004, "ewa_y": base + gapY - 0.02,
		}})
	}
	return c
}

// adamWCurve is one seed of an AdamW line evaluated like sfCurve, at w and its EWA.
func adamWCurve(l Line, seed int, gap float64) Curve {
	c := Curve{Line: l, Seed: seed}
	for j := int64(1); j <= 50; j++ {
		tok := j * 100_000_000
		base := lossAt(tok) + gap + seedNoise(seed, j)
		c.Points = append(c.Points, CurvePoint{Step: int(j) * 200, Tokens: tok, Val: map[string]float64{"w": base + 0.08, "ewa_w": base + 0.03}})
	}
	return c
}

// paperCurves are the runs of the paper's fig:EMA_y over three seeds: SF-AdamW with
// β1 ∈ {0.1, 0.5, 0.95}, x falling behind y as β1 drops, and an AdamW baseline.
func paperCurves() []Curve {
	var out []Curve
	for seed := 1; seed <= 3; seed++ {
		out = append(out,
			sfCurve(sfLine(0.1, 0), seed, 0.25, 0.06),
			sfCurve(sfLine(0.5, 0), seed, 0.12, 0.04),
			sfCurve(sfLine(0.95, 0), seed, 0.0, 0.02),
			adamWCurve(adamWLine(1e-3), seed, 0))
	}
	return out
}

// cSweepCs are the Cs of cSweepCurves at each β1 (0: vanilla).
var cSweepCs = map[float64][]float64{0.5: {0, 5, 20, 100}, 0.9: {0, 20, 50, 200, 500}, 0.95: {0, 50, 200, 500}}

// cSweepCurves are the primary iterate of a C sweep over three seeds, as tab:c_sweep_05M
// runs it: refined SF-AdamW at three β1, the loss lowest near the best C of each row;
// seed 3 of (β1 = 0.95, C = 500) diverged, and AdamW at two learning rates.
func cSweepCurves() []Curve {
	var out []Curve
	for _, b1 := range []float64{0.5, 0.9, 0.95} {
		for _, c := range cSweepCs[b1] {
			gap := 0.06
			if c > 0 {
				gap = 0.012 * math.Abs(math.Log(c/50))
			}
			for seed := 1; seed <= 3; seed++ {
				if b1 == 0.95 && c == 500 && seed == 3 {
					continue
				}
				sc := sfCurve(sfLine(b1, c), seed, gap+0.1*(0.95-b1), 0)
				for _, q := range sc.Points {
					delete(q.Val, "y")
					delete(q.Val, "ewa_y")
					delete(q.Val, "ewa_x")
				}
				out = append(out, sc)
			}
		}
	}
	for seed := 1; seed <= 3; seed++ {
		out = append(out, adamWCurve(adamWLine(1e-3), seed, 0.02), adamWCurve(adamWLine(2e-3), seed, 0.05))
	}
	return out
}

// paperProbes are the decay probes of fig:Obs1 (right) and fig:Decay_AdamW_betas over two
// seeds: a checkpoint every 500M tokens; the probe helps AdamW and SF-AdamW with small β1,
// not β1 = 0.95.
func paperProbes() []DecayProbeCurve {
	mk := func(l Line, seed int, gap, drop float64) DecayProbeCurve {
		pr := DecayProbeCurve{Line: l, Seed: seed}
		for j := int64(1); j <= 10; j++ {
			tok := j * 500_000_000
			base := lossAt(tok) + gap + seedNoise(seed, j)
			pr.Points = append(pr.Points, DecayProbePoint{Tokens: tok, Before: base, After: base - drop})
		}
		return pr
	}
	var out []DecayProbeCurve
	for seed := 1; seed <= 2; seed++ {
		out = append(out,
			mk(adamWLine(1e-3), seed, 0.08, 0.12),
			mk(sfLine(0.1, 0), seed, 0.25, 0.2),
			mk(sfLine(0.5, 0), seed, 0.12, 0.09),
			mk(sfLine(0.95, 0), seed, 0.0, 0.004))
	}
	return out
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
			[]string{"SF-AdamW, β1 = 0.1", "SF-AdamW, β1 = 0.5", "SF-AdamW, β1 = 0.95", "AdamW, constant LR, β1 = 0.9", "vanilla, C = 1/(1−β1)",
				"constant LR", "x", "y", "EWA of x", "EWA of y", "w", "EWA of w", "tokens (B)", "Seeds", "line: their mean", "band: lowest to highest"}},
		{"curves_c_sweep", func() (*figure.Figure, error) {
			return CurvesPlot(cSweepCurves(), CurvesOptions{Title: "C sweep", Seeds: 3})
		}, []string{"C sweep", "SF-AdamW, β1 = 0.5", "C = 5", "C = 500 (n=2–3 of 3)", "lr = 1e-3", "lr = 2e-3", "Markers"}},
		{"curves_y_steps", func() (*figure.Figure, error) {
			return CurvesPlot(paperCurves()[:3], CurvesOptions{Title: "x, y and the EWA of y", Iterates: []string{"x", "y", "ewa_y"}, Steps: true, YMin: 3, YMax: 4})
		}, []string{"x, y and the EWA of y", "β1 = 0.1", "EWA of y", "step", "vanilla, C = 1/(1−β1)"}},
		{"decay_probe", func() (*figure.Figure, error) { return DecayProbePlot(paperProbes(), DecayProbeOptions{Seeds: 3}) },
			[]string{"AdamW, constant LR, β1 = 0.9", "SF-AdamW, β1 = 0.95", "at the checkpoint", "after the decay probe", "vanilla, C = 1/(1−β1) (n=2 of 3)"}},
		{"lr_decay_branch", func() (*figure.Figure, error) {
			return DecayProbePlot(paperProbes()[:1], DecayProbeOptions{Title: "LR-decay branch", After: "after the LR decay"})
		}, []string{"LR-decay branch", "AdamW, constant LR, β1 = 0.9", "constant LR", "after the LR decay"}},
		{"interpolation", func() (*figure.Figure, error) {
			return InterpolationPlot(riverProfiles(), InterpolationOptions{Decayed: "into the LR decay to step 180"})
		}, []string{"AdamW, constant LR, β1 = 0.9", "SF-AdamW, β1 = 0.95", "between the checkpoints", "into the LR decay to step 180"}},
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

// keyTexts are the texts of a legend's rows.
func keyTexts(k *legend) []string {
	var out []string
	for _, r := range k.rows {
		out = append(out, r.text)
	}
	return out
}

func keyHas(k *legend, s string) bool { return slices.Contains(keyTexts(k), s) }

// TestCurvesPlotOrder checks that points given out of order, and curves (seeds) given in
// another order, draw the same figure.
func TestCurvesPlotOrder(t *testing.T) {
	sorted := paperCurves()
	shuffled := paperCurves()
	for _, c := range shuffled {
		slices.Reverse(c.Points)
	}
	slices.Reverse(shuffled)
	shuffled[0], shuffled[5] = shuffled[5], shuffled[0]
	a, err := CurvesPlot(sorted, CurvesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := CurvesPlot(shuffled, CurvesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(renderFigure(t, a, figure.FormatSVG), renderFigure(t, b, figure.FormatSVG)) {
		t.Error("reordered points and seeds draw a different figure")
	}
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

// riverProfiles are the shapes of fig:river_valley_loss_profile over two seeds: convex
// (AdamW at a constant LR), falling sharply (into an LR decay), flat and slowly falling
// (SF-AdamW).
func riverProfiles() []InterpolationCurve {
	shapes := []struct {
		line    Line
		decayed bool
		loss    func(a float64) float64
	}{
		{adamWLine(1e-3), false, func(a float64) float64 { return 3.2 + 0.3*(a-0.5)*(a-0.5) }},
		{adamWLine(1e-3), true, func(a float64) float64 { return 3.0 + 0.25*a*a }},
		{sfLine(0.95, 0), false, func(a float64) float64 { return 3.05 + 0.02*a }},
	}
	var out []InterpolationCurve
	for seed := 1; seed <= 2; seed++ {
		for _, s := range shapes {
			c := InterpolationCurve{Line: s.line, Seed: seed, Decayed: s.decayed}
			for k := range 11 {
				a := float64(k) / 10
				c.Points = append(c.Points, InterpolationPoint{Alpha: a, Loss: s.loss(a) + seedNoise(seed, int64(k))/3})
			}
			out = append(out, c)
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
	// A sweep plot's title heads its legend, wrapped to the legend's entries.
	ff, err := curvesFigure(paperCurves(), CurvesOptions{Title: long})
	if err != nil {
		t.Fatal(err)
	}
	var head []string
	var entries vg.Length
	for _, r := range ff.key.rows {
		if r.font.Font.Size == vg.Points(11) {
			head = append(head, r.text)
		} else {
			entries = max(entries, r.indent()+r.font.Width(r.text))
		}
	}
	if len(head) < 2 || strings.Join(head, " ") != long {
		t.Errorf("legend title %q: want the words of %q on several lines", head, long)
	}
	for _, r := range ff.key.rows[:len(head)] {
		if w := r.font.Width(r.text); w > max(entries, keyMinWidth) {
			t.Errorf("title line %q is %v wide, the legend's entries %v", r.text, w, entries)
		}
	}
	if *sweepPlotsOut != "" {
		os.WriteFile(filepath.Join(*sweepPlotsOut, "heatmap_long_title.png"), renderFigure(t, f2, figure.FormatPNG), 0o644)
	}
	renderFigure(t, f2, figure.FormatPNG)
}

// TestSeedsAveraged checks the mean and band of a line's seeds against a hand computation:
// seed 3 has no evaluation at x = 20, so the line skips it; a NaN in seed 2 at x = 30 makes
// the point there not finite; seed order and repeated points do not matter.
func TestSeedsAveraged(t *testing.T) {
	l := sfLine(0.9, 50)
	series := []seedSeries{
		{line: l, seed: 3, xs: []float64{30, 10, 40}, ys: []float64{3.3, 4.3, 3.0}},
		{line: l, seed: 1, xs: []float64{10, 20, 30, 40, 10}, ys: []float64{4.0, 3.6, 3.2, 2.9, 9}},
		{line: l, seed: 2, xs: []float64{40, 30, 20, 10}, ys: []float64{3.1, math.NaN(), 3.5, 4.2}},
		{line: adamWLine(1e-3), seed: 1, xs: []float64{10}, ys: []float64{5}},
	}
	got := average(series)
	if len(got) != 2 || got[0].line != l || got[0].n != 3 || got[1].n != 1 {
		t.Fatalf("average = %+v: want the SF-AdamW line of 3 seeds, then AdamW of 1", got)
	}
	m := got[0]
	// x = 10: (4.0 + 4.2 + 4.3)/3 = 4.1666…, lowest 4.0, highest 4.3; x = 40: 9.0/3 = 3.0
	if !slices.Equal(m.xs, []float64{10, 30, 40}) {
		t.Fatalf("xs %v, want 10, 30, 40 (20 lacks seed 3)", m.xs)
	}
	if m.mean[0] != (4.0+4.2+4.3)/3 || m.lo[0] != 4.0 || m.hi[0] != 4.3 {
		t.Errorf("x = 10: mean %v [%v, %v], want %v [4, 4.3]", m.mean[0], m.lo[0], m.hi[0], (4.0+4.2+4.3)/3)
	}
	if !math.IsNaN(m.mean[1]) {
		t.Errorf("x = 30: mean %v, want NaN (seed 2 is NaN there)", m.mean[1])
	}
	if math.Abs(m.mean[2]-3.0) > 1e-15 || m.lo[2] != 2.9 || m.hi[2] != 3.1 {
		t.Errorf("x = 40: mean %v [%v, %v], want 3 [2.9, 3.1]", m.mean[2], m.lo[2], m.hi[2])
	}
	slices.Reverse(series)
	if again := average(series); !reflect.DeepEqual(fmt.Sprint(again), fmt.Sprint(got)) {
		t.Errorf("seeds in another order average to %v, want %v", again, got)
	}
}

// TestLineColours checks the colours: the Cs in order along viridis on a log scale (the
// geometric mean of the extremes in the middle of the range used), vanilla black, AdamW
// apart from both, and a C the same colour in every panel.
func TestLineColours(t *testing.T) {
	var lines []meanLine
	for _, c := range []float64{500, 5, 50, 0, 20, 200} {
		lines = append(lines, meanLine{line: sfLine(0.9, c)}, meanLine{line: sfLine(0.95, c)})
	}
	cosine := Line{Optimizer: training.AdamW, Schedule: "cosine", LR: 1e-3, Beta1: 0.9, Beta2: 0.95}
	lines = append(lines, meanLine{line: adamWLine(1e-3)}, meanLine{line: adamWLine(2e-3)}, meanLine{line: cosine})
	pal := newPalette(lines)
	if !slices.Equal(pal.cs, []float64{5, 20, 50, 200, 500}) {
		t.Fatalf("palette Cs %v", pal.cs)
	}
	// position of each C's colour on viridis, found by search
	pos := func(c color.RGBA) float64 {
		best, at := math.Inf(1), -1.0
		for i := range 1001 {
			v := viridisAt(float64(i) / 1000)
			d := math.Abs(float64(v.R)-float64(c.R)) + math.Abs(float64(v.G)-float64(c.G)) + math.Abs(float64(v.B)-float64(c.B))
			if d < best {
				best, at = d, float64(i)/1000
			}
		}
		if best > 3 {
			t.Errorf("colour %v is not on viridis", c)
		}
		return at
	}
	prev := -1.0
	for _, c := range pal.cs {
		if a, b := pal.color(sfLine(0.9, c)), pal.color(sfLine(0.95, c)); a != b {
			t.Errorf("C = %v: %v at β1 = 0.9, %v at 0.95", c, a, b)
		}
		p := pos(pal.color(sfLine(0.9, c)))
		if p <= prev {
			t.Errorf("C = %v at %.3f on viridis, not after the smaller C at %.3f", c, p, prev)
		}
		prev = p
	}
	lo, hi := pos(pal.color(sfLine(0.9, 5))), pos(pal.color(sfLine(0.9, 500)))
	if mid := pos(cColor(50, pal.cs)); math.Abs(mid-(lo+hi)/2) > 0.01 {
		t.Errorf("C = 50 (the geometric mean of 5 and 500) at %.3f, want %.3f: not a log scale", mid, (lo+hi)/2)
	}
	vanilla, adamW := pal.color(sfLine(0.9, 0)), pal.color(adamWLine(1e-3))
	if vanilla != (color.RGBA{0, 0, 0, 255}) {
		t.Errorf("vanilla %v, want black", vanilla)
	}
	if adamW != pal.color(adamWLine(2e-3)) {
		t.Error("two AdamW lines of one schedule differ in colour (markers tell them apart)")
	}
	for _, c := range pal.cs {
		if col := pal.color(sfLine(0.9, c)); col == vanilla || col == adamW {
			t.Errorf("C = %v shares its colour %v with vanilla or AdamW", c, col)
		}
	}
	if adamW == vanilla || adamW == pal.color(cosine) || slices.Contains(pal.cs, 0) {
		t.Errorf("AdamW %v: not its own colour per schedule", adamW)
	}
}

// canvasRecorder records the data area its plot is drawn in.
type canvasRecorder struct{ r *vg.Rectangle }

func (c canvasRecorder) Plot(dc draw.Canvas, _ *plot.Plot) { *c.r = dc.Rectangle }

// TestLegendOutside renders figures of one to seven panels and finds, from the layout the
// renderer gives each plot, that the legend lies inside the figure and outside every
// panel's data area, right of the panels, and that panels share their axes.
func TestLegendOutside(t *testing.T) {
	many := func(n int) []Curve {
		var out []Curve
		for i := range n {
			for _, c := range []float64{0, 10, 100, 1000} {
				out = append(out, sfCurve(sfLine(0.1+0.1*float64(i), c), 1, 0.01*float64(i), 0))
			}
		}
		return out
	}
	long := "A sweep whose name is long enough to wrap over several lines of the legend: validation loss"
	for _, tc := range []struct {
		name  string
		build func() (*facetFigure, error)
	}{
		{"one panel", func() (*facetFigure, error) { return decayProbeFigure(paperProbes()[:1], DecayProbeOptions{}) }},
		{"two panels", func() (*facetFigure, error) { return interpolationFigure(riverProfiles(), InterpolationOptions{}) }},
		{"four panels", func() (*facetFigure, error) { return curvesFigure(paperCurves(), CurvesOptions{Title: long}) }},
		{"C sweep", func() (*facetFigure, error) { return curvesFigure(cSweepCurves(), CurvesOptions{Seeds: 5}) }},
		{"seven panels", func() (*facetFigure, error) { return curvesFigure(many(7), CurvesOptions{}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ff, err := tc.build()
			if err != nil {
				t.Fatal(err)
			}
			rects := make([][]vg.Rectangle, len(ff.fig.Plots))
			for i, row := range ff.fig.Plots {
				rects[i] = make([]vg.Rectangle, len(row))
				for j, p := range row {
					if p != nil {
						p.Add(canvasRecorder{&rects[i][j]})
					}
				}
			}
			renderFigure(t, ff.fig, figure.FormatPNG)
			last := len(ff.fig.Plots[0]) - 1
			key := ff.key.rect(rects[0][last])
			if key.Min.X < 0 || key.Min.Y < 0 || key.Max.X > ff.fig.Width || key.Max.Y > ff.fig.Height {
				t.Errorf("legend %v runs out of the figure (%v × %v)", key, ff.fig.Width, ff.fig.Height)
			}
			panels := 0
			var first vg.Rectangle
			for i, row := range ff.fig.Plots {
				for j, p := range row {
					if p == nil || (i == 0 && j == last) {
						continue
					}
					if j == last {
						t.Errorf("panel in the legend's column at row %d", i)
					}
					d := rects[i][j]
					if d.Min.X < key.Max.X && key.Min.X < d.Max.X && d.Min.Y < key.Max.Y && key.Min.Y < d.Max.Y {
						t.Errorf("legend %v overlaps the data area %v of panel (%d, %d)", key, d, i, j)
					}
					if d.Max.X > key.Min.X {
						t.Errorf("panel (%d, %d) ends at %v, right of the legend's start %v", i, j, d.Max.X, key.Min.X)
					}
					if panels == 0 {
						first = d
					} else if sz, fs := d.Size(), first.Size(); math.Abs(float64(sz.X-fs.X)) > 1 || math.Abs(float64(sz.Y-fs.Y)) > 1 {
						t.Errorf("panel (%d, %d) is %v, the first %v", i, j, d.Size(), first.Size())
					}
					if p.Y.Min != ff.panels[0].Y.Min || p.Y.Max != ff.panels[0].Y.Max || p.X.Max != ff.panels[0].X.Max {
						t.Errorf("panel (%d, %d) has its own axes", i, j)
					}
					panels++
				}
			}
			if panels != len(ff.panels) {
				t.Errorf("%d panels laid out, %d built", panels, len(ff.panels))
			}
		})
	}
}

// TestFacets checks what goes where in the C sweep: one panel per β1 and one for AdamW,
// in order; what the figure varies but a panel does not in its title; markers only for
// what varies within a panel (lr, in AdamW's); only the iterates drawn in the legend; a
// line averaging fewer seeds than were run saying so.
func TestFacets(t *testing.T) {
	ff, err := curvesFigure(cSweepCurves(), CurvesOptions{Seeds: 3})
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, p := range ff.panels {
		titles = append(titles, p.Title.Text)
	}
	want := []string{"SF-AdamW, β1 = 0.5\nlr = 2e-3, β2 = 0.99", "SF-AdamW, β1 = 0.9\nlr = 2e-3, β2 = 0.99",
		"SF-AdamW, β1 = 0.95\nlr = 2e-3, β2 = 0.99", "AdamW, constant LR, β1 = 0.9\nβ2 = 0.95"}
	if !slices.Equal(titles, want) {
		t.Errorf("panels %q, want %q", titles, want)
	}
	texts := keyTexts(ff.key)
	for _, s := range []string{"vanilla, C = 1/(1−β1)", "C = 5", "C = 200", "C = 500 (n=2–3 of 3)", "constant LR", "x", "w", "EWA of w", "lr = 1e-3", "lr = 2e-3"} {
		if !slices.Contains(texts, s) {
			t.Errorf("legend %q lacks %q", texts, s)
		}
	}
	for _, s := range []string{"y", "EWA of x", "C = 50 (n=2 of 3)", "C = 500"} {
		if slices.Contains(texts, s) {
			t.Errorf("legend %q has %q", texts, s)
		}
	}
	if i, j := slices.Index(texts, "C = 5"), slices.Index(texts, "C = 500 (n=2–3 of 3)"); i > j || slices.Index(texts, "vanilla, C = 1/(1−β1)") > i {
		t.Errorf("legend %q: vanilla, then the Cs ascending", texts)
	}

	// One SF-AdamW figure: panels are titled by β1 alone.
	ff, err = curvesFigure(paperCurves()[:3], CurvesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ff.panels[0].Title.Text; got != "β1 = 0.1" {
		t.Errorf("panel %q, want β1 = 0.1", got)
	}
}

// TestBuildPlots builds the plots of a sweep of three seeds from results in a store: the
// diverged seed is left out and the legend says so; four lines a panel draw the primary
// iterate only; building twice writes the same bytes.
func TestBuildPlots(t *testing.T) {
	ctx := context.Background()
	store, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m, trials := seedsSweep(t)
	for _, tr := range trials {
		p := tr.Points[0]
		r := training.Result{Status: status.Completed, Primary: "x", TestPPL: map[string]float64{"x": 30}}
		if p.Seed == 3 && p.LR == 2e-3 {
			r.Status, r.DivergedAt = status.Diverged, 5
		}
		for step := 0; step <= 10; step += 2 {
			v := 4 - 0.1*float64(step) + 0.01*float64(p.Seed) + p.C/1e3
			if r.Status == status.Diverged && step > 4 {
				v = math.NaN()
			}
			r.Curves = append(r.Curves, training.CurvePoint{Step: step, Tokens: int64(step * 32), Val: map[string]float64{"x": v, "y": v + 0.1}})
		}
		b, err := json.Marshal(r)
		if err != nil && !strings.Contains(err.Error(), "NaN") {
			t.Fatal(err)
		}
		if err != nil { // JSON has no NaN: the diverged run's curve stops
			r.Curves = r.Curves[:3]
			b, _ = json.Marshal(r)
		}
		if err := store.Put(ctx, keys.RunResult(keys.Trial(tr.ID)), b); err != nil {
			t.Fatal(err)
		}
	}
	read := func() []byte {
		written, err := Build(ctx, store, m, Options{})
		if err != nil {
			t.Fatal(err)
		}
		key := keys.Plot(Output(m), "curves", figure.FormatSVG)
		if !slices.Contains(written, key) {
			t.Fatalf("Build wrote %q, not %s", written, key)
		}
		b, err := store.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	svg := read()
	checkSVG(t, svg)
	for _, s := range []string{"β1 = 0.9", "β1 = 0.95", "C = 50 (n=2–3 of 3)", "vanilla, C = 1/(1−β1) (n=2–3 of 3)", "lr = 1e-3", "lr = 2e-3", "x"} {
		if !bytes.Contains(svg, []byte(">"+s+"<")) {
			t.Errorf("curves.svg has no text %q", s)
		}
	}
	if bytes.Contains(svg, []byte(">y<")) {
		t.Error("four lines a panel, and y drawn besides x")
	}
	if again := read(); !bytes.Equal(svg, again) {
		t.Error("building twice writes different plots")
	}
}

// A search's stopped configuration is drawn to its rung and ends with a cross, which the
// key names; a completed one ends with none.
func TestCurvesPlotStopped(t *testing.T) {
	done, stopped := sfLine(0.9, 50), sfLine(0.9, 200)
	var curves []Curve
	for seed := 1; seed <= 2; seed++ {
		curves = append(curves, sfCurve(done, seed, 0.05, 0.02))
		c := sfCurve(stopped, seed, 0.2, 0.1)
		c.Points, c.Stopped = c.Points[:10], c.Points[9].Step
		curves = append(curves, c)
	}
	ff, err := curvesFigure(curves, CurvesOptions{Iterates: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	if !keyHas(ff.key, "stopped early at a rung") {
		t.Errorf("the key has no entry for stopped lines: %q", keyTexts(ff.key))
	}
	end := curves[1].Points[9]
	want := plotter.XY{X: float64(end.Tokens) / 1e9, Y: (end.Val["x"] + curves[3].Points[9].Val["x"]) / 2}
	if len(ff.stops) != 1 || len(ff.stops[0]) != 1 || ff.stops[0][0].X != want.X || math.Abs(ff.stops[0][0].Y-want.Y) > 1e-12 {
		t.Errorf("crosses at %v, want one: the stopped line's mean at its rung, %v (none on the completed line)", ff.stops, want)
	}
	curves[1].Stopped, curves[3].Stopped = 0, 0
	if ff, err = curvesFigure(curves, CurvesOptions{Iterates: []string{"x"}}); err != nil || keyHas(ff.key, "stopped early at a rung") {
		t.Errorf("no stopped curve, yet the key names one (%v)", err)
	}
}
