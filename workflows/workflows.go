// Package workflows holds sfsweep's Temporal workflows: Sweep fans a manifest out into one
// Trial child workflow per trial, with a bounded window in flight and continue-as-new
// before the history grows large; Trial trains, probes and reports; Tables rebuilds the
// sweep's tables, debounced, whenever a trial result lands.
//
// Orchestration only: no I/O, no clock, no randomness, no map iteration, so every
// workflow replays deterministically. The work is done by activities, referred to here by
// name (the activities package registers them under these names), so this package does
// not import training or the object store.
package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Task queues.
const (
	QueueCPU = "cpu" // workflows, planning, tables
	// QueueGPU is the one training queue of sweeps planned before trials were routed by
	// device (their TrialRef has no Queue): training workers still serve it.
	QueueGPU = "gpu"
)

// TrainQueue is the task queue of the training and probe activities of trials whose
// backend computes on device ("cpu", "cuda"): only a worker that carries a backend of
// that device polls it, so a trial never lands on a worker that cannot run it, and one
// that no worker serves waits.
func TrainQueue(device string) string { return "train-" + device }

// Activity names, as the activities package registers them.
const (
	ActivityPlan         = "Plan"
	ActivityReadPlan     = "ReadPlan"
	ActivityTrain        = "Train"
	ActivityDecayProbe   = "DecayProbe"
	ActivityDecayBranch  = "DecayBranch"
	ActivityInterpolate  = "Interpolate"
	ActivityRecordFailed = "RecordFailed"
	ActivityNotifyTables = "NotifyTables"
	ActivityBuildTables  = "BuildTables"
)

// Signal and query names.
const (
	SignalCancel      = "cancel"       // Sweep: stop starting trials and cancel the running ones
	SignalResult      = "result"       // Tables: a trial result landed (payload: trial ID)
	SignalSweepDone   = "sweep-done"   // Tables: the sweep finished; build once more and end
	QueryProgress     = "progress"     // Sweep: SweepProgress
	QueryTablesStatus = "tables-state" // Tables: TablesState
)

// ErrorInvalidConfig is the error type of a trial whose configuration is invalid: never
// retried.
const ErrorInvalidConfig = "InvalidConfig"

// cpuHeartbeat is the heartbeat timeout of the long cpu activities (Plan, BuildTables),
// which heartbeat every second: a worker lost in the middle of one is noticed at once
// rather than at the end of the start-to-close limit. The short ones finish well within it.
const cpuHeartbeat = 30 * time.Second

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

// SweepInput starts a sweep, or continues it after continue-as-new (Trials set).
type SweepInput struct {
	SweepID     string `json:"sweep_id"`
	ManifestKey string `json:"manifest_key"` // the manifest's key in the object store
	Window      int    `json:"window"`       // trials in flight; 0: 4
	// HeartbeatTimeout of the Train activity; zero: the default of TrialInput.
	HeartbeatTimeout time.Duration `json:"heartbeat_timeout,omitempty"`
	// Retry bounds the retries of each trial's training; zero fields: RetryTransient's.
	Retry TrainRetry `json:"retry,omitzero"`
	// StallTimeout of the Train activity; zero: DefaultStallTimeout.
	StallTimeout time.Duration `json:"stall_timeout,omitempty"`

	// State carried across continue-as-new.
	Planned bool `json:"planned,omitempty"`
	// The plan: in the store (PlanPrefix, PlanPageSize trials a page) or, for sweeps
	// planned before plans were stored, inline in Trials.
	PlanPrefix   string        `json:"plan_prefix,omitempty"`
	PlanPageSize int           `json:"plan_page_size,omitempty"`
	Trials       []TrialRef    `json:"trials,omitempty"`
	Next         int           `json:"next,omitempty"`
	Progress     SweepProgress `json:"progress"`
}

