package analysis

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/sfsweep/sfsweep/internal/figure"
)

// Region is a rectangle [XMin, XMax] × [YMin, YMax] of the toy model's parameter space.
type Region struct{ XMin, XMax, YMin, YMax float64 }

// DefaultToyRegion is the part of the landscape the default toy runs travel through.
var DefaultToyRegion = Region{XMin: 0.2, XMax: 10, YMin: 0, YMax: 2.6}

// lossGrid is log(f) of the toy model sampled on a regular grid (plotter.GridXYZ).
type lossGrid struct {
	r          Region
	cols, rows int
	z          []float64
}

func newLossGrid(r Region, cols, rows int) *lossGrid {
	g := &lossGrid{r: r, cols: cols, rows: rows, z: make([]float64, cols*rows)}
	for j := range rows {
		for i := range cols {
			g.z[j*cols+i] = math.Log10(ToyLoss(Vec2{g.X(i), g.Y(j)}))
		}
	}
	return g
}

func (g *lossGrid) Dims() (c, r int)   { return g.cols, g.rows }
func (g *lossGrid) Z(c, r int) float64 { return g.z[r*g.cols+c] }
func (g *lossGrid) X(c int) float64 {
	return g.r.XMin + (g.r.XMax-g.r.XMin)*float64(c)/float64(g.cols-1)
}
func (g *lossGrid) Y(r int) float64 {
	return g.r.YMin + (g.r.YMax-g.r.YMin)*float64(r)/float64(g.rows-1)
}

// greys is a light-to-dark grey palette for loss contours.
type greys []color.Color

func (p greys) Colors() []color.Color { return p }

// landscapePlot returns a plot of the toy loss landscape over r: contours of log₁₀ f and
// the river w⁽¹⁾w⁽²⁾ = 1.
func landscapePlot(r Region) (*plot.Plot, error) {
	p := plot.New()
	p.X.Label.Text = "w(1)"
	p.Y.Label.Text = "w(2)"
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = r.XMin, r.XMax, r.YMin, r.YMax
	g := newLossGrid(r, 240, 160)
	const nLevels = 18
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, z := range g.z {
		lo, hi = math.Min(lo, z), math.Max(hi, z)
	}
	levels := make([]float64, nLevels)
	pal := make(greys, nLevels)
	for i := range levels {
		levels[i] = lo + (hi-lo)*(float64(i)+0.5)/nLevels
		v := uint8(205 - 105*i/(nLevels-1)) // light at low loss near the river, darker uphill
		pal[i] = color.RGBA{R: v, G: v, B: v, A: 255}
	}
	c := plotter.NewContour(g, levels, pal)
	p.Add(c)
	river, err := riverLine(r)
	if err != nil {
		return nil, err
	}
	p.Add(river)
	p.Legend.Add("river w(1)w(2) = 1", river)
	return p, nil
}

// riverLine returns the river w⁽²⁾ = 1/w⁽¹⁾ within r as a thick dark line.
func riverLine(r Region) (*plotter.Line, error) {
	const n = 400
	pts := make(plotter.XYs, 0, n)
	lo := math.Max(r.XMin, 1/math.Max(r.YMax, 1e-9))
	for i := range n {
		x := lo + (r.XMax-lo)*float64(i)/float64(n-1)
		pts = append(pts, plotter.XY{X: x, Y: 1 / x})
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return nil, fmt.Errorf("analysis: river line: %w", err)
	}
	l.Color = color.RGBA{R: 20, G: 20, B: 20, A: 255}
	l.Width = vg.Points(1.2)
	l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	return l, nil
}

// RiverValleyFigure returns the paper's fig:river-valley: the contour plot of the toy loss with its
// river.
func RiverValleyFigure(r Region) (*figure.Figure, error) {
	p, err := landscapePlot(r)
	if err != nil {
		return nil, err
	}
	p.Title.Text = "River-valley toy landscape (contours of log10 f)"
	p.Legend.Top = true
	return &figure.Figure{Plots: [][]*plot.Plot{{p}}, Width: 6 * vg.Inch, Height: 4.5 * vg.Inch}, nil
}

