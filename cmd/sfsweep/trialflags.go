package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/report"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/workflows"
)

// trialFlags are the flags of run and submit that say how many trials are in flight and
// how a trial's training is watched and retried.
type trialFlags struct {
	window    int
	heartbeat time.Duration
	stall     time.Duration
	retry     workflows.TrainRetry
	replace   bool
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
	fs.BoolVar(&t.replace, "replace", false, "let this manifest's tables replace those of another manifest at its output (an earlier version of it, edited): that one's results stay in the store, its tables are this one's from now on")
}

// claimOutput checks that manifest m, of these trials, may write its tables to its output
// (report.CheckOutput); with -replace, one that holds another sweep's tables is released
// to it first, saying so on stderr.
func (t *trialFlags) claimOutput(ctx context.Context, store blob.Store, m *sweeps.Manifest, trials []sweeps.Trial, file string, stderr io.Writer) error {
	err := report.CheckOutput(ctx, store, m, trials)
	var taken *report.OutputTakenError
	if errors.As(err, &taken) && t.replace {
		fmt.Fprintf(stderr, "%s: -replace: its tables replace those of manifest %q at %s\n", file, taken.Manifest, taken.Output)
		err = report.ReleaseOutput(ctx, store, m)
	}
	if err != nil {
		if taken != nil && !t.replace {
			err = fmt.Errorf("%w; or run it with -replace", err)
		}
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
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
