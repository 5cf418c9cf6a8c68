package sfadamw

import (
	"fmt"
	"math"

	"github.com/sfsweep/sfsweep/fielderr"
)

// Float is the element type of parameter buffers: float32 for training, float64 for analysis.
type Float interface{ ~float32 | ~float64 }

// Config configures SF-AdamW (Algorithm 1 of the paper) and, when C > 0, refined SF-AdamW
// (Algorithm 2).
type Config struct {
	LR          float64 // peak learning rate γ > 0
	Beta1       float64 // interpolation / momentum coefficient β1 ∈ [0, 1)
	Beta2       float64 // second-moment decay β2 ∈ [0, 1)
	Eps         float64 // ε > 0, added outside the square root
	WeightDecay float64 // λ ≥ 0, applied at y
	WarmupSteps int     // T_warmup ≥ 0: γ_t = γ·min(1, t/T_warmup); 0 means no warmup
	// C is the decoupling parameter of refined SF-AdamW: c_{t+1} = min{γ_t²/Σγ_i² · (1−β1)·C, 1}.
	// 0 selects vanilla SF-AdamW; C = 1/(1−β1) is vanilla too (see Canonical).
	C        float64
	GradClip float64 // maximum global gradient norm; 0 disables clipping (the paper's setting)
	KeepX    bool    // store x explicitly instead of recovering it from y and z
	// Decayed are the runs of the parameter buffer that weight decay applies to; nil
	// means every parameter. The paper's code (llm-baselines) decays the weights of
	// linear layers only: no norm, bias or embedding.
	Decayed []Span
}

// Span is the run [Lo, Hi) of a parameter buffer.
type Span struct{ Lo, Hi int }

// checkSpans reports spans that are empty, out of order or overlapping.
func checkSpans(field string, spans []Span) error {
	prev := 0
	for i, s := range spans {
		if s.Lo < prev || s.Hi <= s.Lo {
			return &fielderr.Error{Field: fmt.Sprintf("%s[%d]", field, i), Value: fmt.Sprintf("[%d, %d)", s.Lo, s.Hi),
				Reason: fmt.Sprintf("must be a non-empty run after the one before it (which ends at %d)", prev)}
		}
		prev = s.Hi
	}
	return nil
}

// ForDecay calls f on the runs of [lo, hi) in order, each with whether spans decay it
// (every run decays where spans is nil): how an engine applies Config.Decayed.
func ForDecay(spans []Span, lo, hi int, f func(lo, hi int, decay bool)) {
	if spans == nil {
		f(lo, hi, true)
		return
	}
	at := lo
	for _, s := range spans {
		if s.Hi <= at {
			continue
		}
		if s.Lo >= hi {
			break
		}
		if s.Lo > at {
			f(at, s.Lo, false)
			at = s.Lo
		}
		end := min(s.Hi, hi)
		f(at, end, true)
		at = end
	}
	if at < hi {
		f(at, hi, false)
	}
}

// DefaultConfig returns the best SF-AdamW configuration of the paper's main experiments
// (tab:hyperparameter_main): γ = 2e-3, (β1, β2) = (0.95, 0.99), λ = 0.1, no clipping.
// WarmupSteps is left 0: the paper uses 5% of the run's steps, which the caller knows.
func DefaultConfig() Config {
	return Config{LR: 2e-3, Beta1: 0.95, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1}
}

// vanillaTol is how close (1−β1)·C must be to 1 for C to be treated as vanilla SF-AdamW.
const vanillaTol = 1e-9

// IsVanilla reports whether the configuration follows vanilla SF-AdamW: C = 0, or
// C = 1/(1−β1) up to floating-point rounding.
func (c Config) IsVanilla() bool {
	return c.C == 0 || math.Abs((1-c.Beta1)*c.C-1) <= vanillaTol
}

// Canonical returns the configuration in the form used to identify a run: refined
// SF-AdamW with C = 1/(1−β1) is vanilla SF-AdamW, so its C becomes 0.
func (c Config) Canonical() Config {
	if c.IsVanilla() {
		c.C = 0
	}
	return c
}

// Validate reports the first out-of-range field as a *fielderr.Error.
func (c Config) Validate() error {
	if err := (SFConfig{LR: c.LR, Beta: c.Beta1, WarmupSteps: c.WarmupSteps, C: c.C}).validate("beta1"); err != nil {
		return err
	}
	if err := checkSpans("decayed", c.Decayed); err != nil {
		return err
	}
	return checkAdam(c.Beta2, c.Eps, c.WeightDecay, c.GradClip)
}

// checkAdam checks the hyperparameters SF-AdamW and AdamW share.
func checkAdam(beta2, eps, weightDecay, gradClip float64) error {
	if err := checkBeta("beta2", beta2); err != nil {
		return err
	}
	if err := checkPositive("eps", eps); err != nil {
		return err
	}
	if err := checkNonNegative("weight_decay", weightDecay); err != nil {
		return err
	}
	return checkNonNegative("grad_clip", gradClip)
}

