package report

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

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

// TestSweepPlotsRender renders every sweep plot for realistic input to PNG, SVG and PDF,
// twice from independently built figures, and checks that the bytes agree, that the PNG has
// the figure's size at 150 dpi, that the SVG is well-formed and that the legend names every
// trial, and that the PDF is one page of the figure's size.
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
			for _, format := range figure.Formats {
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
				case figure.FormatPDF:
					box := fmt.Sprintf("/MediaBox [0 0 %.2f %.2f]", f1.Width.Points(), f1.Height.Points())
					if !bytes.HasPrefix(b, []byte("%PDF-")) || bytes.Count(b, []byte("/Type /Page\n")) != 1 || !bytes.Contains(b, []byte(box)) {
						t.Errorf("PDF: not one page with %s", box)
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