// TrialRef is one trial of a sweep as the plan gives it.
type TrialRef struct {
	ID   string `json:"id"`
	Done bool   `json:"done,omitempty"` // a result exists: never recomputed
	// Queue is the task queue of the trial's training and probes: TrainQueue of its
	// backend's device ("": QueueGPU, as planned before routing by device).
	Queue string `json:"queue,omitempty"`
	// Probe steps: the checkpoints the decay probe runs from.
	DecayAt    []int   `json:"decay_at,omitempty"`
	DecaySteps int     `json:"decay_steps,omitempty"`
	DecayLR    float64 `json:"decay_lr,omitempty"`
	// DecayIterate is the iterate the decay probe starts from; "": the evaluated one.
	DecayIterate string `json:"decay_iterate,omitempty"`
	// The LR-decay branch (AdamW trials): the checkpoints it runs from (every one if
	// empty) and the fraction of the run before it over which it decays; 0: none.
	BranchAt   []int   `json:"branch_at,omitempty"`
	BranchFrac float64 `json:"branch_frac,omitempty"`
	// Checkpoint interpolation (nil: none).
	Interp *InterpolateRef `json:"interp,omitempty"`
}

// InterpolateRef is a trial's checkpoint interpolation: between its checkpoints at From
// and To, at Points values of α; Decayed adds the segment to the end of an LR-decay branch
// from From (AdamW trials).
type InterpolateRef struct {
	From    int  `json:"from"`
	To      int  `json:"to"`
	Points  int  `json:"points"`
	Decayed bool `json:"decayed,omitempty"`
}

// PlanInput / PlanOutput are the Plan activity's: it reads and expands the manifest,
// writes each missing trial's config to the store and says which results exist.
type PlanInput struct {
	SweepID     string `json:"sweep_id"`
	ManifestKey string `json:"manifest_key"`
	// Paged asks for the plan in the store, in pages of PlanPageSize trials, rather than
	// inline: a workflow's input and an activity's result are payloads Temporal bounds
	// (2 MB), which an inline plan of some 30,000 trials would exceed.
	Paged bool `json:"paged,omitempty"`
}

type PlanOutput struct {
	Trials []TrialRef `json:"trials,omitempty"` // inline (not Paged)
	// Paged: page n (0, 1, ...) of the plan is the object PlanPage(Prefix, n), PageSize
	// trials but the last.
	Prefix   string `json:"prefix,omitempty"`
	PageSize int    `json:"page_size,omitempty"`
	Total    int    `json:"total,omitempty"`
	Skipped  int    `json:"skipped,omitempty"` // trials whose result exists
}

// PlanPageSize is the number of trials in a page of a stored plan (a page is about 60 kB).
const PlanPageSize = 1000

// PlanPage is the key of page n of the stored plan under prefix.
func PlanPage(prefix string, n int) string { return fmt.Sprintf("%s/page-%06d.json", prefix, n) }

// ReadPlanInput asks the ReadPlan activity for page Page of a stored plan; it returns
// []TrialRef.
type ReadPlanInput struct {
	Prefix string `json:"prefix"`
	Page   int    `json:"page"`
}

// versionPlanInStore marks the Sweep runs that keep their plan in the store; runs started
// before it carry the plan inline and replay as they ran.
const versionPlanInStore = "plan-in-store"

// SweepProgress is the answer to QueryProgress.
type SweepProgress struct {
	Total     int      `json:"total"`
	Skipped   int      `json:"skipped"` // results that existed before the sweep started
	Completed int      `json:"completed"`
	Diverged  int      `json:"diverged"`
	Failed    int      `json:"failed"`
	Running   []string `json:"running"`
	Canceled  bool     `json:"canceled,omitempty"`
	Runs      int      `json:"runs"` // workflow runs so far (continue-as-new)
}

// Done reports whether every trial has an outcome.
func (p SweepProgress) Done() bool {
	return p.Skipped+p.Completed+p.Diverged+p.Failed == p.Total
}

// SweepResult is the Sweep workflow's result.
type SweepResult struct {
	Progress SweepProgress `json:"progress"`
}

// maxChildrenPerRun bounds the child workflows one run of Sweep starts before it continues
// as new, keeping each run's history far below Temporal's limits (51,200 events): a child
// costs about 6 parent events.
var maxChildrenPerRun = 500

