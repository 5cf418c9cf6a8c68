// Package activities holds sfsweep's Temporal activities: thin adapters that read and
// write the object store (at the keys of internal/keys) and call training, sweeps and
// report. Each method of Activities is registered under the name the workflows package
// refers to it by.
package activities

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/report"
	"github.com/sfsweep/sfsweep/sweepclient"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/checkpoint"
	"github.com/sfsweep/sfsweep/training/data"
	"github.com/sfsweep/sfsweep/workflows"
)

// Activities carries what the activities share: the object store, a Temporal client (to
// signal the Tables workflow) and the local cache of prepared corpora.
type Activities struct {
	Store    blob.Store
	Client   client.Client
	CacheDir string
	Log      *slog.Logger
	// Progress, if set, sees every Train step of this worker (for live progress bars).
	Progress func(trialID string, p training.Progress)
	// Probe, if set, sees every probe this worker computes start (done false) and end
	// (done true, err its failure or nil); what names it, e.g. "decay probe from step 60".
	Probe func(trialID, what string, done bool, err error)
	// AttemptFailed, if set, sees every Train attempt of this worker that fails (for live
	// reports: a failure shows when it happens, not when the trial's retries are spent).
	AttemptFailed func(trialID string, attempt int, err error)
	// WrapEngine, if set, wraps the compute engine of every Train attempt; ctx is the
	// activity's (activity.GetInfo gives the attempt). Fault-injection tests use it.
	WrapEngine func(ctx context.Context, trialID string, e backend.Engine) backend.Engine
	// OnStall, if set, is called when a Train or probe attempt is abandoned because its
	// compute stopped making progress (see watched).
	OnStall func(err error)

	mu       sync.Mutex
	datasets map[string]*data.Dataset

	resultsMu sync.Mutex
	results   map[string]*training.Result // by trial ID: results are written once, never changed
}

// RegisterGPU registers the activities of the gpu queue on w.
func (a *Activities) RegisterGPU(w worker.Registry) {
	w.RegisterActivityWithOptions(a.Train, activity.RegisterOptions{Name: workflows.ActivityTrain})
	w.RegisterActivityWithOptions(a.DecayProbe, activity.RegisterOptions{Name: workflows.ActivityDecayProbe})
	w.RegisterActivityWithOptions(a.DecayBranch, activity.RegisterOptions{Name: workflows.ActivityDecayBranch})
	w.RegisterActivityWithOptions(a.Interpolate, activity.RegisterOptions{Name: workflows.ActivityInterpolate})
}

// RegisterCPU registers the workflows and the activities of the cpu queue on w.
func (a *Activities) RegisterCPU(w worker.Registry) {
	w.RegisterWorkflow(workflows.Sweep)
	w.RegisterWorkflow(workflows.Trial)
	w.RegisterWorkflow(workflows.Tables)
	w.RegisterWorkflow(workflows.RegenerateTables)
	w.RegisterActivityWithOptions(a.RetireSchedule, activity.RegisterOptions{Name: workflows.ActivityRetireSchedule})
	w.RegisterActivityWithOptions(a.Plan, activity.RegisterOptions{Name: workflows.ActivityPlan})
	w.RegisterActivityWithOptions(a.ReadPlan, activity.RegisterOptions{Name: workflows.ActivityReadPlan})
	w.RegisterActivityWithOptions(a.RecordFailed, activity.RegisterOptions{Name: workflows.ActivityRecordFailed})
	w.RegisterActivityWithOptions(a.NotifyTables, activity.RegisterOptions{Name: workflows.ActivityNotifyTables})
	w.RegisterActivityWithOptions(a.BuildTables, activity.RegisterOptions{Name: workflows.ActivityBuildTables})
}

func (a *Activities) log() *slog.Logger {
	if a.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return a.Log
}

// KeepAliveEvery is how often a long activity heartbeats between its own progress reports
// (preparing data, restoring a checkpoint, evaluating, probing), well inside the shortest
// heartbeat timeout a sweep may set.
const KeepAliveEvery = time.Second

