package program

import (
	"context"
	"time"
)

// Attempt is one run of a program.
type Attempt struct {
	Argv []string
	// Env is the SFSWEEP_* variables and the trainer's env. Run adds only PATH, USER,
	// LANG, LC_* and TZ from its own environment, those Pass names, HOME (Home), and
	// PYTHONUNBUFFERED=1: the worker's credentials never reach the program, neither its
	// variables nor the files under its own HOME.
	Env map[string]string
	// Pass are the variables of the worker's environment the program is given besides,
	// by name or prefix* (Spec.EnvPass): never SFSWEEP_* or AWS_*; Env overrides them.
	Pass []string
	// Home is the program's HOME, unless its Env sets one; "" is Dir.
	Home string
	// Dir is the run directory, the program's working directory; created if missing.
	Dir string
	// Metrics is the file the program appends its metrics lines to, read from its start;
	// created empty if missing. Each attempt gets a fresh one.
	Metrics string
	// Until, if > 0, is the rung: Run ends the program (Status Stopped) once a line with
	// step >= Until and a validation loss has arrived and a sync that began after it has
	// succeeded, so that the checkpoint the program wrote after that line is stored.
	Until int
	// Stall ends the program (Status Stalled) when no metrics line is accepted for this
	// long, counted from the start; 0: never.
	Stall time.Duration
	// Grace is the time from SIGTERM to SIGKILL when ending the program; 0: DefaultGrace.
	Grace time.Duration
	// Poll is how often the metrics file is read and Sync called; 0: DefaultPoll.
	Poll time.Duration
	// OnMetric, if set, gets each accepted line, in order.
	OnMetric func(Metric)
	// OnRefused, if set, gets each refused line as Outcome.RefusedSample writes it, with
	// the count so far.
	OnRefused func(n int, line string)
	// Sync, if set, records what the lines read so far say (the trial's curves). It is
	// called every Poll and once after the process has ended, each time after the metrics
	// file has been read to its end.
	Sync func(ctx context.Context) error
	// Mirror, if set, is the program's checkpoint directory and its store prefix, pushed
	// every Poll and once after the process has ended: the directory is walked, the metrics
	// file read and Sync called, and only then are the files found uploaded. So a
	// checkpoint is never in the store before the lines the program wrote before it are
	// recorded, and a run resumed from it has no gap in its curves.
	//
	// Errors of a sync (Sync's or Mirror's) while the program runs are kept in
	// Outcome.SyncErrors; the final one is Run's error. Neither is called after a cancel:
	// the attempt may already be running elsewhere.
	Mirror *Mirror
	// LogDir gets the program's output, in the files stdout and stderr.
	LogDir string
}

// Defaults of an Attempt's durations, those of docs/trainer.md.
const (
	DefaultGrace = 10 * time.Second
	DefaultPoll  = time.Second
)

// Status is how an attempt ended.
type Status string

// The statuses of an attempt. An attempt whose program exits 0 by itself after the rung's
// line is Completed, like one that ran to the end: the caller tells them apart by
// Outcome.Last.Step.
const (
	Completed Status = "completed" // exit 0, with a validation loss in some line
	Diverged  Status = "diverged"  // exit 3, or a non-finite train or validation loss
	Invalid   Status = "invalid"   // exit 2: the config is invalid; not to be retried
	Failed    Status = "failed"    // any other exit or a signal; or exit 0 without a validation loss
	Stalled   Status = "stalled"   // no metrics line for Attempt.Stall: ended
	Stopped   Status = "stopped"   // reached Attempt.Until: ended
	Canceled  Status = "canceled"  // the context was canceled: ended
)

// Outcome is what an attempt came to.
type Outcome struct {
	Status        Status
	ExitCode      int      // -1 for a signal, or when the program never started
	Signal        string   // the signal that ended it, if one did
	DivergedAt    int      // the step of the first non-finite loss, or the last step for exit 3
	Last          Metric   // the last accepted line
	Lines         int      // accepted lines
	Refused       int      // refused lines
	RefusedSample []string // the first few refused lines, with their reasons, truncated
	SyncErrors    []string // the first few errors of Sync while the program ran
	StderrTail    []string // the last lines of stderr
	Reason        string   // one line, for any status but Completed
}

// Bounds of what an Outcome keeps.
const (
	refusedSample  = 5
	syncErrorsKept = 5
	stderrLines    = 20
	stderrLineLen  = 300
	maxMetricsLine = 1 << 20
)