// TablesWorkflowID is the ID of a sweep's Tables workflow.
func TablesWorkflowID(sweepID string) string { return sweepID + "/tables" }

// TrialWorkflowID is the ID of a trial's workflow within a sweep.
func TrialWorkflowID(sweepID, trialID string) string { return sweepID + "/trial-" + trialID }

// Sweep runs every trial of a manifest that has no result yet.
func Sweep(ctx workflow.Context, in SweepInput) (SweepResult, error) {
	log := workflow.GetLogger(ctx)
	if in.Window <= 0 {
		in.Window = 4
	}
	p := &in.Progress
	p.Runs++
	p.Running = nil
	if err := workflow.SetQueryHandler(ctx, QueryProgress, func() (SweepProgress, error) { return *p, nil }); err != nil {
		return SweepResult{}, err
	}
	cpu := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: QueueCPU, StartToCloseTimeout: 10 * time.Minute, HeartbeatTimeout: cpuHeartbeat, RetryPolicy: RetryQuick,
	})
	if !in.Planned {
		paged := workflow.GetVersion(ctx, versionPlanInStore, workflow.DefaultVersion, 1) == 1
		var plan PlanOutput
		if err := workflow.ExecuteActivity(cpu, ActivityPlan, PlanInput{SweepID: in.SweepID, ManifestKey: in.ManifestKey, Paged: paged}).Get(ctx, &plan); err != nil {
			return SweepResult{}, fmt.Errorf("plan: %w", err)
		}
		in.Planned = true
		if paged {
			in.PlanPrefix, in.PlanPageSize = plan.Prefix, plan.PageSize
			p.Total, p.Skipped = plan.Total, plan.Skipped
		} else {
			in.Trials = plan.Trials
			p.Total = len(plan.Trials)
			for _, t := range plan.Trials {
				if t.Done {
					p.Skipped++
				}
			}
		}
		log.Info("planned", "trials", p.Total, "done", p.Skipped)
	}
	// trial i of the plan, reading the stored plan a page at a time
	var page []TrialRef
	pageNo := -1
	trialAt := func(i int) (TrialRef, error) {
		if in.PlanPrefix == "" {
			return in.Trials[i], nil
		}
		if n := i / in.PlanPageSize; n != pageNo {
			page = nil // decoding into the previous page would keep its fields that the new one omits
			if err := workflow.ExecuteActivity(cpu, ActivityReadPlan, ReadPlanInput{Prefix: in.PlanPrefix, Page: n}).Get(ctx, &page); err != nil {
				return TrialRef{}, fmt.Errorf("plan page %d: %w", n, err)
			}
			pageNo = n
		}
		if j := i % in.PlanPageSize; j < len(page) {
			return page[j], nil
		}
		return TrialRef{}, fmt.Errorf("plan page %d holds %d trials, trial %d of %d wanted", pageNo, len(page), i, p.Total)
	}

	childCtx, cancelChildren := workflow.WithCancel(ctx)
	canceled := false
	workflow.Go(ctx, func(ctx workflow.Context) {
		workflow.GetSignalChannel(ctx, SignalCancel).Receive(ctx, nil)
		canceled = true
		p.Canceled = true
		cancelChildren()
	})

	sel := workflow.NewSelector(ctx)
	inFlight, started := 0, 0
	for {
		// start trials up to the window, unless this run has started its share
		for !canceled && in.Next < p.Total && inFlight < in.Window && started < maxChildrenPerRun &&
			!workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			t, err := trialAt(in.Next)
			if err != nil {
				cancelChildren()
				return SweepResult{Progress: *p}, err
			}
			in.Next++
			if t.Done {
				continue
			}
			cctx := workflow.WithChildOptions(childCtx, workflow.ChildWorkflowOptions{
				WorkflowID: TrialWorkflowID(in.SweepID, t.ID),
				TaskQueue:  QueueCPU,
			})
			f := workflow.ExecuteChildWorkflow(cctx, Trial, TrialInput{SweepID: in.SweepID, ManifestKey: in.ManifestKey, Trial: t, HeartbeatTimeout: in.HeartbeatTimeout, Retry: in.Retry, StallTimeout: in.StallTimeout})
			inFlight++
			started++
			p.Running = append(p.Running, t.ID)
			id := t.ID
			sel.AddFuture(f, func(f workflow.Future) {
				inFlight--
				p.Running = remove(p.Running, id)
				var r TrialResult
				if err := f.Get(ctx, &r); err != nil {
					if !canceled {
						log.Error("trial workflow failed", "trial", id, "error", err)
					}
					p.Failed++
					return
				}
				switch r.Status {
				case StatusDiverged:
					p.Diverged++
				case StatusFailed:
					p.Failed++
				default:
					p.Completed++
				}
			})
		}
		if inFlight == 0 {
			break
		}
		sel.Select(ctx)
	}
	if canceled {
		return SweepResult{Progress: *p}, temporal.NewCanceledError("sweep canceled")
	}
	if in.Next < p.Total {
		// this run started its share: continue as new with the state, a fresh history
		return SweepResult{}, workflow.NewContinueAsNewError(ctx, Sweep, in)
	}
	// the last build of the tables
	if err := workflow.ExecuteActivity(cpu, ActivityNotifyTables, NotifyInput{SweepID: in.SweepID, ManifestKey: in.ManifestKey, Done: true}).Get(ctx, nil); err != nil {
		return SweepResult{Progress: *p}, fmt.Errorf("tables: %w", err)
	}
	return SweepResult{Progress: *p}, nil
}

