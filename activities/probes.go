package activities

// The probes of a trial, each from one of its checkpoints.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/training/checkpoint"
	"github.com/sfsweep/sfsweep/trial"
	"github.com/sfsweep/sfsweep/workflows"
)

// DecayProbe runs the decay probe from a trial's checkpoint (the x iterate for SF-AdamW,
// the weights for AdamW) and stores its result; a result stored with the same probe
// settings is returned as it is.
func (a *Activities) DecayProbe(ctx context.Context, in workflows.DecayProbeInput) (training.DecayProbeResult, error) {
	want := training.DecayProbeFrom(in.Step, in.Decay) // as asked: a stored result names the iterate it resolved to
	pc := want
	pc.Iterate = "" // set to the iterate resolved, below
	what := fmt.Sprintf("decay probe from step %d", in.Step)
	return fromCheckpoint(ctx, a, in.TrialID, in.Step, in.StallTimeout, what,
		record[training.DecayProbeResult]{
			read: func(ctx context.Context) (*training.DecayProbeResult, error) {
				return trial.ReadDecayProbe(ctx, a.Store, in.TrialID, want)
			},
			write: func(ctx context.Context, r *training.DecayProbeResult) error {
				return trial.WriteDecayProbe(ctx, a.Store, in.TrialID, want, r)
			},
		},
		func(ctx context.Context, cfg training.Config, ck *checkpoint.Checkpoint, b training.Batches) (*training.DecayProbeResult, error) {
			w, iterate, err := training.IterateWeights(cfg, ck, in.Iterate)
			if err != nil {
				return nil, invalid(err)
			}
			pc.Iterate = iterate
			return training.DecayProbe(ctx, cfg, w, b, pc)
		})
}

// LRDecay runs the LR-decay branch of a trial (AdamW or SF-AdamW, or a program that
// implements it) from its checkpoint (weights and optimizer state) and stores its result,
// or returns the one stored.
func (a *Activities) LRDecay(ctx context.Context, in workflows.LRDecayInput) (training.LRDecayResult, error) {
	what := fmt.Sprintf("LR-decay branch from step %d", in.Step)
	if cfg, err := a.trialConfig(ctx, in.TrialID); err == nil && cfg.Trainer != nil {
		return fromProgram(ctx, a, in.TrialID, what, lrDecayRecord(a, in), func(ctx context.Context) (*training.LRDecayResult, error) {
			return a.programLRDecay(ctx, in, cfg)
		})
	}
	return fromCheckpoint(ctx, a, in.TrialID, in.Step, in.StallTimeout, what,
		lrDecayRecord(a, in),
		func(ctx context.Context, cfg training.Config, ck *checkpoint.Checkpoint, b training.Batches) (*training.LRDecayResult, error) {
			st, err := ck.Optimizer(training.StateOptimizer)
			if err != nil {
				return nil, invalid(err)
			}
			return training.LRDecay(ctx, cfg, ck.Params, st, in.Step, in.Frac, b)
		})
}

// lrDecayRecord is where an LR-decay branch's result is kept.
func lrDecayRecord(a *Activities, in workflows.LRDecayInput) record[training.LRDecayResult] {
	return record[training.LRDecayResult]{
		read: func(ctx context.Context) (*training.LRDecayResult, error) {
			return trial.ReadLRDecay(ctx, a.Store, in.TrialID, in.Step, in.Frac)
		},
		write: func(ctx context.Context, r *training.LRDecayResult) error {
			return trial.WriteLRDecay(ctx, a.Store, in.TrialID, in.Step, in.Frac, r)
		},
	}
}

// fromProgram is fromCheckpoint for a probe a program trainer computes: the stored result,
// or run's, stored.
func fromProgram[R any](ctx context.Context, a *Activities, trialID, what string, rec record[R], run func(context.Context) (*R, error)) (r R, err error) {
	defer keepAlive(ctx, func() any { return what })()
	if r, err := rec.read(ctx); err == nil && r != nil {
		return *r, nil
	}
	if a.Probe != nil {
		a.Probe(trialID, what, false, nil)
		defer func() { a.Probe(trialID, what, true, err) }()
	}
	res, err := run(ctx)
	if err != nil {
		return r, classify(err)
	}
	if err := rec.write(ctx, res); err != nil {
		return r, err
	}
	return *res, nil
}

