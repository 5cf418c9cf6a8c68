package activities

// Train: a trial trained to its end, or its stored result.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/program"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/checkpoint"
	"github.com/sfsweep/sfsweep/trial"
	"github.com/sfsweep/sfsweep/workflows"
)

// Train runs a trial to its end (or to in.Until, a search's rung), resuming from its newest valid checkpoint, heartbeating
// its step and loss. A result that exists is returned as it is.
func (a *Activities) Train(ctx context.Context, in workflows.TrainInput) (workflows.TrainOutput, error) {
	var mu sync.Mutex
	var last workflows.TrainHeartbeat
	stop := keepAlive(ctx, func() any { mu.Lock(); defer mu.Unlock(); hb := last; hb.GPU = a.gpuMemory(); return hb })
	defer stop()
	if res, err := a.storedResult(ctx, in.TrialID); err != nil || res != nil {
		return a.trainOutput(ctx, in.TrialID, res), err
	}
	cfg, err := a.trialConfig(ctx, in.TrialID)
	if err != nil {
		return workflows.TrainOutput{}, err
	}
	// a trial that failed in an earlier sweep and trains again is not failed until this
	// training fails: until then it reads as running, or stopped at its rung
	if err := trial.ClearFailure(ctx, a.Store, in.TrialID); err != nil {
		return workflows.TrainOutput{}, err
	}
	if attempt := activity.GetInfo(ctx).Attempt; attempt > 1 {
		a.recordAttempt(ctx, in.TrialID, int(attempt))
	}
	waiting := func(s string) { mu.Lock(); last.Waiting = s; mu.Unlock() }
	if cfg.Trainer != nil {
		refused := func(n int, line string) {
			mu.Lock()
			last.Refused = n
			if last.RefusedFirst == "" {
				last.RefusedFirst = line
			}
			mu.Unlock()
		}
		var rate programRate
		res, err := a.trainProgram(ctx, in, cfg, waiting, refused, func(m program.Metric, loss float64) {
			mu.Lock()
			last.Step, last.Loss, last.Waiting = m.Step, loss, ""
			mu.Unlock()
			if a.Progress != nil {
				tps, eta := rate.at(time.Now(), m.Step, m.Tokens, cfg.Steps, cfg.BatchTokens)
				a.Progress(in.TrialID, training.Progress{Step: m.Step, Steps: cfg.Steps, TrainLoss: loss, TokensPerSec: tps, ETA: eta})
			}
		})
		if err != nil {
			return workflows.TrainOutput{}, a.attemptFailed(ctx, in.TrialID, err)
		}
		if res == nil {
			return workflows.TrainOutput{Step: in.Until}, nil // paused at the rung
		}
		out := a.trainOutput(ctx, in.TrialID, res)
		m := program.Mirror{Store: a.Store, Prefix: keys.ProgramCheckpoints(in.TrialID)}
		out.Checkpoints, err = m.Steps(ctx)
		return out, err
	}
	b, err := a.batches(ctx, cfg)
	if err != nil {
		return workflows.TrainOutput{}, err
	}
	prefix := keys.Trial(in.TrialID)
	opt := training.Options{
		Store: a.Store, Prefix: prefix, Record: trial.Recorder{Store: a.Store, Prefix: prefix},
		Data: b, Log: a.log().With("trial", in.TrialID), Until: in.Until,
		Progress: func(p training.Progress) {
			mu.Lock()
			last = workflows.TrainHeartbeat{Step: p.Step, Loss: p.TrainLoss}
			mu.Unlock()
			if a.Progress != nil {
				a.Progress(in.TrialID, p)
			}
		},
	}
	if a.WrapEngine != nil {
		opt.WrapEngine = func(e backend.Engine) backend.Engine { return a.WrapEngine(ctx, in.TrialID, e) }
	}
	release, err := a.admit(ctx, in.TrialID, cfg, waiting)
	if err != nil {
		return workflows.TrainOutput{}, a.attemptFailed(ctx, in.TrialID, err)
	}
	defer release()
	where := func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprintf("after step %d", last.Step)
	}
	res, err := watched(ctx, a, in.StallTimeout, where, func(ctx context.Context) (*training.Result, error) {
		return training.Run(ctx, cfg, opt)
	})
	if err != nil {
		return workflows.TrainOutput{}, a.attemptFailed(ctx, in.TrialID, err)
	}
	return a.trainOutput(ctx, in.TrialID, res), nil
}

