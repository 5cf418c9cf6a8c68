package analysis

import (
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/sfadamw"
)

// Sigma2 returns the central-flow prediction of the steady-state variance σ² of the
// oscillation of SF-ScalarAdam's y iterates along the top Hessian eigenvector (paper
// sec. 4.4 and appendix C.3.2):
//
//	σ² = [⟨∇S, −∇f⟩ + (1−β2)/β2·(¼S² − ‖∇f‖²/((1−β1)²γ²))] / [½‖∇S‖² + (1−β2)/((1−β1)²β2γ²)·S²]
//
// where gradF = ∇f(y), gradS = ∇S(y) and s = S(y) = λ₁(∇²f(y)). A negative value means
// the flow is not at the Edge of Stability there: no oscillation is needed to hold the
// preconditioned sharpness at its threshold.
func Sigma2(gradF, gradS []float64, s, beta1, beta2, lr float64) float64 {
	k := (1 - beta2) / beta2
	a := 1 / ((1 - beta1) * (1 - beta1) * lr * lr)
	num := -dot(gradS, gradF) + k*(s*s/4-dot(gradF, gradF)*a)
	den := dot(gradS, gradS)/2 + k*a*s*s
	return num / den
}

// ToySigma2 returns Sigma2 for the toy model at y.
func ToySigma2(y Vec2, beta1, beta2, lr float64) float64 {
	s, _ := ToySharpness(y)
	g, gs := ToyGrad(y), ToySharpnessGrad(y)
	return Sigma2(g[:], gs[:], s, beta1, beta2, lr)
}

// ScalarAdamConfig configures SF-ScalarAdam, the scalar-preconditioner surrogate of
// SF-AdamW in the paper's central-flow analysis.
type ScalarAdamConfig struct {
	LR          float64 // γ > 0
	Beta1       float64 // SF interpolation / momentum β1 ∈ [0, 1)
	Beta2       float64 // decay β2 ∈ [0, 1) of ν
	Eps         float64 // ε ≥ 0 added to √ν̂
	WarmupSteps int     // linear warmup ≥ 0; 0 means none
	C           float64 // refined averaging when > 0; 0 is vanilla
}

// Validate reports the first out-of-range field as a *fielderr.Error.
func (c ScalarAdamConfig) Validate() error {
	if err := checkBeta("beta1", c.Beta1); err != nil {
		return err
	}
	if err := c.sf().Validate(); err != nil {
		return err
	}
	if err := checkBeta("beta2", c.Beta2); err != nil {
		return err
	}
	if !(c.Eps >= 0) || math.IsInf(c.Eps, 0) {
		return &fielderr.Error{Field: "eps", Value: c.Eps, Reason: "must be a finite number ≥ 0"}
	}
	return nil
}

func (c ScalarAdamConfig) sf() sfadamw.SFConfig {
	return sfadamw.SFConfig{LR: c.LR, Beta: c.Beta1, WarmupSteps: c.WarmupSteps, C: c.C, KeepX: true}
}

// ScalarAdam is SF-ScalarAdam: the Schedule-Free recursion of package sfadamw with the
// direction Δ_t = ∇f(y_t)/(√ν̂_t + ε), where ν_t = β2ν_{t−1} + (1−β2)‖∇f(y_t)‖², ν_0 = 0, and
// ν̂_t = ν_t/(1−β2ᵗ) is bias-corrected as SF-AdamW's second moment (Algorithm 1). The
// correction only shortens the start-up transient; the central-flow analysis concerns
// large t, where ν̂_t = ν_t.
type ScalarAdam struct {
	cfg   ScalarAdamConfig
	sf    *sfadamw.SF[float64]
	nu    float64
	b2pow float64
	delta []float64
}

// NewScalarAdam returns SF-ScalarAdam over params, which hold y and are updated in place;
// x₁ = z₁ = y₁ = params.
func NewScalarAdam(cfg ScalarAdamConfig, params []float64) (*ScalarAdam, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("analysis: scalar adam: %w", err)
	}
	sf, err := sfadamw.NewSF(cfg.sf(), params)
	if err != nil {
		return nil, fmt.Errorf("analysis: scalar adam: %w", err)
	}
	return &ScalarAdam{cfg: cfg, sf: sf, b2pow: 1, delta: make([]float64, len(params))}, nil
}

// Step takes one step with the gradient ∇f(y_t) at the current params.
func (o *ScalarAdam) Step(grad []float64) {
	o.nu = o.cfg.Beta2*o.nu + (1-o.cfg.Beta2)*dot(grad, grad)
	o.b2pow *= o.cfg.Beta2
	d := math.Sqrt(o.nu/(1-o.b2pow)) + o.cfg.Eps
	for i, g := range grad {
		if d > 0 {
			o.delta[i] = g / d
		} else {
			o.delta[i] = 0
		}
	}
	o.sf.Update(o.delta)
}

// Nu returns the bias-corrected second moment ν̂_t of the last step.
func (o *ScalarAdam) Nu() float64 {
	if o.b2pow == 1 {
		return 0
	}
	return o.nu / (1 - o.b2pow)
}