// Interpolate evaluates a trial along the segment between its checkpoints at From and
// To (the x iterate for SF-AdamW, the weights for AdamW), or, Decayed, between the one at
// From and the end of an LR-decay branch from it over To − From steps; and stores the
// result, or returns the one stored.
func (a *Activities) Interpolate(ctx context.Context, in workflows.InterpolateInput) (training.InterpolationResult, error) {
	what := fmt.Sprintf("interpolation from step %d to %d", in.From, in.To)
	if in.Decayed {
		what += " (decayed)"
	}
	ip := in.Interpolation
	return fromCheckpoint(ctx, a, in.TrialID, in.From, in.StallTimeout, what,
		record[training.InterpolationResult]{
			read: func(ctx context.Context) (*training.InterpolationResult, error) {
				return trial.ReadInterpolation(ctx, a.Store, in.TrialID, ip)
			},
			write: func(ctx context.Context, r *training.InterpolationResult) error {
				return trial.WriteInterpolation(ctx, a.Store, in.TrialID, ip, r)
			},
		},
		func(ctx context.Context, cfg training.Config, ck *checkpoint.Checkpoint, b training.Batches) (*training.InterpolationResult, error) {
			if in.Points < 2 {
				return nil, &fielderr.Error{Field: "interpolate.points", Value: in.Points, Reason: "must be ≥ 2"}
			}
			res := &training.InterpolationResult{From: in.From, To: in.To, Decayed: in.Decayed, Iterate: training.IterW, EvalSeqs: cfg.EvalSeqs}
			w1, w2 := ck.Params, []float32(nil)
			switch {
			case in.Decayed:
				st, err := ck.Optimizer(training.StateOptimizer)
				if err != nil {
					return nil, invalid(err)
				}
				if _, w2, err = training.LRDecayWeights(ctx, cfg, w1, st, in.From, in.To-in.From, b); err != nil {
					return nil, err
				}
			default:
				to, err := a.loadCheckpoint(ctx, in.TrialID, in.To)
				if err != nil {
					return nil, err
				}
				if w1, res.Iterate, err = training.IterateWeights(cfg, ck, ""); err != nil {
					return nil, invalid(err)
				}
				if w2, _, err = training.IterateWeights(cfg, to, ""); err != nil {
					return nil, invalid(err)
				}
			}
			pts, err := training.Interpolate(ctx, cfg, w1, w2, training.Alphas(in.Points), b)
			res.Points = pts
			return res, err
		})
}

// loadCheckpoint reads a trial's checkpoint at step. One that is missing or corrupt is a
// non-retryable error; a store that fails is retried.
func (a *Activities) loadCheckpoint(ctx context.Context, trialID string, step int) (*checkpoint.Checkpoint, error) {
	ck, err := checkpoint.Load(ctx, a.Store, keys.Checkpoints(keys.Trial(trialID)), int64(step))
	if checkpoint.IsBad(err) || errors.Is(err, blob.ErrNotFound) {
		return nil, invalid(err)
	}
	return ck, err
}

// record is where a probe's result lives in its trial's record: read gives the stored
// result that answers the request (nil: none), write stores a new one.
type record[R any] struct {
	read  func(context.Context) (*R, error)
	write func(context.Context, *R) error
}

// fromCheckpoint runs a probe (what) of a trial's checkpoint at step under the stall
// watchdog and stores its result in rec. A result that rec has for the request is
// returned without computing. A checkpoint that is missing or corrupt, a probe that its
// config refuses and a result that cannot be encoded fail for good; a store that fails is
// retried.
func fromCheckpoint[R any](ctx context.Context, a *Activities, trialID string, step int,
	stall time.Duration, what string, rec record[R], run func(context.Context, training.Config, *checkpoint.Checkpoint, training.Batches) (*R, error),
) (r R, err error) {
	defer keepAlive(ctx, func() any { return step })()
	var zero R
	if r, err := rec.read(ctx); err == nil && r != nil {
		return *r, nil
	}
	if a.Probe != nil {
		a.Probe(trialID, what, false, nil)
		defer func() { a.Probe(trialID, what, true, err) }()
	}
	cfg, err := a.trialConfig(ctx, trialID)
	if err != nil {
		return zero, err
	}
	ck, err := a.loadCheckpoint(ctx, trialID, step)
	if err != nil {
		return zero, err
	}
	b, err := a.batches(ctx, cfg)
	if err != nil {
		return zero, err
	}
	release, err := a.admit(ctx, trialID, cfg, func(string) {}) // its engine has the trial's shape
	if err != nil {
		return zero, classify(err)
	}
	defer release()
	res, err := watched(ctx, a, stall, func() string { return "in the " + what }, func(ctx context.Context) (*R, error) {
		return run(ctx, cfg, ck, b)
	})
	if err != nil {
		return zero, classify(err)
	}
	if err := rec.write(ctx, res); err != nil {
		var bad *json.UnsupportedValueError
		if errors.As(err, &bad) {
			return zero, invalid(err)
		}
		return *res, err
	}
	return *res, nil
}