// attemptFailed logs a failed Train attempt and shows it to AttemptFailed, and returns its
// error as Temporal is to see it (classify): an error that the same attempt would meet
// again, such as a trial larger than its GPU, is not retried, and AttemptFailed can tell.
func (a *Activities) attemptFailed(ctx context.Context, trialID string, err error) error {
	a.log().Warn("train attempt failed", "trial", trialID, "attempt", activity.GetInfo(ctx).Attempt, "err", err)
	cerr := classify(err)
	if a.AttemptFailed != nil && ctx.Err() == nil {
		a.AttemptFailed(trialID, int(activity.GetInfo(ctx).Attempt), cerr)
	}
	return cerr
}

// recordAttempt records that a trial's training is on its attempt-th attempt, so that its
// count survives the trial (report reads it into the index). A write that fails is only
// logged: the attempt trains all the same.
func (a *Activities) recordAttempt(ctx context.Context, id string, attempt int) {
	if err := trial.WriteAttempts(ctx, a.Store, id, attempt); err != nil {
		a.log().Warn("record attempt", "trial", id, "attempt", attempt, "err", err)
	}
}

// storedResult returns the trial's result, nil if it has none yet. A trial's ID is the
// hash of its config and its result.json is written once, so a result read is kept for
// this worker's later calls: a table build reads only the results that landed since the
// last one.
func (a *Activities) storedResult(ctx context.Context, id string) (*training.Result, error) {
	a.resultsMu.Lock()
	r, ok := a.results[id]
	a.resultsMu.Unlock()
	if ok {
		return r, nil
	}
	r, err := trial.ReadResult(ctx, a.Store, id)
	if r != nil {
		a.resultsMu.Lock()
		if a.results == nil {
			a.results = map[string]*training.Result{}
		}
		a.results[id] = r
		a.resultsMu.Unlock()
	}
	return r, err
}

func (a *Activities) trainOutput(ctx context.Context, id string, r *training.Result) workflows.TrainOutput {
	if r == nil {
		return workflows.TrainOutput{}
	}
	out := workflows.TrainOutput{Status: r.Status, Step: r.Steps, DivergedAt: r.DivergedAt, Arithmetic: r.Engine.Arithmetic}
	if infos, err := checkpoint.List(ctx, a.Store, keys.Checkpoints(keys.Trial(id))); err == nil {
		for _, i := range infos {
			out.Checkpoints = append(out.Checkpoints, int(i.Step))
		}
	}
	return out
}

// admit reserves the trial's memory on this worker's GPU (GPU) before its engine
// allocates. While the memory is taken it waits, heartbeating the line waiting is given;
// a trial larger than the GPU fails at once. Without a ledger, or for a backend that holds
// no device memory, it admits at once. A probe's engine has its trial's shape and is
// admitted the same way.
func (a *Activities) admit(ctx context.Context, id string, cfg training.Config, waiting func(string)) (release func(), err error) {
	if a.GPU == nil {
		return func() {}, nil
	}
	cfg = cfg.WithDefaults()
	mc, err := cfg.ResolveModel()
	if err != nil || cfg.Validate() != nil {
		return func() {}, nil // the run refuses it, with its reasons
	}
	need, ok := backend.Need(cfg.Backend, mc, cfg.MicroBatch, cfg.SeqLen)
	if !ok {
		return func() {}, nil
	}
	what := fmt.Sprintf("%s of %d parameters at micro-batch %d×%d, with its optimizer,", mc.Arch, mc.NumParams(), cfg.MicroBatch, cfg.SeqLen)
	return a.GPU.Reserve(ctx, backend.Request{Backend: cfg.Backend, What: what, Need: need}, func(s string) {
		a.log().Info(s, "trial", id)
		if a.Waiting != nil {
			a.Waiting(id, s)
		}
		waiting(s)
	})
}

// gpuMemory is the memory of this worker's GPU now, for a heartbeat; nil without one.
func (a *Activities) gpuMemory() *workflows.GPUMemory {
	if a.GPU == nil {
		return nil
	}
	u := a.GPU.Usage()
	return &workflows.GPUMemory{Name: u.Device, Total: u.Total, Reserved: u.Reserved, Free: u.Free, Trials: u.Trials, Waiting: u.Waiting}
}