func remove(s []string, v string) []string {
	for i, x := range s {
		if x == v {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}

// Trial outcomes.
const (
	StatusCompleted = "completed"
	StatusDiverged  = "diverged"
	StatusFailed    = "failed"
)

// TrialInput is one trial of a sweep.
type TrialInput struct {
	SweepID          string        `json:"sweep_id"`
	ManifestKey      string        `json:"manifest_key"`
	Trial            TrialRef      `json:"trial"`
	HeartbeatTimeout time.Duration `json:"heartbeat_timeout,omitempty"` // 0: 2 minutes
	Retry            TrainRetry    `json:"retry,omitzero"`
	StallTimeout     time.Duration `json:"stall_timeout,omitempty"` // 0: DefaultStallTimeout
}

// TrainInput / TrainOutput are the Train activity's. The activity resumes from the
// newest valid checkpoint of the trial, so a retried attempt continues where the last
// one stopped.
type TrainInput struct {
	TrialID string `json:"trial_id"`
	// StallTimeout: an attempt whose compute makes no call for this long is abandoned as
	// stuck and retried; 0: DefaultStallTimeout.
	StallTimeout time.Duration `json:"stall_timeout,omitempty"`
}

// DefaultStallTimeout is how long a training attempt may go without a forward or backward
// pass returning before it is abandoned as stuck (a hung GPU): far above a healthy
// attempt's longest pause (a checkpoint of a 124M-parameter model written to S3).
const DefaultStallTimeout = 15 * time.Minute

type TrainOutput struct {
	Status      string `json:"status"`
	DivergedAt  int    `json:"diverged_at,omitempty"`
	Checkpoints []int  `json:"checkpoints,omitempty"` // steps with a checkpoint kept
}

// TrainHeartbeat is the Train activity's heartbeat detail.
type TrainHeartbeat struct {
	Step int     `json:"step"`
	Loss float64 `json:"loss"`
}

// DecayProbeInput is one decay probe from a trial's checkpoint.
type DecayProbeInput struct {
	TrialID      string        `json:"trial_id"`
	Step         int           `json:"step"`
	Steps        int           `json:"steps"`
	PeakLR       float64       `json:"peak_lr"`
	Iterate      string        `json:"iterate,omitempty"`       // as TrialRef.DecayIterate
	StallTimeout time.Duration `json:"stall_timeout,omitempty"` // as TrainInput's
}

// DecayBranchInput is one LR-decay branch from an AdamW trial's checkpoint.
type DecayBranchInput struct {
	TrialID      string        `json:"trial_id"`
	Step         int           `json:"step"`
	Frac         float64       `json:"frac"`
	StallTimeout time.Duration `json:"stall_timeout,omitempty"` // as TrainInput's
}

// InterpolateInput is one checkpoint interpolation of a trial: plain, or to the end of
// an LR-decay branch (Decayed).
type InterpolateInput struct {
	TrialID      string        `json:"trial_id"`
	From         int           `json:"from"`
	To           int           `json:"to"`
	Points       int           `json:"points"`
	Decayed      bool          `json:"decayed,omitempty"`
	StallTimeout time.Duration `json:"stall_timeout,omitempty"` // as TrainInput's
}

// RecordFailedInput marks a trial failed in the store, so tables show it.
type RecordFailedInput struct {
	TrialID string `json:"trial_id"`
	Reason  string `json:"reason"`
}

// NotifyInput signals a sweep's Tables workflow, starting it if needed.
type NotifyInput struct {
	SweepID     string `json:"sweep_id"`
	ManifestKey string `json:"manifest_key"`
	TrialID     string `json:"trial_id,omitempty"`
	Done        bool   `json:"done,omitempty"` // the sweep finished
}

// TrialResult is the Trial workflow's result.
type TrialResult struct {
	TrialID    string `json:"trial_id"`
	Status     string `json:"status"`
	DivergedAt int    `json:"diverged_at,omitempty"`
	Error      string `json:"error,omitempty"`
	Probes     int    `json:"probes,omitempty"`
}

// Trial trains one trial on the training queue of its device, runs its probes (decay probes, LR-decay
// branches, checkpoint interpolation), and tells the Tables
// workflow that its result landed. A trial that fails after its retries is recorded as
// failed (and the workflow still completes, so the sweep goes on); a diverged one is a
// result.
func Trial(ctx workflow.Context, in TrialInput) (TrialResult, error) {
	hb := in.HeartbeatTimeout
	if hb <= 0 {
		hb = 2 * time.Minute
	}
	queue := in.Trial.Queue
	if queue == "" {
		queue = QueueGPU
	}
	// no schedule-to-start limit: a trial whose device no worker serves waits for one
	gpu := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: queue, StartToCloseTimeout: 7 * 24 * time.Hour, HeartbeatTimeout: hb, RetryPolicy: in.Retry.Policy(),
	})
	cpu := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: QueueCPU, StartToCloseTimeout: time.Minute, RetryPolicy: RetryQuick,
	})
	res := TrialResult{TrialID: in.Trial.ID}
	var out TrainOutput
	err := workflow.ExecuteActivity(gpu, ActivityTrain, TrainInput{TrialID: in.Trial.ID, StallTimeout: in.StallTimeout}).Get(ctx, &out)
	if err != nil {
		if temporal.IsCanceledError(err) || errors.Is(ctx.Err(), workflow.ErrCanceled) {
			return res, err
		}
		res.Status, res.Error = StatusFailed, err.Error()
		ferr := workflow.ExecuteActivity(cpu, ActivityRecordFailed, RecordFailedInput{TrialID: in.Trial.ID, Reason: res.Error}).Get(ctx, nil)
		if ferr != nil {
			return res, ferr
		}
	} else {
		res.Status, res.DivergedAt = out.Status, out.DivergedAt
	}
	// probes runs an activity from each checkpoint step of at (every checkpoint if empty)
	probes := func(name string, at []int, input func(step int) any) error {
		if len(at) == 0 {
			at = out.Checkpoints
		}
		futures := make([]workflow.Future, 0, len(at))
		for _, step := range at {
			futures = append(futures, workflow.ExecuteActivity(gpu, name, input(step)))
		}
		for _, f := range futures {
			if err := f.Get(ctx, nil); err != nil {
				return err
			}
			res.Probes++
		}
		return nil
	}
	if res.Status == StatusCompleted && in.Trial.DecaySteps > 0 {
		err := probes(ActivityDecayProbe, in.Trial.DecayAt, func(step int) any {
			return DecayProbeInput{TrialID: in.Trial.ID, Step: step, Steps: in.Trial.DecaySteps, PeakLR: in.Trial.DecayLR, Iterate: in.Trial.DecayIterate,
				StallTimeout: in.StallTimeout}
		})
		if err != nil {
			return res, fmt.Errorf("decay probe: %w", err)
		}
	}
	if res.Status == StatusCompleted && in.Trial.BranchFrac > 0 {
		err := probes(ActivityDecayBranch, in.Trial.BranchAt, func(step int) any {
			return DecayBranchInput{TrialID: in.Trial.ID, Step: step, Frac: in.Trial.BranchFrac, StallTimeout: in.StallTimeout}
		})
		if err != nil {
			return res, fmt.Errorf("LR-decay branch: %w", err)
		}
	}
	if ip := in.Trial.Interp; res.Status == StatusCompleted && ip != nil && ip.Points > 0 {
		kinds := []bool{false}
		if ip.Decayed {
			kinds = append(kinds, true)
		}
		futures := make([]workflow.Future, len(kinds))
		for i, decayed := range kinds {
			futures[i] = workflow.ExecuteActivity(gpu, ActivityInterpolate, InterpolateInput{
				TrialID: in.Trial.ID, From: ip.From, To: ip.To, Points: ip.Points, Decayed: decayed, StallTimeout: in.StallTimeout})
		}
		for _, f := range futures {
			if err := f.Get(ctx, nil); err != nil {
				return res, fmt.Errorf("interpolation: %w", err)
			}
			res.Probes++
		}
	}
	if err := workflow.ExecuteActivity(cpu, ActivityNotifyTables, NotifyInput{SweepID: in.SweepID, ManifestKey: in.ManifestKey, TrialID: in.Trial.ID}).Get(ctx, nil); err != nil {
		return res, fmt.Errorf("notify tables: %w", err)
	}
	return res, nil
}