// SFConfig configures the generic Schedule-Free recursion (eq. SF of the paper) in the form
// of Algorithm 1, with the direction Δ_t supplied by the caller.
type SFConfig struct {
	LR          float64 // peak learning rate γ > 0
	Beta        float64 // interpolation coefficient β ∈ [0, 1)
	WarmupSteps int     // γ_t = γ·min(1, t/T_warmup); 0 means no warmup
	C           float64 // refined averaging (Algorithm 2) when > 0; 0 is vanilla
	KeepX       bool    // store x explicitly instead of recovering it from y and z
}

func (c SFConfig) validate(betaName string) error {
	if err := checkPositive("lr", c.LR); err != nil {
		return err
	}
	if err := checkBeta(betaName, c.Beta); err != nil {
		return err
	}
	if c.WarmupSteps < 0 {
		return &fielderr.Error{Field: "warmup_steps", Value: c.WarmupSteps, Reason: "must be ≥ 0"}
	}
	if math.IsNaN(c.C) || math.IsInf(c.C, 0) || c.C < 0 {
		return &fielderr.Error{Field: "c", Value: c.C, Reason: "must be > 0 (refined SF), or 0 for vanilla SF"}
	}
	return nil
}

// Validate reports the first out-of-range field as a *fielderr.Error.
func (c SFConfig) Validate() error { return c.validate("beta") }

// SGDConfig configures SF-SGD / SF-GD (Δ_t = ∇f(y_t)) and SF-PrecondGDW
// (Δ_t = P⁻¹∇f(y_t) + λ y_t with a fixed diagonal preconditioner P).
type SGDConfig struct {
	SFConfig
	WeightDecay float64   // λ ≥ 0, applied at y
	Precond     []float64 // diagonal of P, all entries > 0; nil means P = I
}

// Validate reports the first out-of-range field as a *fielderr.Error.
func (c SGDConfig) Validate() error {
	if err := c.SFConfig.Validate(); err != nil {
		return err
	}
	if err := checkNonNegative("weight_decay", c.WeightDecay); err != nil {
		return err
	}
	for i, p := range c.Precond {
		if err := checkPositive(fmt.Sprintf("precond[%d]", i), p); err != nil {
			return err
		}
	}
	return nil
}

// AdamWConfig configures AdamW (decoupled weight decay, as PyTorch's torch.optim.AdamW).
type AdamWConfig struct {
	Schedule    Schedule // learning rate γ_t per step
	Beta1       float64  // first-moment decay β1 ∈ [0, 1)
	Beta2       float64  // second-moment decay β2 ∈ [0, 1)
	Eps         float64  // ε > 0, added outside the square root
	WeightDecay float64  // λ ≥ 0: p ← p·(1 − γ_t λ) each step
	GradClip    float64  // maximum global gradient norm; 0 disables (the paper uses 1.0)
	Decayed     []Span   // the runs weight decay applies to; nil: every parameter (Config.Decayed)
}

// DefaultAdamWConfig returns the best AdamW configuration of the paper's main experiments
// (tab:hyperparameter_main): γ = 1e-3, (β1, β2) = (0.9, 0.95), λ = 0.1, clipping at 1.0,
// cosine decay to 10% of the peak over totalSteps with 5% warmup.
func DefaultAdamWConfig(totalSteps int) AdamWConfig {
	return AdamWConfig{
		Schedule: Schedule{Kind: Cosine, Peak: 1e-3, WarmupSteps: totalSteps / 20, TotalSteps: totalSteps, FinalFrac: 0.1},
		Beta1:    0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1, GradClip: 1.0,
	}
}

// Validate reports the first out-of-range field as a *fielderr.Error.
func (c AdamWConfig) Validate() error {
	if err := c.Schedule.Validate(); err != nil {
		return err
	}
	if err := checkBeta("beta1", c.Beta1); err != nil {
		return err
	}
	if err := checkSpans("decayed", c.Decayed); err != nil {
		return err
	}
	return checkAdam(c.Beta2, c.Eps, c.WeightDecay, c.GradClip)
}

func checkPositive(field string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return &fielderr.Error{Field: field, Value: v, Reason: "must be a finite number > 0"}
	}
	return nil
}

func checkNonNegative(field string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return &fielderr.Error{Field: field, Value: v, Reason: "must be a finite number ≥ 0"}
	}
	return nil
}

func checkBeta(field string, v float64) error {
	if math.IsNaN(v) || v < 0 || v >= 1 {
		return &fielderr.Error{Field: field, Value: v, Reason: "must be in [0, 1)"}
	}
	return nil
}
