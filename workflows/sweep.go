package workflows

import (
	"fmt"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/sfsweep/sfsweep/internal/status"
)

// Sweep runs every trial of a manifest that has no result yet: it plans the sweep once,
// then starts one Trial child workflow per trial, at most in.Window in flight, and
// continues as new once a run has started maxChildrenPerRun of them. SignalCancel stops
// it starting trials and cancels the running ones; QueryProgress answers its
// SweepProgress. Once every trial has an outcome it has the tables built a last time.
func Sweep(ctx workflow.Context, in SweepInput) (SweepResult, error) {
	return newSweep(ctx, in).run()
}

// sweep is one run of the Sweep workflow: its input, the state carried across
// continue-as-new, and the state of this run.
type sweep struct {
	ctx workflow.Context
	log log.Logger
	in  SweepInput     // with its defaults; continue-as-new carries it on
	p   *SweepProgress // &in.Progress: what QueryProgress answers
	cpu workflow.Context

	// page is the page of the stored plan read last, pageNo its number (-1: none).
	page   []TrialRef
	pageNo int

	// children is the context of the Trial workflows, canceled with cancelChildren when
	// SignalCancel comes (canceled).
	children       workflow.Context
	cancelChildren workflow.CancelFunc
	canceled       bool

	sel      workflow.Selector // the running trials
	inFlight int               // trials running
	started  int               // trials this run started
}

// newSweep begins a run of Sweep with in.
func newSweep(ctx workflow.Context, in SweepInput) *sweep {
	if in.Window <= 0 {
		in.Window = unsetWindow
	}
	s := &sweep{ctx: ctx, log: workflow.GetLogger(ctx), in: in, pageNo: -1}
	s.p = &s.in.Progress
	s.p.Runs++
	s.p.Running = nil
	s.cpu = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: QueueCPU, StartToCloseTimeout: cpuStartToClose, HeartbeatTimeout: cpuHeartbeat, RetryPolicy: RetryQuick,
	})
	return s
}

// run is the workflow: plan, run the trials a window at a time, then end, be canceled or
// continue as new.
func (s *sweep) run() (SweepResult, error) {
	if err := workflow.SetQueryHandler(s.ctx, QueryProgress, s.progress); err != nil {
		return SweepResult{}, err
	}
	if err := s.plan(); err != nil {
		return SweepResult{}, err
	}
	s.children, s.cancelChildren = workflow.WithCancel(s.ctx)
	workflow.Go(s.ctx, s.awaitCancel)

	s.sel = workflow.NewSelector(s.ctx)
	if s.in.Search != nil {
		return s.search()
	}
	for {
		if err := s.startTrials(); err != nil {
			s.cancelChildren()
			return SweepResult{Progress: *s.p}, err
		}
		if s.inFlight == 0 {
			break
		}
		s.sel.Select(s.ctx)
	}
	return s.end()
}

// progress answers QueryProgress.
func (s *sweep) progress() (SweepProgress, error) { return *s.p, nil }

// plan has the Plan activity plan the sweep, unless an earlier run did: in the store, or
// inline for the runs that began before plans were stored (versionPlanInStore).
// A manifest that is a search is not planned: its Decide activity decides as it goes.
func (s *sweep) plan() error {
	if s.in.Planned {
		return nil
	}
	paged := workflow.GetVersion(s.ctx, versionPlanInStore, workflow.DefaultVersion, 1) == 1
	var plan PlanOutput
	if err := workflow.ExecuteActivity(s.cpu, ActivityPlan, PlanInput{SweepID: s.in.SweepID, ManifestKey: s.in.ManifestKey, Paged: paged}).Get(s.ctx, &plan); err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	s.in.Planned = true
	if plan.Search {
		s.in.Search = &SearchCursor{}
		s.log.Info("planned a search")
		return nil
	}
	if paged {
		s.in.PlanPrefix, s.in.PlanPageSize = plan.Prefix, plan.PageSize
		s.p.Total, s.p.Skipped = plan.Total, plan.Skipped
	} else {
		s.in.Trials = plan.Trials
		s.p.Total = len(plan.Trials)
		for _, t := range plan.Trials {
			if t.Done {
				s.p.Skipped++
			}
		}
	}
	s.log.Info("planned", "trials", s.p.Total, "done", s.p.Skipped)
	return nil
}

// awaitCancel waits for SignalCancel, then stops the sweep starting trials and cancels
// the running ones. It runs in its own workflow goroutine, of context ctx.
func (s *sweep) awaitCancel(ctx workflow.Context) {
	workflow.GetSignalChannel(ctx, SignalCancel).Receive(ctx, nil)
	s.canceled = true
	s.p.Canceled = true
	s.cancelChildren()
}

