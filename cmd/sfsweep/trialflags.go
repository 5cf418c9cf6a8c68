package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/sfsweep/sfsweep/workflows"
)

// trialFlags are the flags of run and submit that say how many trials are in flight and
// how a trial's training is watched and retried.
type trialFlags struct {
	window    int
	heartbeat time.Duration
	stall     time.Duration
	retry     workflows.TrainRetry
}

// register adds the flags to fs, with window as -window's default.
func (t *trialFlags) register(fs *flag.FlagSet, window int) {
	def := workflows.RetryTransient
	fs.IntVar(&t.window, "window", window, "trials in flight in the sweep (queued or training)")
	fs.DurationVar(&t.heartbeat, "heartbeat", workflows.DefaultHeartbeatTimeout, "heartbeat timeout of a training activity: a lost worker's trial is retried after it")
	fs.DurationVar(&t.stall, "stall-timeout", workflows.DefaultStallTimeout, "a training attempt whose forward and backward passes stop returning for this long is abandoned as stuck (a hung GPU) and retried")
	fs.IntVar(&t.retry.MaxAttempts, "attempts", int(def.MaximumAttempts), "attempts of a trial's training (lost workers, GPU and storage errors) before it is recorded failed")
	fs.DurationVar(&t.retry.InitialInterval, "retry-initial", def.InitialInterval, "wait before a trial's first retry; it doubles with each retry")
	fs.DurationVar(&t.retry.MaximumInterval, "retry-max", def.MaximumInterval, "longest wait between two attempts of a trial")
}

func (t *trialFlags) check() error {
	switch {
	case t.window < 1:
		return &usageError{msg: fmt.Sprintf("-window = %d: must be ≥ 1", t.window)}
	case t.heartbeat <= 0:
		return &usageError{msg: fmt.Sprintf("-heartbeat = %v: must be > 0", t.heartbeat)}
	case t.stall <= 0:
		return &usageError{msg: fmt.Sprintf("-stall-timeout = %v: must be > 0", t.stall)}
	case t.retry.MaxAttempts < 1:
		return &usageError{msg: fmt.Sprintf("-attempts = %d: must be ≥ 1", t.retry.MaxAttempts)}
	case t.retry.InitialInterval <= 0:
		return &usageError{msg: fmt.Sprintf("-retry-initial = %v: must be > 0", t.retry.InitialInterval)}
	case t.retry.MaximumInterval < t.retry.InitialInterval:
		return &usageError{msg: fmt.Sprintf("-retry-max = %v: must be ≥ -retry-initial (%v)", t.retry.MaximumInterval, t.retry.InitialInterval)}
	}
	return nil
}

// input is the Sweep workflow's input for a sweep.
func (t *trialFlags) input(sweepID, manifestKey string) workflows.SweepInput {
	return workflows.SweepInput{SweepID: sweepID, ManifestKey: manifestKey, Window: t.window, HeartbeatTimeout: t.heartbeat, StallTimeout: t.stall, Retry: t.retry}
}
