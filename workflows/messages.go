package workflows

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/sfsweep/sfsweep/internal/probe"
	"github.com/sfsweep/sfsweep/internal/status"
)

// SweepInput starts a sweep, or continues it after continue-as-new (Trials set).
type SweepInput struct {
	SweepID     string `json:"sweep_id"`
	ManifestKey string `json:"manifest_key"` // the manifest's key in the object store
	Window      int    `json:"window"`       // trials in flight; the commands send DefaultWindow or DefaultLocalWindow
	// HeartbeatTimeout of the Train activity; zero: DefaultHeartbeatTimeout.
	HeartbeatTimeout time.Duration `json:"heartbeat_timeout,omitempty"`
	// Retry bounds the retries of each trial's training; zero fields: RetryTransient's.
	Retry TrainRetry `json:"retry,omitzero"`
	// StallTimeout of the Train activity; zero: DefaultStallTimeout.
	StallTimeout time.Duration `json:"stall_timeout,omitempty"`
	// MaxDecisions bounds a search's decisions in one run, past which it continues as
	// new; zero: DefaultMaxDecisions.
	MaxDecisions int `json:"max_decisions,omitempty"`

	// State carried across continue-as-new.
	Planned bool `json:"planned,omitempty"`
	// The plan: in the store (PlanPrefix, PlanPageSize trials a page) or, for sweeps
	// planned before plans were stored, inline in Trials.
	PlanPrefix   string        `json:"plan_prefix,omitempty"`
	PlanPageSize int           `json:"plan_page_size,omitempty"`
	Trials       []TrialRef    `json:"trials,omitempty"`
	Next         int           `json:"next,omitempty"`
	Progress     SweepProgress `json:"progress"`
	// Search is set for a manifest that runs as a search (sweeps.Manifest.Searched); its
	// decisions so far.
	Search *SearchCursor `json:"search,omitempty"`
}

// SearchCursor is a search's place, carried across continue-as-new: the decisions made
// (the length of its log in the store). A run continues as new only once none of its
// segments is running. A run that replays the log continues as new between two logged
// decisions: Replay is set, Await are the events the next logged decision was made with,
// and Ended the segments that ended since the last decision made (Await among them).
type SearchCursor struct {
	Seq    int            `json:"seq"`
	Replay bool           `json:"replay,omitempty"`
	Await  []SegmentEvent `json:"await,omitempty"`
	Ended  []SegmentEvent `json:"ended,omitempty"`
}

// DecideInput asks the Decide activity for decision Seq of a search: it applies Events
// (segments ended since decision Seq−1), then picks at most MaxJobs segments to run. A
// decision already in the store's log is returned as it was made.
type DecideInput struct {
	SweepID     string         `json:"sweep_id"`
	ManifestKey string         `json:"manifest_key"`
	Seq         int            `json:"seq"`
	Events      []SegmentEvent `json:"events,omitempty"`
	MaxJobs     int            `json:"max_jobs"`
}

// SegmentEvent says that a configuration's segment ended: every trial of it trained to
// Until, or ended before (diverged, failed). The Decide activity reads the outcomes from
// the store.
type SegmentEvent struct {
	Candidate int `json:"candidate"`
	Until     int `json:"until"`
}

// SegmentJob is a segment to run: the trials (one per seed) of configuration Candidate,
// trained to Until (the run's end: probes too).
type SegmentJob struct {
	Candidate int        `json:"candidate"`
	Until     int        `json:"until"`
	Trials    []TrialRef `json:"trials"`
	Final     bool       `json:"final,omitempty"` // Until is the end of the run
}

// DecideOutput is a decision: the segments to start, and whether the search is over.
type DecideOutput struct {
	Jobs []SegmentJob `json:"jobs,omitempty"`
	Done bool         `json:"done,omitempty"`
	// The configurations so far by status (search.Status), for progress.
	Counts map[string]int `json:"counts,omitempty"`
	// Replay is set when the next decision is in the log already (a search run again):
	// Await are the segment events it was made with, which the workflow waits for and
	// passes, so that the decisions are made again in the order they were first made,
	// whatever order the replayed segments end in.
	Replay bool           `json:"replay,omitempty"`
	Await  []SegmentEvent `json:"await,omitempty"`
}