// startTrials starts trials up to the window, unless the sweep was canceled or this run
// has started its share.
func (s *sweep) startTrials() error {
	for s.mayStart() {
		t, err := s.trialAt(s.in.Next)
		if err != nil {
			return err
		}
		s.in.Next++
		if t.Done {
			continue
		}
		s.startTrial(t)
	}
	return nil
}

// mayStart reports whether the sweep may start its next trial now.
func (s *sweep) mayStart() bool {
	return !s.canceled && s.in.Next < s.p.Total && s.inFlight < s.in.Window && s.started < maxChildrenPerRun &&
		!workflow.GetInfo(s.ctx).GetContinueAsNewSuggested()
}

// trialAt is trial i of the plan, read from the stored plan a page at a time.
func (s *sweep) trialAt(i int) (TrialRef, error) {
	if s.in.PlanPrefix == "" {
		return s.in.Trials[i], nil
	}
	if n := i / s.in.PlanPageSize; n != s.pageNo {
		s.page = nil // decoding into the previous page would keep its fields that the new one omits
		if err := workflow.ExecuteActivity(s.cpu, ActivityReadPlan, ReadPlanInput{Prefix: s.in.PlanPrefix, Page: n}).Get(s.ctx, &s.page); err != nil {
			return TrialRef{}, fmt.Errorf("plan page %d: %w", n, err)
		}
		s.pageNo = n
	}
	if j := i % s.in.PlanPageSize; j < len(s.page) {
		return s.page[j], nil
	}
	return TrialRef{}, fmt.Errorf("plan page %d holds %d trials, trial %d of %d wanted", s.pageNo, len(s.page), i, s.p.Total)
}

// startTrial starts the Trial workflow of t, a child of the sweep's.
func (s *sweep) startTrial(t TrialRef) {
	cctx := workflow.WithChildOptions(s.children, workflow.ChildWorkflowOptions{
		WorkflowID: TrialWorkflowID(s.in.SweepID, t.ID),
		TaskQueue:  QueueCPU,
	})
	f := workflow.ExecuteChildWorkflow(cctx, Trial, TrialInput{SweepID: s.in.SweepID, ManifestKey: s.in.ManifestKey, Trial: t,
		HeartbeatTimeout: s.in.HeartbeatTimeout, Retry: s.in.Retry, StallTimeout: s.in.StallTimeout})
	s.inFlight++
	s.started++
	s.p.Running = append(s.p.Running, t.ID)
	s.sel.AddFuture(f, func(f workflow.Future) { s.trialDone(t.ID, f) })
}

// trialDone counts the outcome of trial id, whose workflow f has ended.
func (s *sweep) trialDone(id string, f workflow.Future) {
	s.inFlight--
	s.p.Running = remove(s.p.Running, id)
	var r TrialResult
	if err := f.Get(s.ctx, &r); err != nil {
		if !s.canceled {
			s.log.Error("trial workflow failed", "trial", id, "error", err)
		}
		s.p.failed(id, failureMessage(err))
		return
	}
	if r.Arithmetic != "" {
		if s.p.Engines == nil {
			s.p.Engines = map[string]int{}
		}
		s.p.Engines[r.Arithmetic]++
	}
	switch r.Status {
	case status.Diverged:
		s.p.Diverged++
	case status.Failed:
		s.p.failed(id, r.Error)
	default:
		s.p.Completed++
	}
}

// end ends the run once no trial is running: canceled, continued as new if trials remain
// (this run started its share), or done once the tables are built a last time.
func (s *sweep) end() (SweepResult, error) {
	if s.canceled {
		return SweepResult{Progress: *s.p}, temporal.NewCanceledError("sweep canceled")
	}
	if s.in.Search == nil && s.in.Next < s.p.Total {
		// continue as new with the state, a fresh history
		return SweepResult{}, workflow.NewContinueAsNewError(s.ctx, Sweep, s.in)
	}
	// the last build of the tables
	if err := workflow.ExecuteActivity(s.cpu, ActivityNotifyTables, NotifyInput{SweepID: s.in.SweepID, ManifestKey: s.in.ManifestKey, Done: true}).Get(s.ctx, nil); err != nil {
		return SweepResult{Progress: *s.p}, fmt.Errorf("tables: %w", err)
	}
	return SweepResult{Progress: *s.p}, nil
}

// remove is s without its first v.
func remove(s []string, v string) []string {
	for i, x := range s {
		if x == v {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}
