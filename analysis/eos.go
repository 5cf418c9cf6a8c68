package analysis

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
)

// ToyHVP returns the Hessian-vector product of ToyLoss at w.
func ToyHVP(w Vec2) HVP {
	h := ToyHessian(w)
	return func(v, out []float64) {
		out[0] = h[0][0]*v[0] + h[0][1]*v[1]
		out[1] = h[1][0]*v[0] + h[1][1]*v[1]
	}
}

// EoSPoint is the preconditioned sharpness of one step of a toy run and its stability
// threshold.
type EoSPoint struct {
	T         int     `json:"t"`
	Sharpness float64 `json:"sharpness"` // λ₁(P_t⁻¹ ∇²f(y_t)), P_t = √v̂_t + ε of step t
	Threshold float64 `json:"threshold"` // 2/((1−β1)γ_t) − λ (Proposition 4.2)
	LossY     float64 `json:"loss_y"`
	LR        float64 `json:"lr"`
}

// EoSRun is the Edge-of-Stability trace of an SF-AdamW run on the toy model (the paper's
// fig:eos, left panel).
type EoSRun struct {
	Config ToyConfig  `json:"config"`
	Points []EoSPoint `json:"points"`
}

// DefaultEoSConfig returns the toy run of the paper's fig:eos (left panel): SF-AdamW with
// (β1, β2) = (0.9, 0.99).
func DefaultEoSConfig() ToyConfig { return DefaultToyConfig(0.9) }

// EoS runs SF-AdamW on the toy model and, at every step t, computes the preconditioned
// sharpness λ₁(P_t⁻¹H(y_t)) by Lanczos with the optimizer's own preconditioner P_t and the
// stability threshold 2/((1−β1)γ_t) − λ of SF-PrecondGDW (Proposition 4.2).
func EoS(cfg ToyConfig) (*EoSRun, error) {
	run, err := RunToy(cfg)
	if err != nil {
		return nil, fmt.Errorf("analysis: eos: %w", err)
	}
	if run.DivergedAt > 0 {
		return nil, fmt.Errorf("analysis: eos: toy run with lr=%v: step %d: %w", cfg.LR, run.DivergedAt, ErrDiverged)
	}
	out := &EoSRun{Config: cfg, Points: make([]EoSPoint, len(run.Steps))}
	for i, s := range run.Steps {
		sh, err := Lanczos(ToyHVP(s.Y), 2, 2, s.Precond[:])
		if err != nil {
			return nil, fmt.Errorf("analysis: eos: step %d: %w", s.T, err)
		}
		out.Points[i] = EoSPoint{
			T: s.T, Sharpness: sh, LossY: s.LossY, LR: s.LR,
			Threshold: 2/((1-cfg.Beta1)*s.LR) - cfg.WeightDecay,
		}
	}
	return out, nil
}

// WriteJSON writes the trace as indented JSON.
func (r *EoSRun) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("analysis: write eos JSON: %w", err)
	}
	return nil
}

// WriteCSV writes one row per step with columns t, sharpness, threshold, loss_y, lr.
func (r *EoSRun) WriteCSV(w io.Writer) error {
	rows := make([][]float64, len(r.Points))
	for i, p := range r.Points {
		rows[i] = []float64{float64(p.T), p.Sharpness, p.Threshold, p.LossY, p.LR}
	}
	if err := writeCSV(w, []string{"t", "sharpness", "threshold", "loss_y", "lr"}, rows); err != nil {
		return fmt.Errorf("analysis: write eos CSV: %w", err)
	}
	return nil
}

// EoSSummary condenses an EoS trace: the ratio sharpness/threshold over the second half of
// the run.
type EoSSummary struct {
	Threshold float64 `json:"threshold"` // at the last step
	MeanRatio float64 `json:"mean_ratio"`
	MinRatio  float64 `json:"min_ratio"`
	MaxRatio  float64 `json:"max_ratio"`
}

// Summary returns the trace's summary.
func (r *EoSRun) Summary() EoSSummary {
	half := r.Points[len(r.Points)/2:]
	s := EoSSummary{Threshold: r.Points[len(r.Points)-1].Threshold, MinRatio: math.Inf(1), MaxRatio: math.Inf(-1)}
	for _, p := range half {
		q := p.Sharpness / p.Threshold
		s.MeanRatio += q
		s.MinRatio, s.MaxRatio = math.Min(s.MinRatio, q), math.Max(s.MaxRatio, q)
	}
	s.MeanRatio /= float64(len(half))
	return s
}