// ToyFigure returns the paper's fig:toy_model: the x iterates (left) and y iterates (right) of the
// given runs over the loss landscape, one colour per run.
func ToyFigure(runs []*ToyRun, r Region) (*figure.Figure, error) {
	var panels [2]*plot.Plot
	for k, name := range []string{"x", "y"} {
		p, err := landscapePlot(r)
		if err != nil {
			return nil, err
		}
		p.Title.Text = fmt.Sprintf("SF-AdamW on the toy model: %s iterates", name)
		p.Legend.Top = true
		p.Legend.XOffs = -vg.Millimeter * 2
		for i, run := range runs {
			pts := make(plotter.XYs, 0, len(run.Steps)+1)
			for _, s := range append(run.Steps, run.Final) {
				w := s.X
				if k == 1 {
					w = s.Y
				}
				pts = append(pts, plotter.XY{X: w[0], Y: w[1]})
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return nil, fmt.Errorf("analysis: toy figure: %w", err)
			}
			l.Color = plotutil.Color(i)
			l.Width = vg.Points(1)
			p.Add(l)
			p.Legend.Add(fmt.Sprintf("β1 = %g", run.Config.Beta1), l)
		}
		panels[k] = p
	}
	return &figure.Figure{Plots: [][]*plot.Plot{panels[:]}, Width: 12 * vg.Inch, Height: 4.8 * vg.Inch}, nil
}

