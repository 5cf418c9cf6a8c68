package analysis

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/sfadamw"
)

// ToyConfig configures an SF-AdamW run on the toy model (paper sec:toy and fig:toy_model).
type ToyConfig struct {
	Beta1       float64 // SF interpolation / momentum β1 ∈ [0, 1)
	Beta2       float64 // second-moment decay β2 ∈ [0, 1); the paper fixes 0.99
	LR          float64 // peak learning rate γ > 0
	Eps         float64 // ε > 0
	WeightDecay float64 // λ ≥ 0
	WarmupSteps int     // linear warmup length ≥ 0; 0 means none
	C           float64 // refined SF-AdamW decoupling parameter; 0 is vanilla
	Steps       int     // number of optimizer steps ≥ 1
	Init        Vec2    // x₁ = y₁ = z₁; the paper starts at (2, 2)
}

// Defaults of the toy runs. The paper does not state the learning rate or the number of
// steps; with γ = 0.03 and 2000 steps the y iterates of every β1 ∈ {0.1, 0.5, 0.9}
// oscillate with period two around the river while x drifts off it for β1 ∈ {0.1, 0.5} and
// stays on it for β1 = 0.9, the qualitative picture of the paper's fig:toy_model.
const (
	DefaultToyLR    = 0.03
	DefaultToySteps = 2000
)

// DefaultToyBeta1s are the momenta of the paper's toy-model figure.
var DefaultToyBeta1s = []float64{0.1, 0.5, 0.9}

// DefaultToyConfig returns the toy run of the paper with momentum beta1: x₁ = (2, 2),
// β2 = 0.99, constant learning rate DefaultToyLR, no weight decay, DefaultToySteps steps.
func DefaultToyConfig(beta1 float64) ToyConfig {
	return ToyConfig{
		Beta1: beta1, Beta2: 0.99, LR: DefaultToyLR, Eps: 1e-8,
		Steps: DefaultToySteps, Init: Vec2{2, 2},
	}
}

// optimizer returns the SF-AdamW configuration of the run.
func (c ToyConfig) optimizer() sfadamw.Config {
	return sfadamw.Config{
		LR: c.LR, Beta1: c.Beta1, Beta2: c.Beta2, Eps: c.Eps, WeightDecay: c.WeightDecay,
		WarmupSteps: c.WarmupSteps, C: c.C, KeepX: true,
	}
}

// Validate reports the first out-of-range field as a *fielderr.Error naming the field,
// its value and the valid range.
func (c ToyConfig) Validate() error {
	if err := c.optimizer().Validate(); err != nil {
		return err
	}
	if err := checkSteps("steps", c.Steps); err != nil {
		return err
	}
	return checkInit(c.Init)
}

// checkInit rejects a starting point with a NaN or infinite coordinate.
func checkInit(init Vec2) error {
	for i, v := range init {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return &fielderr.Error{Field: fmt.Sprintf("init[%d]", i), Value: v, Reason: "must be finite"}
		}
	}
	return nil
}

// ToyStep is the state of a toy run at step t: the iterates x_t, y_t, z_t (the gradient of
// step t is taken at y_t), their losses and river distances, the learning rate γ_t of the
// step, the averaging coefficient c_{t+1} it used to form x_{t+1}, and the diagonal
// preconditioner P_t = √v̂_t + ε of the step.
type ToyStep struct {
	T       int     `json:"t"`
	X       Vec2    `json:"x"`
	Y       Vec2    `json:"y"`
	Z       Vec2    `json:"z"`
	LossX   float64 `json:"loss_x"`
	LossY   float64 `json:"loss_y"`
	DistX   float64 `json:"dist_x"`
	DistY   float64 `json:"dist_y"`
	DistZ   float64 `json:"dist_z"`
	LR      float64 `json:"lr"`
	CNext   float64 `json:"c_next"`
	Precond Vec2    `json:"precond"`
}

// ToyRun is the full trajectory of an SF-AdamW run on the toy model.
type ToyRun struct {
	Config ToyConfig `json:"config"`
	Steps  []ToyStep `json:"steps"`
	// Final holds x_{T+1}, y_{T+1}, z_{T+1} after the last step, with their losses and
	// distances; its LR, CNext and Precond are zero. It is zero for a diverged run.
	Final ToyStep `json:"final"`
	// DivergedAt is the first step t whose iterates were no longer finite, 0 if none were.
	// A diverged run is a result: Steps holds every finite step before it.
	DivergedAt int `json:"diverged_at,omitempty"`
}

// ErrDiverged reports a run whose iterates became infinite or NaN.
var ErrDiverged = errors.New("iterates diverged")

