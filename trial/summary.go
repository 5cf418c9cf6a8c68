package trial

// A trial at a glance: its configuration, its outcome and its final losses, in one small
// record (the rows of an output's trials.json).

import (
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/training"
)

// Summary is a trial at a glance: its configuration, outcome and final losses.
type Summary struct {
	ID          string   `json:"id"`
	Optimizer   string   `json:"optimizer"`
	Schedule    string   `json:"schedule,omitempty"` // AdamW's
	LR          float64  `json:"lr"`
	Beta1       float64  `json:"beta1"`
	Beta2       float64  `json:"beta2"`
	C           float64  `json:"c,omitempty"` // 0: vanilla
	WeightDecay *float64 `json:"weight_decay,omitempty"`
	WarmupFrac  *float64 `json:"warmup_frac,omitempty"`
	BatchTokens int      `json:"batch_tokens"`
	Seed        uint64   `json:"seed"`
	Steps       int      `json:"steps"`
	// Trainer is a program trainer's name and Params its own parameters, for a trial
	// trained by a program (docs/trainer.md); without an optimizer grid, the optimizer's
	// fields above are empty.
	Trainer string         `json:"trainer,omitempty"`
	Params  map[string]any `json:"params,omitempty"`

	Status status.Status `json:"status"`
	// Step is where a diverged trial's loss stopped being finite, or the rung a stopped
	// one ended at; Reason why a failed one failed.
	Step   int    `json:"step,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Attempts its training took, where it was retried (0: one, or not recorded).
	Attempts int `json:"attempts,omitempty"`
	// Primary is the iterate the tables report; Val, Test and TestPPL the final losses
	// at each iterate (a value that is not finite is null).
	Primary string                   `json:"primary,omitempty"`
	Val     map[string]training.Loss `json:"val_loss,omitempty"`
	Test    map[string]training.Loss `json:"test_loss,omitempty"`
	TestPPL map[string]training.Loss `json:"test_ppl,omitempty"`
	// Metrics are a program's named metrics in its last metrics line (val_ppl, accuracy).
	Metrics map[string]training.Loss `json:"metrics,omitempty"`
	Seconds float64                  `json:"seconds,omitempty"` // the training time of its last attempt
}

// Summarize is trial id's summary, from its config and its outcome.
func Summarize(id string, cfg training.Config, out Outcome) Summary {
	o := cfg.Optimizer
	s := Summary{ID: id, Optimizer: o.Name, LR: o.LR, Beta1: o.Beta1, Beta2: o.Beta2, C: o.C,
		WeightDecay: o.WeightDecay, WarmupFrac: o.WarmupFrac, BatchTokens: cfg.BatchTokens, Seed: cfg.Seed, Steps: cfg.Steps}
	if o.Name != training.SFAdamW {
		s.Schedule = o.Schedule
	}
	if t := cfg.Trainer; t != nil {
		s.Trainer, s.Params = t.Name, t.Params
	}
	s.Attempts = out.Attempts
	switch {
	case out.Result != nil:
		r := out.Result
		s.Status, s.Step, s.Primary, s.Seconds = r.Status, r.DivergedAt, r.Primary, r.Seconds
		s.Val, s.Test, s.TestPPL, s.Metrics = losses(r.Val), losses(r.Test), losses(r.TestPPL), losses(r.Metrics)
	case out.Failed != "":
		s.Status, s.Reason = status.Failed, out.Failed
	case out.Stopped > 0:
		s.Status, s.Step = status.Stopped, out.Stopped
	default:
		s.Status = status.Missing
	}
	return s
}

// Config is the part of a trial's run config its summary keeps.
func (s Summary) Config() training.Config {
	cfg := training.Config{Optimizer: training.OptimizerConfig{Name: s.Optimizer, Schedule: s.Schedule, LR: s.LR, Beta1: s.Beta1, Beta2: s.Beta2, C: s.C,
		WeightDecay: s.WeightDecay, WarmupFrac: s.WarmupFrac}, BatchTokens: s.BatchTokens, Seed: s.Seed, Loop: training.Loop{Steps: s.Steps}}
	if s.Trainer != "" {
		cfg.Trainer = &training.Trainer{Name: s.Trainer, Params: s.Params}
	}
	return cfg
}

func losses(m map[string]float64) map[string]training.Loss {
	if m == nil {
		return nil
	}
	out := make(map[string]training.Loss, len(m))
	for k, v := range m {
		out[k] = training.Loss(v)
	}
	return out
}
