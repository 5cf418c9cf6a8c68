// Package activities holds sfsweep's Temporal activities: thin adapters that read and
// write a trial's record through package trial (and the store's other objects at the keys
// of internal/keys) and call training, sweeps and report. Each method of Activities is
// registered under the name the workflows package refers to it by.
package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/data"
	"github.com/sfsweep/sfsweep/trial"
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
	// AttemptFailed, if set, sees every Train attempt of this worker that fails, with its
	// error as Temporal sees it (classify: whether it is retried), for live reports: a
	// failure shows when it happens, not when the trial's retries are spent.
	AttemptFailed func(trialID string, attempt int, err error)
	// Waiting, if set, sees each line of a trial waiting for GPU memory (admit), as status
	// and the page show it: "waiting for GPU memory: needs X GiB, …".
	Waiting func(trialID, status string)
	// WrapEngine, if set, wraps the compute engine of every Train attempt; ctx is the
	// activity's (activity.GetInfo gives the attempt). Fault-injection tests use it.
	WrapEngine func(ctx context.Context, trialID string, e backend.Engine) backend.Engine
	// Trainers are the program trainers this worker runs; nil: none.
	Trainers *Trainers
	// GPU, if set, is the memory of the one GPU this worker trains on: a Train attempt
	// reserves its trial's memory there before its engine allocates (admit).
	GPU *backend.Ledger
	// GPUDevices, if set, is the CUDA_VISIBLE_DEVICES of a program trial on a GPU: the
	// UUID of GPU's device. Unset, the program gets the worker's own (a supervised worker
	// process's GPU), or, where the worker has none, sees every GPU.
	GPUDevices string
	// Node, if set, are the GPUs of this worker's node that the trials of several GPUs
	// (gpus: N) take, whole: such a trial is given N of them, each once nothing else
	// holds it (admitProgram). A worker polls the queues of N GPUs (Trainers.NodeQueues)
	// only for an N it has.
	Node    []NodeGPU
	nodeUse nodeUse
	// OnStall, if set, is called when a Train or probe attempt is abandoned because its
	// compute stopped making progress (see watched).
	OnStall func(err error)
	// OnDeviceFault, if set, is called when a Train or probe attempt fails with a device
	// fault (backend.IsDeviceFault), before the attempt returns its failure: the worker
	// stops taking tasks and ends its process, whose device context the fault has lost.
	OnDeviceFault func(err error)

	mu       sync.Mutex
	datasets map[string]*data.Dataset

	resultsMu sync.Mutex
	results   map[string]*training.Result // by trial ID: results are written once, never changed

	searchers searchers // Decide's, by manifest
}

// RegisterGPU registers the activities of the gpu queue on w.
func (a *Activities) RegisterGPU(w worker.Registry) {
	w.RegisterActivityWithOptions(a.Train, activity.RegisterOptions{Name: workflows.ActivityTrain})
	w.RegisterActivityWithOptions(a.DecayProbe, activity.RegisterOptions{Name: workflows.ActivityDecayProbe})
	w.RegisterActivityWithOptions(a.LRDecay, activity.RegisterOptions{Name: workflows.ActivityLRDecay})
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
	w.RegisterActivityWithOptions(a.Decide, activity.RegisterOptions{Name: workflows.ActivityDecide})
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
	var ce *fielderr.Error
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

// trialConfig reads a trial's config.json, with its defaults, checked: one that is
// missing, damaged, invalid, not the config its ID is the hash of, or of a backend this
// worker lacks fails for good; a store that fails is retried.
func (a *Activities) trialConfig(ctx context.Context, id string) (training.Config, error) {
	cfg, err := trial.ReadConfig(ctx, a.Store, id)
	var damaged *trial.DamagedError
	switch {
	case errors.Is(err, blob.ErrNotFound):
		return cfg, invalid(fmt.Errorf("trial %s: %w", id, err))
	case errors.As(err, &damaged):
		return cfg, invalid(fmt.Errorf("trial %s: config.json: %w", id, damaged.Err))
	case err != nil:
		return cfg, err
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return cfg, invalid(fmt.Errorf("trial %s: %w", id, err))
	}
	if h := cfg.Hash()[:sweeps.IDLen]; h != id {
		return cfg, invalid(fmt.Errorf("trial %s: config.json hashes to %s", id, h))
	}
	if err := backend.Check(cfg.Backend); err != nil && cfg.Trainer == nil { // a program needs only the device
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