// X writes the averaged iterate x_t into dst.
func (o *ScalarAdam) X(dst []float64) { o.sf.X(dst) }

// LastLR returns γ_t of the last step.
func (o *ScalarAdam) LastLR() float64 { return o.sf.LastLR() }

// CentralFlowConfig configures the comparison of the central-flow variance σ² with the
// measured oscillation of SF-ScalarAdam on the toy model.
type CentralFlowConfig struct {
	ScalarAdamConfig
	Steps  int  // optimizer steps ≥ 1
	Init   Vec2 // x₁; the paper's toy runs start at (2, 2)
	Window int  // half-width h ≥ 1 of the centred moving averages
}

// DefaultCentralFlowSteps is the length of the default central-flow runs: SF-ScalarAdam
// with β1 = 0.9 reaches the Edge of Stability only after about 1300 steps, so the runs are
// longer than the toy runs to leave a long stretch at the EoS.
const DefaultCentralFlowSteps = 3000

// DefaultCentralFlowConfig returns the central-flow comparison on the toy model with
// momentum beta1: β2 = 0.99, γ = DefaultToyLR, DefaultCentralFlowSteps steps from (2, 2),
// averaging windows of half-width 20.
func DefaultCentralFlowConfig(beta1 float64) CentralFlowConfig {
	return CentralFlowConfig{
		ScalarAdamConfig: ScalarAdamConfig{LR: DefaultToyLR, Beta1: beta1, Beta2: 0.99},
		Steps:            DefaultCentralFlowSteps,
		Init:             Vec2{2, 2},
		Window:           20,
	}
}

// Validate reports the first out-of-range field as a *fielderr.Error.
func (c CentralFlowConfig) Validate() error {
	if err := c.ScalarAdamConfig.Validate(); err != nil {
		return err
	}
	if err := checkSteps("steps", c.Steps); err != nil {
		return err
	}
	if c.Window < 1 {
		return &fielderr.Error{Field: "window", Value: c.Window, Reason: "must be ≥ 1"}
	}
	return checkInit(c.Init)
}

// CentralFlowPoint compares, at step t, the central-flow variance predicted at the
// time-averaged iterate ȳ_t with the measured variance of the oscillation around it.
type CentralFlowPoint struct {
	T        int     `json:"t"`
	Y        Vec2    `json:"y"`         // y_t
	YBar     Vec2    `json:"y_bar"`     // centred moving average of y around t
	Sigma2   float64 `json:"sigma2"`    // σ²(ȳ_t; β1, β2, γ_t), the prediction
	Measured float64 `json:"measured"`  // centred moving average of ρ_s², ρ_s = u(ȳ_s)ᵀ(y_s − ȳ_s)
	Sharp    float64 `json:"sharpness"` // S(ȳ_t)
	// PrecondSharp is S(y_t)/√ν̂_t, the preconditioned sharpness of step t; Threshold is
	// its stability threshold 2/((1−β1)γ_t).
	PrecondSharp float64 `json:"precond_sharpness"`
	Threshold    float64 `json:"threshold"`
}

// CentralFlowRun is the result of CentralFlow.
type CentralFlowRun struct {
	Config CentralFlowConfig  `json:"config"`
	Points []CentralFlowPoint `json:"points"`
}

// CentralFlow runs SF-ScalarAdam on the toy model and compares the paper's central-flow
// oscillation variance σ² with the measured one. The time average ȳ_t is the centred moving
// average of y over steps t−h..t+h with half weights at both ends, which cancels a period-two
// oscillation exactly; the measured variance at t is the same average of ρ_s², where
// ρ_s = u(ȳ_s)ᵀ(y_s − ȳ_s) is the displacement along the top Hessian eigenvector at ȳ_s.
// Points are reported for the steps t where both averages are defined, 2h < t ≤ T+1−2h.
func CentralFlow(cfg CentralFlowConfig) (*CentralFlowRun, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("analysis: central flow config: %w", err)
	}
	params := []float64{cfg.Init[0], cfg.Init[1]}
	opt, err := NewScalarAdam(cfg.ScalarAdamConfig, params)
	if err != nil {
		return nil, fmt.Errorf("analysis: central flow: %w", err)
	}
	T := cfg.Steps
	ys := make([]Vec2, T+1)   // y_1..y_{T+1}
	lrs := make([]float64, T) // γ_t
	psh := make([]float64, T) // S(y_t)/√ν̂_t
	grad := make([]float64, 2)
	for t := range T {
		ys[t] = Vec2{params[0], params[1]}
		if !finite(ys[t]) {
			return nil, fmt.Errorf("analysis: central flow: step %d: %w", t+1, ErrDiverged)
		}
		g := ToyGrad(ys[t])
		grad[0], grad[1] = g[0], g[1]
		opt.Step(grad)
		lrs[t] = opt.LastLR()
		s, _ := ToySharpness(ys[t])
		psh[t] = s / math.Sqrt(opt.Nu())
	}
	ys[T] = Vec2{params[0], params[1]}
	if !finite(ys[T]) {
		return nil, fmt.Errorf("analysis: central flow: final iterate: %w", ErrDiverged)
	}
	h := cfg.Window
	ybar := centredAverage(ys, h) // valid for h ≤ i < len−h
	rho2 := make([]float64, len(ys))
	for i := h; i < len(ys)-h; i++ {
		_, u := ToySharpness(ybar[i])
		r := u[0]*(ys[i][0]-ybar[i][0]) + u[1]*(ys[i][1]-ybar[i][1])
		rho2[i] = r * r
	}
	meas := centredAverageScalar(rho2, h) // valid for 2h ≤ i < len−2h
	run := &CentralFlowRun{Config: cfg}
	for i := 2 * h; i < len(ys)-2*h && i < T; i++ {
		s, _ := ToySharpness(ybar[i])
		run.Points = append(run.Points, CentralFlowPoint{
			T: i + 1, Y: ys[i], YBar: ybar[i],
			Sigma2:       ToySigma2(ybar[i], cfg.Beta1, cfg.Beta2, lrs[i]),
			Measured:     meas[i],
			Sharp:        s,
			PrecondSharp: psh[i],
			Threshold:    2 / ((1 - cfg.Beta1) * lrs[i]),
		})
	}
	return run, nil
}