// TablesInput is a sweep's Tables workflow, or its continuation.
type TablesInput struct {
	SweepID     string        `json:"sweep_id"`
	ManifestKey string        `json:"manifest_key"`
	Debounce    time.Duration `json:"debounce"` // quiet time after a signal before building; 0: 2 s
	// MaxWait bounds how long landed results wait for a build while new ones keep coming
	// sooner than Debounce (a fast sweep); 0: DefaultTablesMaxWait.
	MaxWait time.Duration `json:"max_wait,omitempty"`
	State   TablesState   `json:"state"`
}

// DefaultTablesMaxWait is TablesInput.MaxWait's default.
const DefaultTablesMaxWait = time.Minute

// versionTablesMaxWait marks the Tables runs whose debounce is bounded by MaxWait; runs
// started before it debounce without a bound.
const versionTablesMaxWait = "tables-max-wait"

// TablesState is what the Tables workflow has done (QueryTablesStatus).
type TablesState struct {
	Builds   int  `json:"builds"`   // BuildTables activities run
	Signals  int  `json:"signals"`  // results signalled
	Pending  bool `json:"pending"`  // results landed since the last build
	Finished bool `json:"finished"` // the sweep signalled it is done
}

// BuildTablesInput is the BuildTables activity's.
type BuildTablesInput struct {
	SweepID     string `json:"sweep_id"`
	ManifestKey string `json:"manifest_key"`
}