// TrialRef is one trial of a sweep as the plan gives it.
type TrialRef struct {
	ID   string
	Done bool // a result exists: never recomputed
	// Queue is the task queue of the trial's training and probes: TrainQueue of its
	// backend's device ("": QueueGPU, as planned before routing by device).
	Queue string
	// Probes are the trial's probes as sweeps.Manifest.ProbesFor resolved them. Plans
	// made before probes were resolved leave the At lists empty, for every checkpoint the
	// trial kept (probe.At).
	Probes probe.Set
}

// trialRefJSON is a TrialRef's form in plans and histories: the probes as flat fields,
// under the names recorded plans use.
type trialRefJSON struct {
	ID    string `json:"id"`
	Done  bool   `json:"done,omitempty"`
	Queue string `json:"queue,omitempty"`
	// The decay probe (DecaySteps 0: none).
	DecayAt      []int   `json:"decay_at,omitempty"`
	DecaySteps   int     `json:"decay_steps,omitempty"`
	DecayLR      float64 `json:"decay_lr,omitempty"`
	DecayIterate string  `json:"decay_iterate,omitempty"`
	DecayShape   string  `json:"decay_shape,omitempty"`
	// The LR-decay branch (LRDecayFrac 0: none).
	LRDecayAt   []int   `json:"branch_at,omitempty"`
	LRDecayFrac float64 `json:"branch_frac,omitempty"`
	// The checkpoint interpolation (nil: none).
	Interp *probe.Interpolation `json:"interp,omitempty"`
}