// keepAlive heartbeats every KeepAliveEvery with the latest detail until stop is called,
// so a live worker is never taken for a lost one; a killed worker stops heartbeating and
// its activity is retried elsewhere.
func keepAlive(ctx context.Context, detail func() any) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(KeepAliveEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, detail())
			}
		}
	}()
	return func() { close(done) }
}

// ErrorOutOfMemory is the error type of a trial too large for its device: never retried.
const ErrorOutOfMemory = "OutOfMemory"

// OutOfMemoryRetryDelay is how long a trial that fits on its device, but found too little
// of it free, waits before its next attempt.
const OutOfMemoryRetryDelay = time.Minute

// classify maps a failed attempt's error to what Temporal should do with it: an invalid
// configuration (a field the trainer refuses, a backend this build lacks) and a trial
// larger than its device are never retried; a device whose memory other processes hold is
// retried after OutOfMemoryRetryDelay; anything else is retried with the trial's backoff.
func classify(err error) error {
	var ce *training.ConfigError
	var oom *backend.OutOfMemoryError
	switch {
	case errors.As(err, &ce), errors.Is(err, backend.ErrUnavailable):
		return invalid(err)
	case errors.As(err, &oom):
		return temporal.NewApplicationErrorWithOptions(err.Error(), ErrorOutOfMemory, temporal.ApplicationErrorOptions{
			NonRetryable: !oom.Fits(), NextRetryDelay: OutOfMemoryRetryDelay, Cause: err,
		})
	}
	return err
}

// invalid is a non-retryable error: the same input would fail again.
func invalid(err error) error {
	return temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrorInvalidConfig, err)
}

// readManifest reads and parses the manifest under key.
func (a *Activities) readManifest(ctx context.Context, key string) (*sweeps.Manifest, error) {
	src, err := a.Store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	m, err := sweeps.Parse(src)
	if err != nil {
		return nil, invalid(fmt.Errorf("%s: %w", key, err))
	}
	return m, nil
}

// Plan expands the manifest, writes each trial's config.json where missing, and reports
// which trials already have a result (those are never recomputed).
func (a *Activities) Plan(ctx context.Context, in workflows.PlanInput) (workflows.PlanOutput, error) {
	defer keepAlive(ctx, func() any { return "plan" })()
	m, err := a.readManifest(ctx, in.ManifestKey)
	if err != nil {
		return workflows.PlanOutput{}, err
	}
	trials, err := m.Expand()
	if err != nil {
		return workflows.PlanOutput{}, invalid(err)
	}
	out := workflows.PlanOutput{Trials: make([]workflows.TrialRef, 0, len(trials))}
	done, err := a.Store.List(ctx, keys.Trials)
	if err != nil {
		return out, err
	}
	exists := map[string]bool{}
	checkpoints := map[string][]int{} // by trial: the steps of its checkpoints in the store
	for _, k := range done {
		exists[k] = true
		if id, step, ok := keys.CheckpointOf(k); ok {
			checkpoints[id] = append(checkpoints[id], step)
		}
	}
	for i, t := range trials {
		ref := workflows.TrialRef{ID: t.ID, Queue: trainQueue(t.Config)}
		if d := m.Probes.Decay; d != nil {
			ref.DecayAt, ref.DecaySteps, ref.DecayLR, ref.DecayIterate = d.At, d.Steps, d.PeakLR, d.Iterate
			if ref.DecayLR == 0 {
				ref.DecayLR = 1e-4
			}
		}
		if b := m.Probes.LRDecay; b != nil && t.Config.Optimizer.Name == training.AdamW {
			ref.BranchAt, ref.BranchFrac = b.At, b.Frac
		}
		if ip := m.Probes.Interpolate; ip != nil {
			ref.Interp = &workflows.InterpolateRef{From: ip.From, To: ip.To, Points: cmp.Or(ip.Points, sweeps.DefaultInterpolationPoints),
				Decayed: ip.Decayed && t.Config.Optimizer.Name == training.AdamW}
		}
		if ref.Done = exists[keys.RunResult(keys.Trial(t.ID))]; ref.Done && !probesStored(ref, exists, checkpoints[t.ID]) {
			// probes asked for and missing: the trial runs again (Train finds its result)
			// to add them, unless it did not complete, which has no probes
			r, err := a.storedResult(ctx, t.ID)
			if err != nil {
				return out, err
			}
			ref.Done = r != nil && r.Status != training.StatusCompleted
		}
		if !exists[keys.RunConfig(keys.Trial(t.ID))] {
			b, _ := json.MarshalIndent(t.Config, "", "  ")
			if err := a.Store.Put(ctx, keys.RunConfig(keys.Trial(t.ID)), b); err != nil {
				return out, err
			}
		}
		out.Trials = append(out.Trials, ref)
		if i%64 == 0 {
			activity.RecordHeartbeat(ctx, i)
		}
	}
	if in.Paged {
		return a.storePlan(ctx, in.SweepID, out.Trials)
	}
	return out, nil
}