// WeightsFigure returns a grid of histograms of averaging weights (the paper's
// fig:weights_histogram and fig:modified_weights_histogram*), cols panels per row: each panel shows the mass of α_t in bins equal-width bins of t
// and, as a line, the same binning of the closed form (C/T)(t/T)^{C−1}.
func WeightsFigure(sets []WeightSet, cols, bins int) (*figure.Figure, error) {
	if cols < 1 || bins < 1 {
		return nil, fmt.Errorf("analysis: weights figure: cols = %d, bins = %d, both must be ≥ 1", cols, bins)
	}
	rows := (len(sets) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	for i, s := range sets {
		p := plot.New()
		if s.Kind == "vanilla" {
			p.Title.Text = fmt.Sprintf("vanilla, β = %g, T = %d", s.Beta, s.T)
		} else {
			p.Title.Text = fmt.Sprintf("refined, β = %g, C = %g, T = %d", s.Beta, s.C, s.T)
		}
		p.X.Label.Text = "t"
		p.Y.Label.Text = "weight per bin"
		mass, approx, width := binWeights(s, bins)
		h := &plotter.Histogram{Bins: make([]plotter.HistogramBin, bins), Width: width, FillColor: color.RGBA{R: 90, G: 140, B: 200, A: 255}}
		h.LineStyle.Width = vg.Points(0.3)
		centres := make(plotter.XYs, bins)
		for b := range bins {
			lo := 0.5 + float64(b)*width
			h.Bins[b] = plotter.HistogramBin{Min: lo, Max: lo + width, Weight: mass[b]}
			centres[b] = plotter.XY{X: lo + width/2, Y: approx[b]}
		}
		p.Add(h)
		top := 0.0
		for b := range bins {
			top = math.Max(top, math.Max(mass[b], approx[b]))
		}
		p.Y.Min, p.Y.Max = 0, 1.4*top // headroom for the legend
		l, err := plotter.NewLine(centres)
		if err != nil {
			return nil, fmt.Errorf("analysis: weights figure: %w", err)
		}
		l.Color = color.RGBA{R: 200, G: 30, B: 30, A: 255}
		l.Width = vg.Points(1.5)
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		p.Add(l)
		p.Legend.Add("α_t", h)
		p.Legend.Add(fmt.Sprintf("(C/T)(t/T)^(C-1), C = %.3g", s.C), l)
		p.Legend.Top, p.Legend.Left = true, true
		grid[i/cols][i%cols] = p
	}
	return &figure.Figure{Plots: grid, Width: vg.Length(cols) * 4 * vg.Inch, Height: vg.Length(rows) * 3 * vg.Inch}, nil
}

// binWeights sums α_t and the closed form over bins equal-width bins of t ∈ [0.5, T+0.5].
func binWeights(s WeightSet, bins int) (mass, approx []float64, width float64) {
	width = float64(s.T) / float64(bins)
	mass, approx = make([]float64, bins), make([]float64, bins)
	for t := range s.Alpha {
		b := min(int(float64(t)/width), bins-1)
		mass[b] += s.Alpha[t]
		approx[b] += s.Approx[t]
	}
	return mass, approx, width
}

// EoSFigure returns the paper's fig:eos (left panel): the preconditioned sharpness at y_t against
// step, with the stability threshold dashed.
func EoSFigure(run *EoSRun) (*figure.Figure, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("SF-AdamW on the toy model, (β1, β2) = (%g, %g)", run.Config.Beta1, run.Config.Beta2)
	p.X.Label.Text = "step t"
	p.Y.Label.Text = "preconditioned sharpness"
	sh := make(plotter.XYs, len(run.Points))
	th := make(plotter.XYs, len(run.Points))
	for i, q := range run.Points {
		sh[i] = plotter.XY{X: float64(q.T), Y: q.Sharpness}
		th[i] = plotter.XY{X: float64(q.T), Y: q.Threshold}
	}
	ls, err := plotter.NewLine(sh)
	if err != nil {
		return nil, fmt.Errorf("analysis: eos figure: %w", err)
	}
	ls.Color = plotutil.Color(0)
	ls.Width = vg.Points(1.2)
	lt, err := plotter.NewLine(th)
	if err != nil {
		return nil, fmt.Errorf("analysis: eos figure: %w", err)
	}
	lt.Color = color.Black
	lt.Width = vg.Points(1.2)
	lt.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
	p.Add(ls, lt)
	p.Legend.Add("λ1(P^-1 H) at y_t", ls)
	p.Legend.Add("threshold 2/((1-β1)γ) - λ", lt)
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	return &figure.Figure{Plots: [][]*plot.Plot{{p}}, Width: 6 * vg.Inch, Height: 4.5 * vg.Inch}, nil
}

// CentralFlowFigure plots, for each run, the measured variance of the oscillation along the
// top Hessian eigenvector (solid) and the central-flow prediction σ² at the time-averaged
// iterate (dashed), on a logarithmic scale; points where either is not positive are omitted.
func CentralFlowFigure(runs []*CentralFlowRun) (*figure.Figure, error) {
	p := plot.New()
	p.Title.Text = "SF-ScalarAdam on the toy model: oscillation variance"
	p.X.Label.Text = "step t"
	p.Y.Label.Text = "variance along the top eigenvector"
	// Plot log₁₀ of the variances on a linear axis labelled in powers of ten (gonum's
	// LogScale misplaces a centred axis label).
	p.Y.Tick.Marker = decadeTicks{}
	for i, run := range runs {
		var meas, pred plotter.XYs
		for _, q := range run.Points {
			if q.Measured > 0 {
				meas = append(meas, plotter.XY{X: float64(q.T), Y: math.Log10(q.Measured)})
			}
			if q.Sigma2 > 0 {
				pred = append(pred, plotter.XY{X: float64(q.T), Y: math.Log10(q.Sigma2)})
			}
		}
		if len(meas) == 0 || len(pred) == 0 {
			continue
		}
		lm, err := plotter.NewLine(meas)
		if err != nil {
			return nil, fmt.Errorf("analysis: central flow figure: %w", err)
		}
		lp, err := plotter.NewLine(pred)
		if err != nil {
			return nil, fmt.Errorf("analysis: central flow figure: %w", err)
		}
		lm.Color, lp.Color = plotutil.Color(i), plotutil.Color(i)
		lm.Width, lp.Width = vg.Points(1), vg.Points(2)
		lp.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		p.Add(lm, lp)
		p.Legend.Add(fmt.Sprintf("β1 = %g measured E[ρ²]", run.Config.Beta1), lm)
		p.Legend.Add(fmt.Sprintf("β1 = %g central flow σ²", run.Config.Beta1), lp)
	}
	p.Add(plotter.NewGrid())
	return &figure.Figure{Plots: [][]*plot.Plot{{p}}, Width: 7 * vg.Inch, Height: 5 * vg.Inch}, nil
}

// decadeTicks marks the integers of an axis holding log₁₀ of the data, labelled as the
// powers of ten 1e-4 and so on.
type decadeTicks struct{}

// Ticks implements plot.Ticker.
func (decadeTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Ceil(lo); e <= hi; e++ {
		ticks = append(ticks, plot.Tick{Value: e, Label: fmt.Sprintf("1e%d", int(e))})
	}
	return ticks
}
