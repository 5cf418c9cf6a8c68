package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
)

// Task queues.
const (
	// QueueCPU is the task queue of the workflows, planning and tables.
	QueueCPU = "cpu"
	// QueueGPU is the one training queue of sweeps planned before trials were routed by
	// device (their TrialRef has no Queue): training workers still serve it.
	QueueGPU = "gpu"
)

// TrainQueue is the task queue of the training and probe activities of trials whose
// backend computes on device ("cpu", "cuda"): only a worker that carries a backend of
// that device polls it, so a trial never lands on a worker that cannot run it, and one
// that no worker serves waits.
func TrainQueue(device string) string { return "train-" + device }

// TrainerQueue is the task queue of the trials of program trainer name at identity on
// device: only a worker that runs that trainer at that identity polls it (its registry's,
// or sfsweep run's manifest's), so a trial never lands on a worker without its trainer,
// a trial waits for one that has it, and workers of two registries (a rolling update)
// each take the trials of their own. The identity is hashed to keep the name short.
func TrainerQueue(device, name, identity string) string {
	sum := sha256.Sum256([]byte(identity))
	return TrainQueue(device) + trainerQueueSep + name + "@" + hex.EncodeToString(sum[:6])
}

const trainerQueueSep = "/trainer/"

// GPUsDevice is the device of a TrainerQueue whose trials take n GPUs of one node
// whole: device itself for one, "cuda-x4" for four. Only a worker that owns n GPUs and runs
// the trainer with a launcher polls it.
func GPUsDevice(device string, n int) string {
	if n <= 1 {
		return device
	}
	return device + "-x" + strconv.Itoa(n)
}

// QueueParts reads a training task queue: its device, and for a TrainerQueue its
// trainer's name ("" for a device's own queue).
func QueueParts(queue string) (device, trainer string) {
	rest, _ := strings.CutPrefix(queue, TrainQueue(""))
	device, t, _ := strings.Cut(rest, trainerQueueSep)
	trainer, _, _ = strings.Cut(t, "@")
	return device, trainer
}

// Activity names, as the activities package registers them.
const (
	// ActivityPlan reads and expands a sweep's manifest (PlanInput, PlanOutput).
	ActivityPlan = "Plan"
	// ActivityReadPlan reads one page of a stored plan (ReadPlanInput, []TrialRef).
	ActivityReadPlan = "ReadPlan"
	// ActivityTrain trains one trial (TrainInput, TrainOutput).
	ActivityTrain = "Train"
	// ActivityDecayProbe runs one decay probe from a trial's checkpoint (DecayProbeInput).
	ActivityDecayProbe = "DecayProbe"
	// ActivityLRDecay runs one LR-decay branch from a trial's checkpoint (LRDecayInput).
	// Its registered name is the one recorded in the histories of running sweeps.
	ActivityLRDecay = "DecayBranch"
	// ActivityInterpolate runs one checkpoint interpolation of a trial (InterpolateInput).
	ActivityInterpolate = "Interpolate"
	// ActivityDecide applies the results of a search's segments and decides what trains
	// next (DecideInput, DecideOutput).
	ActivityDecide = "Decide"
	// ActivityRecordFailed marks a trial failed in the store (RecordFailedInput).
	ActivityRecordFailed = "RecordFailed"
	// ActivityNotifyTables signals a sweep's Tables workflow, starting it if needed
	// (NotifyInput).
	ActivityNotifyTables = "NotifyTables"
	// ActivityBuildTables rebuilds every table of a sweep (BuildTablesInput).
	ActivityBuildTables = "BuildTables"
	// ActivityRetireSchedule deletes a sweep's tables schedule once the sweep has ended
	// (RetireInput).
	ActivityRetireSchedule = "RetireSchedule"
)

// Signal and query names.
const (
	// SignalCancel tells Sweep to stop starting trials and cancel the running ones.
	SignalCancel = "cancel"
	// SignalResult tells Tables that a trial result landed (payload: the trial ID).
	SignalResult = "result"
	// SignalSweepDone tells Tables that the sweep finished: build once more and end.
	SignalSweepDone = "sweep-done"
	// QueryProgress asks Sweep for its SweepProgress.
	QueryProgress = "progress"
	// QueryTablesStatus asks Tables for its TablesState.
	QueryTablesStatus = "tables-state"
)

// Change IDs of workflow.GetVersion: each marks the runs started after a change, so that
// runs started before it replay as they ran.
const (
	// versionPlanInStore marks the Sweep runs that keep their plan in the store; runs
	// started before it carry the plan inline.
	versionPlanInStore = "plan-in-store"
	// versionTablesMaxWait marks the Tables runs whose debounce is bounded by MaxWait; runs
	// started before it debounce without a bound.
	versionTablesMaxWait = "tables-max-wait"
	// versionTablesDoneBeforeCAN marks the Tables runs that, about to continue as new, take
	// the sweep's end signalled during their last build, build once more and end; runs before
	// it lost that signal to continue-as-new and waited for another that never came.
	versionTablesDoneBeforeCAN = "tables-done-before-can"
	// versionSearchReplayWinds marks the searching Sweep runs that, replaying a long log,
	// continue as new past their bound on decisions too; runs started before it replay the log
	// to its end first.
	versionSearchReplayWinds = "search-replay-winds"
)