// trainQueue is the task queue of a trial's training and probes: that of its backend's
// device.
func trainQueue(cfg training.Config) string {
	b, _ := backend.Lookup(cfg.WithDefaults().Backend) // the config was validated
	return workflows.TrainQueue(b.Device)
}

// probesStored tells whether every probe the trial asks for has its result in the store:
// from the steps listed, or else from every checkpoint stored.
func probesStored(ref workflows.TrialRef, exists map[string]bool, checkpoints []int) bool {
	all := func(at []int, key func(step int) string) bool {
		if len(at) == 0 {
			at = checkpoints
		}
		for _, s := range at {
			if !exists[key(s)] {
				return false
			}
		}
		return true
	}
	if ref.DecaySteps > 0 && !all(ref.DecayAt, func(s int) string { return keys.DecayProbe(ref.ID, s, ref.DecayIterate) }) {
		return false
	}
	if ref.BranchFrac > 0 && !all(ref.BranchAt, func(s int) string { return keys.LRDecay(ref.ID, s, ref.BranchFrac) }) {
		return false
	}
	if ip := ref.Interp; ip != nil {
		if !exists[keys.Interpolation(ref.ID, ip.From, ip.To, ip.Points, false)] {
			return false
		}
		return !ip.Decayed || exists[keys.Interpolation(ref.ID, ip.From, ip.To, ip.Points, true)]
	}
	return true
}

// storePlan writes a plan to the store in pages of workflows.PlanPageSize trials, under a
// prefix of the Sweep workflow's run (a sweep submitted again plans anew and never
// rewrites the pages a running sweep reads).
func (a *Activities) storePlan(ctx context.Context, sweepID string, trials []workflows.TrialRef) (workflows.PlanOutput, error) {
	out := workflows.PlanOutput{
		Prefix:   keys.PlanPrefix(sweepID, activity.GetInfo(ctx).WorkflowExecution.RunID),
		PageSize: workflows.PlanPageSize, Total: len(trials),
	}
	for _, t := range trials {
		if t.Done {
			out.Skipped++
		}
	}
	for n := 0; n*out.PageSize < len(trials); n++ {
		b, err := json.Marshal(trials[n*out.PageSize : min((n+1)*out.PageSize, len(trials))])
		if err != nil {
			return workflows.PlanOutput{}, err
		}
		if err := a.Store.Put(ctx, keys.PlanPage(out.Prefix, n), b); err != nil {
			return workflows.PlanOutput{}, err
		}
	}
	return out, nil
}