// MarshalJSON writes r in the form of recorded plans.
func (r TrialRef) MarshalJSON() ([]byte, error) {
	j := trialRefJSON{ID: r.ID, Done: r.Done, Queue: r.Queue, Interp: r.Probes.Interpolate}
	if d := r.Probes.Decay; d != nil {
		j.DecayAt, j.DecaySteps, j.DecayLR, j.DecayIterate, j.DecayShape = d.At, d.Steps, d.PeakLR, d.Iterate, d.Shape
	}
	if b := r.Probes.LRDecay; b != nil {
		j.LRDecayAt, j.LRDecayFrac = b.At, b.Frac
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads r from the form of recorded plans.
func (r *TrialRef) UnmarshalJSON(b []byte) error {
	var j trialRefJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = TrialRef{ID: j.ID, Done: j.Done, Queue: j.Queue, Probes: probe.Set{Interpolate: j.Interp}}
	if j.DecaySteps > 0 {
		r.Probes.Decay = &probe.Decay{At: j.DecayAt, Steps: j.DecaySteps, PeakLR: j.DecayLR, Iterate: j.DecayIterate, Shape: j.DecayShape}
	}
	if j.LRDecayFrac > 0 {
		r.Probes.LRDecay = &probe.LRDecay{At: j.LRDecayAt, Frac: j.LRDecayFrac}
	}
	return nil
}

// PlanInput is the Plan activity's input: it reads and expands the manifest, writes each
// missing trial's config to the store and says which results exist (PlanOutput).
type PlanInput struct {
	SweepID     string `json:"sweep_id"`
	ManifestKey string `json:"manifest_key"`
	// Paged asks for the plan in the store, in pages of PlanPageSize trials, rather than
	// inline: a workflow's input and an activity's result are payloads Temporal bounds
	// (2 MB), which an inline plan of some 30,000 trials would exceed.
	Paged bool `json:"paged,omitempty"`
}

// PlanOutput is the Plan activity's result: the plan, inline or in the store (Paged).
type PlanOutput struct {
	Trials []TrialRef `json:"trials,omitempty"` // inline (not Paged)
	// Paged: page n (0, 1, ...) of the plan is the object PlanPage(Prefix, n), PageSize
	// trials but the last.
	Prefix   string `json:"prefix,omitempty"`
	PageSize int    `json:"page_size,omitempty"`
	Total    int    `json:"total,omitempty"`
	Skipped  int    `json:"skipped,omitempty"` // trials whose result exists
	// Search: the manifest runs as a search, decided by the Decide activity; no plan.
	Search bool `json:"search,omitempty"`
}

// PlanPage is the key of page n of the stored plan under prefix.
func PlanPage(prefix string, n int) string { return fmt.Sprintf("%s/page-%06d.json", prefix, n) }

// ReadPlanInput asks the ReadPlan activity for page Page of a stored plan; it returns
// []TrialRef.
type ReadPlanInput struct {
	Prefix string `json:"prefix"`
	Page   int    `json:"page"`
}

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
	// Engines counts the trials trained in this sweep by the arithmetic of their engine;
	// more than one key means cells of the tables may differ in their last digits.
	Engines map[string]int `json:"engines,omitempty"`
	// Stopped counts the trials a search's early stopping ended at a rung; Configs, a
	// search's configurations by status.
	Stopped int            `json:"stopped,omitempty"`
	Configs map[string]int `json:"configs,omitempty"`
	// Failures are the latest of the trials that failed (at most MaxFailuresShown), with
	// why, so that status shows them once their workflows are gone.
	Failures []TrialFailure `json:"failures,omitempty"`
}

// TrialFailure is a failed trial and why it failed.
type TrialFailure struct {
	TrialID string `json:"trial_id"`
	Reason  string `json:"reason"`
}

// MaxFailuresShown bounds SweepProgress.Failures.
const MaxFailuresShown = 20

// failed counts trial id failed, for reason.
func (p *SweepProgress) failed(id, reason string) {
	p.Failed++
	p.Failures = append(p.Failures, TrialFailure{TrialID: id, Reason: reason})
	if n := len(p.Failures) - MaxFailuresShown; n > 0 {
		p.Failures = append(p.Failures[:0], p.Failures[n:]...)
	}
}

// Done reports whether every trial has an outcome.
func (p SweepProgress) Done() bool {
	return p.Skipped+p.Completed+p.Diverged+p.Failed+p.Stopped == p.Total
}

// SweepResult is the Sweep workflow's result.
type SweepResult struct {
	Progress SweepProgress `json:"progress"`
}

// TablesWorkflowID is the ID of a sweep's Tables workflow.
func TablesWorkflowID(sweepID string) string { return sweepID + "/tables" }

// TrialWorkflowID is the ID of a trial's workflow within a sweep.
func TrialWorkflowID(sweepID, trialID string) string { return sweepID + "/trial-" + trialID }

// SegmentWorkflowID is the ID of the workflow that trains a trial of a search to step
// until.
func SegmentWorkflowID(sweepID, trialID string, until int) string {
	return fmt.Sprintf("%s/trial-%s-to-%d", sweepID, trialID, until)
}

// TablesScheduleID is the ID of a sweep's tables schedule: the safety net that rebuilds
// the tables periodically whatever became of the signals.
func TablesScheduleID(sweepID string) string { return sweepID + "/tables-schedule" }

// TrialInput is one trial of a sweep.
type TrialInput struct {
	SweepID string `json:"sweep_id"`
	// Until, if set, trains the trial to that step only (a search's rung): no probes
	// unless it is the end of the run.
	Until            int           `json:"until,omitempty"`
	ManifestKey      string        `json:"manifest_key"`
	Trial            TrialRef      `json:"trial"`
	HeartbeatTimeout time.Duration `json:"heartbeat_timeout,omitempty"` // 0: DefaultHeartbeatTimeout
	Retry            TrainRetry    `json:"retry,omitzero"`
	StallTimeout     time.Duration `json:"stall_timeout,omitempty"` // 0: DefaultStallTimeout
}

// TrainInput is the Train activity's input. The activity resumes from the newest valid
// checkpoint of the trial, so a retried attempt continues where the last one stopped.
type TrainInput struct {
	TrialID string `json:"trial_id"`
	Until   int    `json:"until,omitempty"` // as training.Options.Until
	// StallTimeout: an attempt whose compute makes no call for this long is abandoned as
	// stuck and retried; 0: DefaultStallTimeout.
	StallTimeout time.Duration `json:"stall_timeout,omitempty"`
}

// TrainOutput is the Train activity's result.
type TrainOutput struct {
	Status      status.Status `json:"status"`         // status.Completed or status.Diverged; "" paused at TrainInput.Until
	Step        int           `json:"step,omitempty"` // the step trained to
	DivergedAt  int           `json:"diverged_at,omitempty"`
	Checkpoints []int         `json:"checkpoints,omitempty"` // steps with a checkpoint kept
	// Arithmetic is that of the engine that trained the trial (backend.Info.Arithmetic).
	Arithmetic string `json:"arithmetic,omitempty"`
}

// TrainHeartbeat is the Train activity's heartbeat detail.
type TrainHeartbeat struct {
	Step int     `json:"step"`
	Loss float64 `json:"loss"`
	// Waiting says why the trial has not started training yet (waiting for GPU memory).
	Waiting string `json:"waiting,omitempty"`
	// GPU is the memory of the GPU the trial is admitted to, or waits for, as its worker
	// saw it at the heartbeat; nil off a worker that admits by memory.
	GPU *GPUMemory `json:"gpu,omitempty"`
	// Refused counts a program's refused metrics lines this attempt, and RefusedFirst is
	// the first, with why (docs/trainer.md).
	Refused      int    `json:"refused,omitempty"`
	RefusedFirst string `json:"refused_first,omitempty"`
}

// GPUMemory is a GPU's memory as the worker that trains on it admits trials to it, in bytes.
type GPUMemory struct {
	Name     string `json:"name"` // as the worker names it: "GPU 3"
	Total    int64  `json:"total"`
	Reserved int64  `json:"reserved"` // by the trials admitted
	Free     int64  `json:"free"`     // what further trials may reserve
	Trials   int    `json:"trials"`   // admitted
	Waiting  int    `json:"waiting"`  // waiting for memory
}

// DecayProbeInput is one decay probe of a trial, from its checkpoint at Step (the
// probe's At is left empty).
type DecayProbeInput struct {
	TrialID string `json:"trial_id"`
	Step    int    `json:"step"`
	probe.Decay
	StallTimeout time.Duration `json:"stall_timeout,omitempty"` // as TrainInput's
}

// LRDecayInput is one LR-decay branch of a trial, from its checkpoint at Step (the
// branch's At is left empty).
type LRDecayInput struct {
	TrialID string `json:"trial_id"`
	Step    int    `json:"step"`
	probe.LRDecay
	StallTimeout time.Duration `json:"stall_timeout,omitempty"` // as TrainInput's
}

// InterpolateInput is one segment of a trial's checkpoint interpolation: the plain one,
// or, Decayed, the one to the end of an LR-decay branch.
type InterpolateInput struct {
	TrialID string `json:"trial_id"`
	probe.Interpolation
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
	TrialID    string        `json:"trial_id"`
	Status     status.Status `json:"status"`         // status.Completed, status.Diverged or status.Failed; "" paused at TrialInput.Until
	Step       int           `json:"step,omitempty"` // the step trained to
	DivergedAt int           `json:"diverged_at,omitempty"`
	Error      string        `json:"error,omitempty"`
	Probes     int           `json:"probes,omitempty"`
	Arithmetic string        `json:"arithmetic,omitempty"` // as TrainOutput's
}

// TablesInput is a sweep's Tables workflow, or its continuation.
type TablesInput struct {
	SweepID     string        `json:"sweep_id"`
	ManifestKey string        `json:"manifest_key"`
	Debounce    time.Duration `json:"debounce"` // quiet time after a signal before building; 0: DefaultDebounce
	// MaxWait bounds how long landed results wait for a build while new ones keep coming
	// sooner than Debounce (a fast sweep); 0: DefaultTablesMaxWait.
	MaxWait time.Duration `json:"max_wait,omitempty"`
	State   TablesState   `json:"state"`
}

// TablesState is what the Tables workflow has done (QueryTablesStatus).
type TablesState struct {
	Builds   int  `json:"builds"`   // BuildTables activities run
	Signals  int  `json:"signals"`  // results signalled
	Pending  bool `json:"pending"`  // results landed since the last build
	Finished bool `json:"finished"` // the sweep signalled it is done
}

// BuildTablesInput is the BuildTables activity's input, and RegenerateTables'.
type BuildTablesInput struct {
	SweepID     string `json:"sweep_id"`
	ManifestKey string `json:"manifest_key"`
}

// RetireInput names a sweep and its schedule (the RetireSchedule activity's input).
type RetireInput struct {
	SweepID    string `json:"sweep_id"`
	ScheduleID string `json:"schedule_id"`
}