// maxBuildsPerRun bounds the builds of one run of Tables before it continues as new.
var maxBuildsPerRun = 200

// Tables rebuilds a sweep's tables whenever results land: each SignalResult marks them
// stale, and once no new signal has come for Debounce, or MaxWait after the first result
// not yet built, the BuildTables activity rebuilds every table. SignalSweepDone builds a
// last time and ends the workflow.
func Tables(ctx workflow.Context, in TablesInput) (TablesState, error) {
	if in.Debounce <= 0 {
		in.Debounce = 2 * time.Second
	}
	st := &in.State
	if err := workflow.SetQueryHandler(ctx, QueryTablesStatus, func() (TablesState, error) { return *st, nil }); err != nil {
		return *st, err
	}
	cpu := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: QueueCPU, StartToCloseTimeout: 10 * time.Minute, HeartbeatTimeout: cpuHeartbeat, RetryPolicy: RetryTransient,
	})
	results := workflow.GetSignalChannel(ctx, SignalResult)
	done := workflow.GetSignalChannel(ctx, SignalSweepDone)
	build := func() error {
		st.Pending = false
		st.Builds++
		return workflow.ExecuteActivity(cpu, ActivityBuildTables, BuildTablesInput{SweepID: in.SweepID, ManifestKey: in.ManifestKey}).Get(ctx, nil)
	}
	bounded := workflow.GetVersion(ctx, versionTablesMaxWait, workflow.DefaultVersion, 1) == 1
	if in.MaxWait <= 0 {
		in.MaxWait = DefaultTablesMaxWait
	}
	builds := 0
	for {
		// wait for a signal, unless results are pending from before a continue-as-new
		if !st.Pending {
			sel := workflow.NewSelector(ctx)
			sel.AddReceive(results, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); st.Signals++; st.Pending = true })
			sel.AddReceive(done, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); st.Finished = true })
			sel.Select(ctx)
		}
		// debounce: absorb signals until Debounce passes without one, or MaxWait in all
		deadline := workflow.Now(ctx).Add(in.MaxWait)
		for !st.Finished {
			wait := in.Debounce
			if bounded {
				left := deadline.Sub(workflow.Now(ctx))
				if left <= 0 {
					break
				}
				wait = min(wait, left)
			}
			timerCtx, cancelTimer := workflow.WithCancel(ctx)
			quiet := false
			sel := workflow.NewSelector(ctx)
			sel.AddFuture(workflow.NewTimer(timerCtx, wait), func(workflow.Future) { quiet = true })
			sel.AddReceive(results, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); st.Signals++; st.Pending = true })
			sel.AddReceive(done, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); st.Finished = true })
			sel.Select(ctx)
			cancelTimer()
			if quiet {
				break
			}
		}
		if st.Pending || st.Finished {
			if err := build(); err != nil {
				return *st, err
			}
			builds++
		}
		if st.Finished {
			// drain what came meanwhile: the last build already saw every result
			for results.ReceiveAsync(nil) {
				st.Signals++
			}
			return *st, nil
		}
		if builds >= maxBuildsPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			for results.ReceiveAsync(nil) {
				st.Signals++
				st.Pending = true
			}
			return *st, workflow.NewContinueAsNewError(ctx, Tables, in)
		}
	}
}