// RunToy runs SF-AdamW (package sfadamw, float64) on the toy model and records every step.
// A run whose iterates overflow is not an error: it stops there, with DivergedAt set.
func RunToy(cfg ToyConfig) (*ToyRun, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("analysis: toy config: %w", err)
	}
	params := []float64{cfg.Init[0], cfg.Init[1]}
	opt, err := sfadamw.New(cfg.optimizer(), params)
	if err != nil {
		return nil, fmt.Errorf("analysis: toy optimizer: %w", err)
	}
	run := &ToyRun{Config: cfg, Steps: make([]ToyStep, 0, cfg.Steps)}
	xs, grad, pre := make([]float64, 2), make([]float64, 2), make([]float64, 2)
	snapshot := func(t int) (ToyStep, error) {
		opt.X(xs)
		z := opt.Z()
		s := ToyStep{T: t, X: Vec2{xs[0], xs[1]}, Y: Vec2{params[0], params[1]}, Z: Vec2{z[0], z[1]}}
		if !finite(s.X) || !finite(s.Y) || !finite(s.Z) {
			return s, fmt.Errorf("analysis: toy run with beta1=%v lr=%v: step %d: %w", cfg.Beta1, cfg.LR, t, ErrDiverged)
		}
		s.LossX, s.LossY = ToyLoss(s.X), ToyLoss(s.Y)
		s.DistX, s.DistY, s.DistZ = RiverDistance(s.X), RiverDistance(s.Y), RiverDistance(s.Z)
		if !finite(Vec2{s.LossX, s.LossY}) || !finite(Vec2{s.DistX, s.DistY + s.DistZ}) {
			return s, fmt.Errorf("analysis: toy run with beta1=%v lr=%v: step %d: %w", cfg.Beta1, cfg.LR, t, ErrDiverged)
		}
		return s, nil
	}
	for t := 1; t <= cfg.Steps; t++ {
		s, err := snapshot(t)
		if err != nil {
			run.DivergedAt = t
			return run, nil
		}
		g := ToyGrad(s.Y)
		grad[0], grad[1] = g[0], g[1]
		opt.Step(grad)
		opt.Precond(pre)
		s.LR, s.CNext, s.Precond = opt.LastLR(), opt.LastC(), Vec2{pre[0], pre[1]}
		if !finite(s.Precond) { // the step's second moment overflowed
			run.DivergedAt = t
			return run, nil
		}
		run.Steps = append(run.Steps, s)
	}
	if run.Final, err = snapshot(cfg.Steps + 1); err != nil {
		run.Final, run.DivergedAt = ToyStep{}, cfg.Steps+1
	}
	return run, nil
}

func finite(w Vec2) bool {
	return !math.IsNaN(w[0]+w[1]) && !math.IsInf(w[0], 0) && !math.IsInf(w[1], 0)
}

// WriteJSON writes the run, configuration and every step, as indented JSON.
func (r *ToyRun) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("analysis: write toy run JSON: %w", err)
	}
	return nil
}

// toyCSVHeader names the columns of ToyRun.WriteCSV.
var toyCSVHeader = []string{
	"t", "x1", "x2", "y1", "y2", "z1", "z2", "loss_x", "loss_y",
	"dist_x", "dist_y", "dist_z", "lr", "c_next", "precond1", "precond2",
}

// WriteCSV writes one row per step (columns t, x1, x2, y1, y2, z1, z2, loss_x, loss_y,
// dist_x, dist_y, dist_z, lr, c_next, precond1, precond2), with floats in the shortest
// representation that round-trips.
func (r *ToyRun) WriteCSV(w io.Writer) error {
	rows := make([][]float64, len(r.Steps))
	for i, s := range r.Steps {
		rows[i] = []float64{
			float64(s.T), s.X[0], s.X[1], s.Y[0], s.Y[1], s.Z[0], s.Z[1], s.LossX, s.LossY,
			s.DistX, s.DistY, s.DistZ, s.LR, s.CNext, s.Precond[0], s.Precond[1],
		}
	}
	if err := writeCSV(w, toyCSVHeader, rows); err != nil {
		return fmt.Errorf("analysis: write toy run CSV: %w", err)
	}
	return nil
}

// writeCSV writes a header and rows of numbers; integral values print without exponent.
func writeCSV(w io.Writer, header []string, rows [][]float64) error {
	buf := make([]byte, 0, 256)
	for i, h := range header {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, h...)
	}
	buf = append(buf, '\n')
	if _, err := w.Write(buf); err != nil {
		return err
	}
	for _, row := range rows {
		buf = buf[:0]
		for i, v := range row {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendFloat(buf, v, 'g', -1, 64)
		}
		buf = append(buf, '\n')
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// ToySummary condenses a toy run: the final iterates and the mean river distances over the
// second half of the run, the numbers behind the paper's reading of fig:toy_model.
type ToySummary struct {
	Beta1     float64 `json:"beta1"`
	FinalX    Vec2    `json:"final_x"`
	FinalY    Vec2    `json:"final_y"`
	LossX     float64 `json:"loss_x"`
	LossY     float64 `json:"loss_y"`
	MeanDistX float64 `json:"mean_dist_x"` // mean distance of x_t from the river, second half
	MeanDistY float64 `json:"mean_dist_y"` // mean distance of y_t from the river, second half
	// DivergedAt is the step at which the iterates overflowed, 0 if they did not; the other
	// fields then describe the finite steps before it.
	DivergedAt int `json:"diverged_at,omitempty"`
}

// Summary returns the run's summary.
func (r *ToyRun) Summary() ToySummary {
	s := ToySummary{
		Beta1: r.Config.Beta1, FinalX: r.Final.X, FinalY: r.Final.Y,
		LossX: r.Final.LossX, LossY: r.Final.LossY, DivergedAt: r.DivergedAt,
	}
	if r.DivergedAt > 0 && len(r.Steps) > 0 {
		last := r.Steps[len(r.Steps)-1]
		s.FinalX, s.FinalY, s.LossX, s.LossY = last.X, last.Y, last.LossX, last.LossY
	}
	half := r.Steps[len(r.Steps)/2:]
	if len(half) == 0 {
		return s
	}
	for _, st := range half {
		s.MeanDistX += st.DistX
		s.MeanDistY += st.DistY
	}
	s.MeanDistX /= float64(len(half))
	s.MeanDistY /= float64(len(half))
	return s
}