// ErrorInvalidConfig is the error type of a trial whose configuration is invalid: never
// retried.
const ErrorInvalidConfig = "InvalidConfig"

// Defaults of the inputs' fields, each named once.
const (
	// DefaultWindow is the trials a sweep keeps in flight (queued or training) unless told
	// otherwise: sfsweep submit's -window and SweepInput.Window's default. A cluster's
	// workers take as many trials as they have slots, so the window is what bounds them.
	DefaultWindow = 8
	// DefaultLocalWindow is sfsweep run's -window: its one process trains -slots trials
	// (one by default) on every core of this machine, so a second trial in flight is
	// ready the moment the first ends; more would only wait for the same cores.
	DefaultLocalWindow = 2
	// unsetWindow is the window of a sweep whose input sets none. Both commands always
	// set one, but sweeps started before they did could leave it 0, and a sweep replays
	// with the window it ran with: so this stays 4, not DefaultWindow.
	unsetWindow = 4
	// DefaultHeartbeatTimeout is the heartbeat timeout of the Train activity and the
	// probes when the input sets none (SweepInput.HeartbeatTimeout,
	// TrialInput.HeartbeatTimeout): a lost worker's trial is retried after it.
	DefaultHeartbeatTimeout = 2 * time.Minute
	// DefaultStallTimeout is how long a training attempt may go without a forward or
	// backward pass returning before it is abandoned as stuck (a hung GPU): far above a
	// healthy attempt's longest pause (a checkpoint of a 124M-parameter model written to
	// S3).
	DefaultStallTimeout = 15 * time.Minute
	// DefaultDebounce is TablesInput.Debounce's default: the quiet time after a result
	// before the tables are built.
	DefaultDebounce = 2 * time.Second
	// DefaultTablesMaxWait is TablesInput.MaxWait's default.
	DefaultTablesMaxWait = time.Minute
)

// PlanPageSize is the number of trials in a page of a stored plan (a page is about 60 kB).
const PlanPageSize = 1000

// Timeouts of the activities, named once.
const (
	// cpuStartToClose bounds one attempt of the cpu activities of Sweep (Plan, ReadPlan,
	// the last NotifyTables), Tables and RegenerateTables (BuildTables, RetireSchedule).
	cpuStartToClose = 10 * time.Minute
	// cpuHeartbeat is the heartbeat timeout of the long cpu activities (Plan,
	// BuildTables), which heartbeat every second: a worker lost in the middle of one is
	// noticed at once rather than at the end of the start-to-close limit. The short ones
	// finish well within it.
	cpuHeartbeat = 30 * time.Second
	// quickStartToClose bounds one attempt of a trial's bookkeeping activities
	// (RecordFailed, NotifyTables).
	quickStartToClose = time.Minute
	// trainStartToClose bounds one attempt of a trial's training or probe: a week, so
	// the heartbeat and stall timeouts, not this, notice a lost or stuck attempt.
	trainStartToClose = 7 * 24 * time.Hour
)

// Bounds of one workflow run before it continues as new. Variables, so tests can lower
// them.
var (
	// maxChildrenPerRun bounds the child workflows one run of Sweep starts before it
	// continues as new, keeping each run's history far below Temporal's limits (51,200
	// events): a child costs about 6 parent events.
	maxChildrenPerRun = 500
	// maxBuildsPerRun bounds the builds of one run of Tables before it continues as new.
	maxBuildsPerRun = 200
)

// Retry policies, named once.
var (
	// RetryTransient retries a failed activity with exponential backoff, unattended: a lost
	// worker, a GPU error, an object-store timeout. An invalid config is not retried.
	RetryTransient = &temporal.RetryPolicy{
		InitialInterval:        time.Second,
		BackoffCoefficient:     2,
		MaximumInterval:        time.Minute,
		MaximumAttempts:        8,
		NonRetryableErrorTypes: []string{ErrorInvalidConfig},
	}
	// RetryQuick is for short bookkeeping activities.
	RetryQuick = &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second, MaximumAttempts: 10}
)

// TrainRetry bounds the retries of a trial's Train activity: attempt k+1 starts
// min(InitialInterval·2^(k−1), MaximumInterval) after attempt k failed, and a trial whose
// MaxAttempts attempts all failed is recorded failed. A zero field keeps RetryTransient's value
// (8 attempts, 1 s, 1 min: about 2 min of backoff in all).
type TrainRetry struct {
	MaxAttempts     int           `json:"max_attempts,omitempty"`
	InitialInterval time.Duration `json:"initial_interval,omitempty"`
	MaximumInterval time.Duration `json:"maximum_interval,omitempty"`
}

// Policy is RetryTransient with the fields of r that are set.
func (r TrainRetry) Policy() *temporal.RetryPolicy {
	p := *RetryTransient
	if r.MaxAttempts > 0 {
		p.MaximumAttempts = int32(r.MaxAttempts)
	}
	if r.InitialInterval > 0 {
		p.InitialInterval = r.InitialInterval
	}
	if r.MaximumInterval > 0 {
		p.MaximumInterval = r.MaximumInterval
	}
	return &p
}