// ReadPlan returns a page of a stored plan.
func (a *Activities) ReadPlan(ctx context.Context, in workflows.ReadPlanInput) ([]workflows.TrialRef, error) {
	b, err := a.Store.Get(ctx, keys.PlanPage(in.Prefix, in.Page))
	if err != nil {
		return nil, err
	}
	var page []workflows.TrialRef
	if err := json.Unmarshal(b, &page); err != nil {
		return nil, fmt.Errorf("plan page %s: %w", keys.PlanPage(in.Prefix, in.Page), err)
	}
	return page, nil
}

// trialConfig reads a trial's config.json.
func (a *Activities) trialConfig(ctx context.Context, id string) (training.Config, error) {
	b, err := a.Store.Get(ctx, keys.RunConfig(keys.Trial(id)))
	if err != nil {
		if errors.Is(err, blob.ErrNotFound) {
			return training.Config{}, invalid(fmt.Errorf("trial %s: %w", id, err))
		}
		return training.Config{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var cfg training.Config
	if err := dec.Decode(&cfg); err != nil {
		return cfg, invalid(fmt.Errorf("trial %s: config.json: %w", id, err))
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return cfg, invalid(fmt.Errorf("trial %s: %w", id, err))
	}
	if h := cfg.Hash()[:sweeps.IDLen]; h != id {
		return cfg, invalid(fmt.Errorf("trial %s: config.json hashes to %s", id, h))
	}
	if err := backend.Check(cfg.Backend); err != nil {
		// a trial reaches a worker without its backend only through the queue of sweeps
		// planned before trials were routed by device (workflows.QueueGPU)
		return cfg, invalid(fmt.Errorf("trial %s: %w", id, err))
	}
	return cfg, nil
}

// batches opens (once per worker process) the trial's dataset and its batches.
func (a *Activities) batches(ctx context.Context, cfg training.Config) (training.Batches, error) {
	key := fmt.Sprintf("%s|%s|%d", cfg.Data.Path, cfg.Data.Default, cfg.Data.MaxBytes)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.datasets == nil {
		a.datasets = map[string]*data.Dataset{}
	}
	ds, ok := a.datasets[key]
	if !ok {
		var err error
		if ds, err = training.OpenData(ctx, cfg.Data, a.Store, a.CacheDir); err != nil {
			return nil, err
		}
		a.datasets[key] = ds
	}
	b, err := training.NewBatches(cfg, ds)
	if err != nil {
		return nil, invalid(err)
	}
	return b, nil
}

// Train runs a trial to its end, resuming from its newest valid checkpoint, heartbeating
// its step and loss. A result that exists is returned as it is.
func (a *Activities) Train(ctx context.Context, in workflows.TrainInput) (workflows.TrainOutput, error) {
	var mu sync.Mutex
	var last workflows.TrainHeartbeat
	stop := keepAlive(ctx, func() any { mu.Lock(); defer mu.Unlock(); return last })
	defer stop()
	if res, err := a.storedResult(ctx, in.TrialID); err != nil || res != nil {
		return a.trainOutput(ctx, in.TrialID, res), err
	}
	cfg, err := a.trialConfig(ctx, in.TrialID)
	if err != nil {
		return workflows.TrainOutput{}, err
	}
	b, err := a.batches(ctx, cfg)
	if err != nil {
		return workflows.TrainOutput{}, err
	}
	opt := training.Options{
		Store: a.Store, Prefix: keys.Trial(in.TrialID), Data: b, Log: a.log().With("trial", in.TrialID),
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
	where := func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprintf("after step %d", last.Step)
	}
	res, err := watched(ctx, a, in.StallTimeout, where, func(ctx context.Context) (*training.Result, error) {
		return training.Run(ctx, cfg, opt)
	})
	if err != nil {
		a.log().Warn("train attempt failed", "trial", in.TrialID, "attempt", activity.GetInfo(ctx).Attempt, "err", err)
		if a.AttemptFailed != nil && ctx.Err() == nil {
			a.AttemptFailed(in.TrialID, int(activity.GetInfo(ctx).Attempt), err)
		}
		return workflows.TrainOutput{}, classify(err)
	}
	return a.trainOutput(ctx, in.TrialID, res), nil
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
	r, err := report.ReadResult(ctx, a.Store, id)
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
	out := workflows.TrainOutput{Status: r.Status, DivergedAt: r.DivergedAt}
	if infos, err := checkpoint.List(ctx, a.Store, keys.Checkpoints(keys.Trial(id))); err == nil {
		for _, i := range infos {
			out.Checkpoints = append(out.Checkpoints, int(i.Step))
		}
	}
	return out
}

// DecayProbe runs the decay probe from a trial's checkpoint (the x iterate for SF-AdamW,
// the weights for AdamW) and stores its result; a result stored with the same probe
// settings is returned as it is.
func (a *Activities) DecayProbe(ctx context.Context, in workflows.DecayProbeInput) (training.DecayProbeResult, error) {
	pc := training.DefaultDecayProbe(in.Step, in.Steps, "")
	if in.PeakLR > 0 {
		pc.PeakLR = in.PeakLR
	}
	same := func(r *training.DecayProbeResult) bool {
		return r.Steps == pc.Steps && r.PeakLR == pc.PeakLR && training.SameIterate(r.Iterate, in.Iterate)
	}
	what := fmt.Sprintf("decay probe from step %d", in.Step)
	return fromCheckpoint(ctx, a, in.TrialID, in.Step, keys.DecayProbe(in.TrialID, in.Step, in.Iterate), same, in.StallTimeout, what,
		func(ctx context.Context, cfg training.Config, ck *checkpoint.Checkpoint, b training.Batches) (*training.DecayProbeResult, error) {
			w, iterate, err := training.IterateWeights(cfg, ck, in.Iterate)
			if err != nil {
				return nil, invalid(err)
			}
			pc.Iterate = iterate
			return training.DecayProbe(ctx, cfg, w, b, pc)
		})
}

// DecayBranch runs the LR-decay branch of an AdamW trial from its checkpoint (weights and
// optimizer state) and stores its result, or returns the one stored.
func (a *Activities) DecayBranch(ctx context.Context, in workflows.DecayBranchInput) (training.DecayBranchResult, error) {
	same := func(*training.DecayBranchResult) bool { return true } // the key names the branch's fraction
	what := fmt.Sprintf("LR-decay branch from step %d", in.Step)
	return fromCheckpoint(ctx, a, in.TrialID, in.Step, keys.LRDecay(in.TrialID, in.Step, in.Frac), same, in.StallTimeout, what,
		func(ctx context.Context, cfg training.Config, ck *checkpoint.Checkpoint, b training.Batches) (*training.DecayBranchResult, error) {
			st, err := ck.Optimizer(training.StateOptimizer)
			if err != nil {
				return nil, invalid(err)
			}
			return training.DecayBranch(ctx, cfg, ck.Params, st, in.Step, in.Frac, b)
		})
}

// Interpolate evaluates a trial along the segment between its checkpoints at From and
// To (the x iterate for SF-AdamW, the weights for AdamW), or, Decayed, between the one at
// From and the end of an LR-decay branch from it over To − From steps; and stores the
// result, or returns the one stored.
func (a *Activities) Interpolate(ctx context.Context, in workflows.InterpolateInput) (training.InterpolationResult, error) {
	same := func(*training.InterpolationResult) bool { return true } // the key names every setting
	what := fmt.Sprintf("interpolation from step %d to %d", in.From, in.To)
	if in.Decayed {
		what += " (decayed)"
	}
	return fromCheckpoint(ctx, a, in.TrialID, in.From, keys.Interpolation(in.TrialID, in.From, in.To, in.Points, in.Decayed), same, in.StallTimeout, what,
		func(ctx context.Context, cfg training.Config, ck *checkpoint.Checkpoint, b training.Batches) (*training.InterpolationResult, error) {
			if in.Points < 2 {
				return nil, &training.ConfigError{Field: "interpolate.points", Value: in.Points, Reason: "must be ≥ 2"}
			}
			res := &training.InterpolationResult{From: in.From, To: in.To, Decayed: in.Decayed, Iterate: training.IterW, EvalSeqs: cfg.EvalSeqs}
			w1, w2 := ck.Params, []float32(nil)
			switch {
			case in.Decayed:
				st, err := ck.Optimizer(training.StateOptimizer)
				if err != nil {
					return nil, invalid(err)
				}
				if _, w2, err = training.DecayBranchWeights(ctx, cfg, w1, st, in.From, in.To-in.From, b); err != nil {
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

// fromCheckpoint runs a probe (what) of a trial's checkpoint at step under the stall
// watchdog and stores its result at key. A result already at key that same accepts is
// returned without computing. A checkpoint that is missing or corrupt, and a probe that its
// config refuses, fail for good; a store that fails is retried.
func fromCheckpoint[R any](ctx context.Context, a *Activities, trialID string, step int, key string, same func(*R) bool,
	stall time.Duration, what string, run func(context.Context, training.Config, *checkpoint.Checkpoint, training.Batches) (*R, error),
) (r R, err error) {
	defer keepAlive(ctx, func() any { return step })()
	var zero R
	if b, err := a.Store.Get(ctx, key); err == nil {
		var r R
		if json.Unmarshal(b, &r) == nil && same(&r) {
			return r, nil
		}
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
	res, err := watched(ctx, a, stall, func() string { return "in the " + what }, func(ctx context.Context) (*R, error) {
		return run(ctx, cfg, ck, b)
	})
	if err != nil {
		return zero, classify(err)
	}
	out, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return zero, invalid(err)
	}
	return *res, a.Store.Put(ctx, key, out)
}

// RecordFailed marks a trial failed, so its table cells say so.
func (a *Activities) RecordFailed(ctx context.Context, in workflows.RecordFailedInput) error {
	b, _ := json.Marshal(map[string]string{"trial_id": in.TrialID, "reason": in.Reason})
	return a.Store.Put(ctx, keys.TrialFailed(in.TrialID), b)
}

// NotifyTables signals the sweep's Tables workflow that a result landed (or that the
// sweep is done), starting the workflow if it is not running.
func (a *Activities) NotifyTables(ctx context.Context, in workflows.NotifyInput) error {
	signal, arg := workflows.SignalResult, in.TrialID
	if in.Done {
		signal, arg = workflows.SignalSweepDone, ""
	}
	_, err := a.Client.SignalWithStartWorkflow(ctx, workflows.TablesWorkflowID(in.SweepID), signal, arg,
		client.StartWorkflowOptions{ID: workflows.TablesWorkflowID(in.SweepID), TaskQueue: workflows.QueueCPU},
		workflows.Tables, workflows.TablesInput{SweepID: in.SweepID, ManifestKey: in.ManifestKey})
	return err
}

// TablesOutput lists the objects BuildTables wrote.
type TablesOutput struct {
	Keys []string `json:"keys"`
}

// BuildTables rebuilds every table and plot of the sweep from the results in the store.
func (a *Activities) BuildTables(ctx context.Context, in workflows.BuildTablesInput) (TablesOutput, error) {
	defer keepAlive(ctx, func() any { return "tables" })()
	m, err := a.readManifest(ctx, in.ManifestKey)
	if err != nil {
		return TablesOutput{}, err
	}
	written, err := report.Build(ctx, a.Store, m, report.Options{Result: a.storedResult, Progress: func(n int) { activity.RecordHeartbeat(ctx, n) }})
	if errors.Is(err, report.ErrInvalid) {
		err = invalid(err)
	}
	return TablesOutput{Keys: written}, err
}

// RetireSchedule deletes the sweep's tables schedule when the sweep is no longer running.
func (a *Activities) RetireSchedule(ctx context.Context, in workflows.RetireInput) error {
	return sweepclient.RetireSchedule(ctx, a.Client, in.SweepID, in.ScheduleID)
}