// centredAverage returns, for h ≤ i < len(v)−h, the average of v[i−h..i+h] with weight ½ at
// both ends and 1 inside (total weight 2h); other entries are zero.
func centredAverage(v []Vec2, h int) []Vec2 {
	out := make([]Vec2, len(v))
	for i := h; i < len(v)-h; i++ {
		var s Vec2
		for j := i - h; j <= i+h; j++ {
			w := 1.0
			if j == i-h || j == i+h {
				w = 0.5
			}
			s[0] += w * v[j][0]
			s[1] += w * v[j][1]
		}
		out[i] = Vec2{s[0] / float64(2*h), s[1] / float64(2*h)}
	}
	return out
}

// centredAverageScalar is centredAverage for scalars, valid for 2h ≤ i < len(v)−2h when v
// itself is valid on h ≤ i < len(v)−h.
func centredAverageScalar(v []float64, h int) []float64 {
	out := make([]float64, len(v))
	for i := 2 * h; i < len(v)-2*h; i++ {
		var s float64
		for j := i - h; j <= i+h; j++ {
			w := 1.0
			if j == i-h || j == i+h {
				w = 0.5
			}
			s += w * v[j]
		}
		out[i] = s / float64(2*h)
	}
	return out
}

// WriteJSON writes the comparison as indented JSON.
func (r *CentralFlowRun) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("analysis: write central flow JSON: %w", err)
	}
	return nil
}

// WriteCSV writes one row per point with columns t, y1, y2, ybar1, ybar2, sigma2,
// measured, sharpness, precond_sharpness, threshold.
func (r *CentralFlowRun) WriteCSV(w io.Writer) error {
	rows := make([][]float64, len(r.Points))
	for i, p := range r.Points {
		rows[i] = []float64{float64(p.T), p.Y[0], p.Y[1], p.YBar[0], p.YBar[1], p.Sigma2, p.Measured, p.Sharp, p.PrecondSharp, p.Threshold}
	}
	header := []string{"t", "y1", "y2", "ybar1", "ybar2", "sigma2", "measured", "sharpness", "precond_sharpness", "threshold"}
	if err := writeCSV(w, header, rows); err != nil {
		return fmt.Errorf("analysis: write central flow CSV: %w", err)
	}
	return nil
}

// CentralFlowSummary condenses a central-flow comparison over the last third of the points,
// where the default runs are at the Edge of Stability.
type CentralFlowSummary struct {
	Beta1    float64 `json:"beta1"`
	Points   int     `json:"points"`    // points in the last third
	Sigma2   float64 `json:"sigma2"`    // mean predicted σ²
	Measured float64 `json:"measured"`  // mean measured variance
	MinRatio float64 `json:"min_ratio"` // min of measured/σ²
	MaxRatio float64 `json:"max_ratio"` // max of measured/σ²
}

// Summary returns the comparison's summary; with no points it is all zero but β1.
func (r *CentralFlowRun) Summary() CentralFlowSummary {
	s := CentralFlowSummary{Beta1: r.Config.Beta1}
	last := r.Points[len(r.Points)-len(r.Points)/3:]
	if len(last) == 0 {
		return s
	}
	s.Points = len(last)
	s.MinRatio, s.MaxRatio = math.Inf(1), math.Inf(-1)
	for _, p := range last {
		s.Sigma2 += p.Sigma2
		s.Measured += p.Measured
		q := p.Measured / p.Sigma2
		s.MinRatio, s.MaxRatio = math.Min(s.MinRatio, q), math.Max(s.MaxRatio, q)
	}
	s.Sigma2 /= float64(len(last))
	s.Measured /= float64(len(last))
	return s
}
