package report

// Index: every trial of an output at a glance, in one object beside its tables.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/training"
)

// Index is what a manifest's trials are when its tables are built: each trial's
// configuration, outcome and final losses. Build writes it (keys.TrialIndex), so that a
// view of a sweep of any size reads one object rather than a result per trial.
type Index struct {
	Sweep  string       `json:"sweep,omitempty"` // the sweep whose run built it, when known
	Name   string       `json:"name"`            // the manifest's name
	Trials []IndexTrial `json:"trials"`
}

// IndexTrial is one trial of an Index.
type IndexTrial struct {
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
	Seconds float64                  `json:"seconds,omitempty"` // the training time of its last attempt
}

// MakeIndex is the index of res.
func MakeIndex(name, sweepID string, res *Results) *Index {
	ix := &Index{Sweep: sweepID, Name: name, Trials: make([]IndexTrial, 0, len(res.Trials))}
	for _, t := range res.Trials {
		o := t.Config.Optimizer
		it := IndexTrial{ID: t.ID, Optimizer: o.Name, LR: o.LR, Beta1: o.Beta1, Beta2: o.Beta2, C: o.C,
			WeightDecay: o.WeightDecay, WarmupFrac: o.WarmupFrac, BatchTokens: t.Config.BatchTokens, Seed: t.Config.Seed, Steps: t.Config.Steps}
		if o.Name != training.SFAdamW {
			it.Schedule = o.Schedule
		}
		out := res.Outcomes[t.ID]
		it.Attempts = out.Attempts
		switch {
		case out.Result != nil:
			r := out.Result
			it.Status, it.Step, it.Primary, it.Seconds = r.Status, r.DivergedAt, r.Primary, r.Seconds
			it.Val, it.Test, it.TestPPL = losses(r.Val), losses(r.Test), losses(r.TestPPL)
		case out.Failed != "":
			it.Status, it.Reason = status.Failed, out.Failed
		case out.Stopped > 0:
			it.Status, it.Step = status.Stopped, out.Stopped
		default:
			it.Status = status.Missing
		}
		ix.Trials = append(ix.Trials, it)
	}
	return ix
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

// index writes the index of res under the writer's output.
func (w *writer) index(name, sweepID string, res *Results) {
	w.put(keys.TrialIndex(w.out), func(b *bytes.Buffer) error {
		return json.NewEncoder(b).Encode(MakeIndex(name, sweepID, res))
	})
}

// ReadIndex reads an output's index: nil if its tables were never built.
func ReadIndex(ctx context.Context, store blob.Store, output string) (*Index, error) {
	b, err := store.Get(ctx, keys.TrialIndex(output))
	if errors.Is(err, blob.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ix, err := ParseIndex(b)
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", keys.TrialIndex(output), err)
	}
	return ix, nil
}

// ParseIndex decodes an index as Build writes it.
func ParseIndex(b []byte) (*Index, error) {
	var ix Index
	if err := json.Unmarshal(b, &ix); err != nil {
		return nil, err
	}
	return &ix, nil
}