// ActivityRetireSchedule deletes a sweep's tables schedule once the sweep has ended.
const ActivityRetireSchedule = "RetireSchedule"

// TablesScheduleID is the ID of a sweep's tables schedule: the safety net that rebuilds
// the tables periodically whatever became of the signals.
func TablesScheduleID(sweepID string) string { return sweepID + "/tables-schedule" }

// RetireInput names a sweep and its schedule.
type RetireInput struct {
	SweepID    string `json:"sweep_id"`
	ScheduleID string `json:"schedule_id"`
}

// RegenerateTables is the action of a sweep's tables schedule: rebuild every table, then
// retire the schedule if the sweep has ended (its Tables workflow builds the last tables).
func RegenerateTables(ctx workflow.Context, in BuildTablesInput) error {
	cpu := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: QueueCPU, StartToCloseTimeout: 10 * time.Minute, HeartbeatTimeout: cpuHeartbeat, RetryPolicy: RetryTransient,
	})
	if err := workflow.ExecuteActivity(cpu, ActivityBuildTables, in).Get(ctx, nil); err != nil {
		return err
	}
	return workflow.ExecuteActivity(cpu, ActivityRetireSchedule, RetireInput{SweepID: in.SweepID, ScheduleID: TablesScheduleID(in.SweepID)}).Get(ctx, nil)
}
