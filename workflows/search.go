package workflows

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"go.temporal.io/sdk/workflow"

	"github.com/sfsweep/sfsweep/internal/status"
)

// DefaultMaxDecisions bounds the Decide activities of one run of a searching Sweep
// (SweepInput.MaxDecisions): past it, the run stops starting segments, lets the running
// ones end and continues as new, so the history of a search of any size stays bounded.
const DefaultMaxDecisions = 500

// searchRun is the search loop of a Sweep run whose manifest is a search: the Decide
// activity decides (from the results in the store, by the manifest's sampler and
// early-stopping rule, logged in the store), this loop runs what it decides: segments,
// each the trials of one configuration (one per seed) trained to a rung.
type searchRun struct {
	*sweep
	ended     []SegmentEvent // segments that ended, not yet given to a decision
	remaining map[int]int    // by configuration: trials of its running segment still running
	decisions int            // Decide activities of this run
	done      bool
	fresh     bool // no decision yet in this run
	// replay: the next decision is in the log, made with the events await
	replay bool
	await  []SegmentEvent
}

// search runs the search until it is over, canceled, or due to continue as new.
func (s *sweep) search() (SweepResult, error) {
	r := &searchRun{sweep: s, remaining: map[int]int{}, fresh: true}
	if c := s.in.Search; c.Replay {
		// a replay that continued as new between two logged decisions
		r.fresh, r.replay, r.await, r.ended = false, true, c.Await, c.Ended
	}
	for {
		if s.canceled {
			break
		}
		winding := r.decisions >= cmp.Or(s.in.MaxDecisions, DefaultMaxDecisions) || workflow.GetInfo(s.ctx).GetContinueAsNewSuggested()
		// A replayed decision starts what it started: past the bound a replay makes no more,
		// lets its segments end and hands the rest of the log to the next run.
		hold := winding && r.replay && workflow.GetVersion(s.ctx, versionSearchReplayWinds, workflow.DefaultVersion, 1) == 1
		if !hold {
			if events, ok := r.ready(); ok {
				max := s.in.Window
				if winding {
					max = 0 // record what ended, start nothing: the next run goes on
				}
				if err := r.decide(max, events); err != nil {
					s.cancelChildren()
					return SweepResult{Progress: *s.p}, err
				}
				continue
			}
		}
		if len(r.remaining) == 0 && (len(r.ended) == 0 || hold) && (r.done || winding) {
			break
		}
		if len(r.remaining) == 0 {
			// nothing runs, and the next decision waits on what nothing will bring
			return SweepResult{Progress: *s.p}, fmt.Errorf("search: after decision %d nothing runs, and %d ended segments do not make the next (%v awaited)",
				s.in.Search.Seq-1, len(r.ended), r.await)
		}
		s.sel.Select(s.ctx)
		for s.sel.HasPending() {
			s.sel.Select(s.ctx)
		}
	}
	if s.canceled || r.done {
		return s.end()
	}
	if r.replay {
		s.in.Search.Replay, s.in.Search.Await, s.in.Search.Ended = true, r.await, r.ended
	}
	return SweepResult{}, workflow.NewContinueAsNewError(s.ctx, Sweep, s.in)
}

// ready tells whether the next decision can be made now, and with which events: a
// replayed one once every event it was made with has come, a new one at the run's start
// or once a segment has ended.
func (r *searchRun) ready() ([]SegmentEvent, bool) {
	if r.fresh {
		return nil, true
	}
	if r.replay {
		var rest []SegmentEvent
		for _, e := range r.await {
			if !slices.Contains(r.ended, e) {
				return nil, false
			}
		}
		for _, e := range r.ended {
			if !slices.Contains(r.await, e) {
				rest = append(rest, e)
			}
		}
		events := r.await
		r.ended = rest
		return events, true
	}
	if r.done || len(r.ended) == 0 {
		return nil, false
	}
	events := r.ended
	r.ended = nil
	return events, true
}

// decide runs decision Seq with events, and starts the segments it picks (at most max;
// a replayed decision starts what it started).
func (r *searchRun) decide(max int, events []SegmentEvent) error {
	in := DecideInput{SweepID: r.in.SweepID, ManifestKey: r.in.ManifestKey, Seq: r.in.Search.Seq, Events: events, MaxJobs: max}
	var out DecideOutput
	if err := workflow.ExecuteActivity(r.cpu, ActivityDecide, in).Get(r.ctx, &out); err != nil {
		return fmt.Errorf("search: decision %d: %w", in.Seq, err)
	}
	r.in.Search.Seq++
	r.decisions++
	r.fresh = false
	r.done = out.Done
	r.replay, r.await = out.Replay, out.Await
	r.p.Configs = maps.Clone(out.Counts)
	r.p.Stopped = out.Counts["stopped"]
	for _, j := range out.Jobs {
		r.startSegment(j)
	}
	return nil
}

// startSegment starts the trials of a segment, each a Trial workflow trained to j.Until.
func (r *searchRun) startSegment(j SegmentJob) {
	r.remaining[j.Candidate] = len(j.Trials)
	for _, t := range j.Trials {
		until := j.Until
		id := SegmentWorkflowID(r.in.SweepID, t.ID, until)
		if j.Final {
			until = 0 // to the end, with the trial's probes
		}
		cctx := workflow.WithChildOptions(r.children, workflow.ChildWorkflowOptions{WorkflowID: id, TaskQueue: QueueCPU})
		f := workflow.ExecuteChildWorkflow(cctx, Trial, TrialInput{SweepID: r.in.SweepID, ManifestKey: r.in.ManifestKey, Trial: t, Until: until,
			HeartbeatTimeout: r.in.HeartbeatTimeout, Retry: r.in.Retry, StallTimeout: r.in.StallTimeout})
		r.inFlight++
		r.p.Running = append(r.p.Running, t.ID)
		cand, tid, final := j.Candidate, t.ID, j.Final
		r.sel.AddFuture(f, func(f workflow.Future) { r.trialEnded(cand, j.Until, tid, final, f) })
	}
}

// trialEnded counts a segment's trial that ended (its outcome, if it was trained to the
// end); the segment's event comes with its last.
func (r *searchRun) trialEnded(cand, until int, id string, final bool, f workflow.Future) {
	r.inFlight--
	r.p.Running = remove(r.p.Running, id)
	var res TrialResult
	if err := f.Get(r.ctx, &res); err != nil && !r.canceled {
		r.log.Error("trial workflow failed", "trial", id, "error", err)
	}
	switch {
	case res.Status == status.Completed && final:
		r.p.Completed++
	case res.Status == status.Diverged:
		r.p.Diverged++
	case res.Status == status.Failed:
		r.p.failed(id, res.Error)
	}
	if r.remaining[cand]--; r.remaining[cand] == 0 {
		delete(r.remaining, cand)
		r.ended = append(r.ended, SegmentEvent{Candidate: cand, Until: until})
	}
}
