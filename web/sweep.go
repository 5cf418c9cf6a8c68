package web

// A sweep as its page shows it: the index of its trials from the store, the live state of
// its workflow from Temporal, and the trials that finished since the index was built.

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/report"
	"github.com/sfsweep/sfsweep/sweepclient"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/trial"
	"github.com/sfsweep/sfsweep/workflows"
)

// The states of a trial on the page, beyond those of sweepclient (in flight) and
// internal/status (an outcome).
const (
	stateNotRun = "not run" // the sweep ended without it
	statePend   = "queued"  // the sweep runs; it has not started
)

// sweepData is a sweep as loaded: its manifest, its trials with their states, and what
// the workflow says of it.
type sweepData struct {
	ID       string
	Manifest *sweeps.Manifest
	Source   string // the manifest's YAML
	Output   string // its tables' and plots' prefix
	Phase    string // running, completed, failed, canceled, terminated, timed out; or, from the store alone, finished / incomplete
	Live     bool   // its workflow runs
	Started  time.Time
	Note     string // why the live state is missing, when it is
	Rows     []row
	Built    string // when the index was built (a version for the plots' addresses)
	Progress workflows.SweepProgress
	GPUs     []sweepclient.GPUUse // the GPUs its trials in flight train on or wait for
}

// row is a trial on the page.
type row struct {
	trial.Summary
	State    string // an outcome (completed, diverged, stopped, failed) or a state in flight
	At       int    // the training step, for a trial in flight (0: unknown)
	Attempt  int
	Error    string // a failed trial's reason, or a retrying one's last failure
	Waiting  string // why a trial admitting is not training yet (waiting for GPU memory)
	Workflow string // its workflow in Temporal's Web UI
}

// cachedIndex is an index computed from results (a sweep whose tables were never built),
// kept briefly so that a page's polls do not read every result each time.
type cachedIndex struct {
	ix  *report.Index
	at  time.Time
	err error
}

const computedIndexTTL = 3 * time.Second

// errNoSweep is a sweep that is not in the store.
var errNoSweep = errors.New("no such sweep")

// load reads a sweep: its manifest, the index of its trials, the live state of its
// workflow, and the outcomes that landed since the index was written.
func (s *Server) load(ctx context.Context, id string) (*sweepData, error) {
	d, err := s.manifestOnly(ctx, id)
	if err != nil {
		return nil, err
	}
	ix, err := s.index(ctx, d)
	if err != nil {
		return nil, err
	}
	d.Built = version(ix)
	live := map[string]sweepclient.TrialState{}
	if s.opt.Temporal != nil {
		live, err = s.liveState(ctx, d)
		if err != nil {
			d.Note = "live state unavailable: " + err.Error()
		}
	}
	inFlight := make([]sweepclient.TrialState, 0, len(live))
	for _, tid := range slices.Sorted(maps.Keys(live)) {
		inFlight = append(inFlight, live[tid])
	}
	d.GPUs = sweepclient.GPUs(inFlight)
	s.mu.Lock()
	seen := s.seen[id]
	if seen == nil {
		seen = map[string]bool{}
		s.seen[id] = seen
	}
	for tid := range live {
		seen[tid] = true
	}
	s.mu.Unlock()

	byID := make(map[string]int, len(ix.Trials))
	d.Rows = make([]row, 0, len(ix.Trials)+len(live))
	for _, it := range ix.Trials {
		byID[it.ID] = len(d.Rows)
		d.Rows = append(d.Rows, row{Summary: it})
	}
	// a search's trials in flight that the index has not met yet
	for _, tid := range slices.Sorted(maps.Keys(live)) {
		if _, ok := byID[tid]; ok || !trialIDPattern.MatchString(tid) {
			continue
		}
		it, err := s.trialFromConfig(ctx, tid)
		if err != nil {
			continue
		}
		byID[tid] = len(d.Rows)
		d.Rows = append(d.Rows, row{Summary: it})
	}
	for i := range d.Rows {
		r := &d.Rows[i]
		if r.Status == status.Missing && !isLive(live, r.ID) && seenTrial(s, id, r.ID) {
			s.refresh(ctx, r) // finished since the index was built
		}
		s.state(d, r, live)
	}
	if d.Phase == "" {
		d.Phase = "incomplete"
		if doneAll(d.Rows) {
			d.Phase = "finished"
		}
	}
	return d, nil
}

func isLive(live map[string]sweepclient.TrialState, id string) bool { _, ok := live[id]; return ok }

func seenTrial(s *Server, sweep, trial string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[sweep][trial]
}

// doneAll reports whether every trial has an outcome.
func doneAll(rows []row) bool {
	for _, r := range rows {
		if r.Status == status.Missing {
			return false
		}
	}
	return true
}

// version names a state of the index: the plots' addresses carry it, so that a browser
// asks again once the tables were rebuilt.
func version(ix *report.Index) string {
	h := fnv.New64a()
	for _, t := range ix.Trials {
		h.Write([]byte(t.ID))
		h.Write([]byte(t.Status))
	}
	return strconv.FormatUint(h.Sum64(), 36)
}

// storedIndex is an index as read from the store, with the hash of its bytes: read again
// unchanged, it is not decoded again.
type storedIndex struct {
	sum [32]byte
	ix  *report.Index
}

// maxCached bounds the sweeps and outputs whose manifests and indexes a server keeps.
const maxCached = 256

// storedIndex reads an output's index (nil: none), decoding it only when it changed.
func (s *Server) storedIndex(ctx context.Context, output string) (*report.Index, error) {
	b, err := s.opt.Store.Get(ctx, keys.TrialIndex(output))
	if errors.Is(err, blob.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	s.mu.Lock()
	c, ok := s.indexes[output]
	s.mu.Unlock()
	if ok && c.sum == sum {
		return c.ix, nil
	}
	ix, err := report.ParseIndex(b)
	if err != nil {
		return nil, fmt.Errorf("index of %s: %w", output, err)
	}
	s.mu.Lock()
	if len(s.indexes) >= maxCached {
		clear(s.indexes)
	}
	s.indexes[output] = storedIndex{sum: sum, ix: ix}
	s.mu.Unlock()
	return ix, nil
}

// index is the sweep's trial index: the one its last table build wrote, or, where there is
// none for this sweep, one computed from the results in the store.
func (s *Server) index(ctx context.Context, d *sweepData) (*report.Index, error) {
	ix, err := s.storedIndex(ctx, d.Output)
	if err != nil {
		return nil, err
	}
	if ix != nil && (ix.Sweep == "" || ix.Sweep == d.ID) {
		return ix, nil
	}
	s.mu.Lock()
	c, ok := s.cache[d.ID]
	s.mu.Unlock()
	if ok && time.Since(c.at) < computedIndexTTL {
		return c.ix, c.err
	}
	res, err := report.Load(ctx, s.opt.Store, d.Manifest, report.Options{SweepID: d.ID})
	if err == nil {
		ix = report.MakeIndex(d.Manifest.Name, d.ID, res)
	}
	s.mu.Lock()
	s.cache[d.ID] = cachedIndex{ix: ix, at: time.Now(), err: err}
	s.mu.Unlock()
	return ix, err
}

// liveState asks Temporal for the sweep's workflow: its phase and start, and the state of
// each trial in flight.
func (s *Server) liveState(ctx context.Context, d *sweepData) (map[string]sweepclient.TrialState, error) {
	c := s.opt.Temporal
	desc, err := c.DescribeWorkflowExecution(ctx, d.ID, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil, nil // submitted elsewhere, or its history is gone: the store alone
	}
	if err != nil {
		return nil, err
	}
	info := desc.GetWorkflowExecutionInfo()
	d.Phase = phaseText(info.GetStatus())
	d.Started = info.GetStartTime().AsTime()
	if first := info.GetFirstRunId(); first != "" && first != info.GetExecution().GetRunId() {
		if fd, err := c.DescribeWorkflowExecution(ctx, d.ID, first); err == nil {
			d.Started = fd.GetWorkflowExecutionInfo().GetStartTime().AsTime()
		}
	}
	if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return nil, nil
	}
	d.Live = true
	p, err := sweepclient.Progress(ctx, c, d.ID)
	if err != nil {
		return nil, err
	}
	d.Progress = p
	states, err := sweepclient.TrialStates(ctx, c, d.ID, p.Running)
	if err != nil {
		return nil, err
	}
	live := make(map[string]sweepclient.TrialState, len(states))
	for _, t := range states {
		live[t.ID] = t
	}
	return live, nil
}

// phaseText names a workflow's status.
func phaseText(st enumspb.WorkflowExecutionStatus) string {
	switch st {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return "running"
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return "completed"
	case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
		return "failed"
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		return "canceled"
	case enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED:
		return "terminated"
	case enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		return "timed out"
	case enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
		return "running"
	}
	return strings.ToLower(strings.TrimPrefix(st.String(), "WORKFLOW_EXECUTION_STATUS_"))
}

// state sets a row's state from its outcome, else from its workflow, else from the sweep.
func (s *Server) state(d *sweepData, r *row, live map[string]sweepclient.TrialState) {
	if s.opt.UI != "" && s.opt.Namespace != "" {
		r.Workflow = strings.TrimSuffix(s.opt.UI, "/") + "/namespaces/" + url.PathEscape(s.opt.Namespace) +
			"/workflows/" + url.PathEscape(workflows.TrialWorkflowID(d.ID, r.ID))
	}
	if r.Status != status.Missing && r.Status != "" {
		r.State, r.Attempt = string(r.Status), r.Attempts
		if r.Status == status.Failed {
			r.Error = r.Reason
		}
		return
	}
	t, ok := live[r.ID]
	switch {
	case ok:
		r.State, r.Attempt, r.Error, r.At, r.Waiting = t.State, t.Attempt, t.LastFailure, t.Step, t.Waiting
		if t.Refused > 0 { // a program's metrics lines refused this attempt
			r.Error = strings.TrimPrefix(r.Error+"; ", "; ") + fmt.Sprintf("%d metrics lines refused, the first %s", t.Refused, t.RefusedFirst)
		}
		if s.opt.Steps != nil {
			if p, ok := s.opt.Steps(r.ID); ok && p.Step >= r.At {
				r.At = p.Step
			}
		}
	case d.Live:
		r.State = statePend
	default:
		r.State = stateNotRun
	}
}

// refresh reads the outcome of a trial that finished since the index was built.
func (s *Server) refresh(ctx context.Context, r *row) {
	o, err := trial.ReadOutcome(ctx, s.opt.Store, r.ID)
	if err != nil || (o.Result == nil && o.Failed == "") {
		return
	}
	r.Summary = trial.Summarize(r.ID, r.Config(), o)
}

// trialFromConfig is the summary of a trial from its config, with no outcome yet.
func (s *Server) trialFromConfig(ctx context.Context, id string) (trial.Summary, error) {
	cfg, err := trial.ReadConfig(ctx, s.opt.Store, id)
	if err != nil {
		return trial.Summary{}, err
	}
	return trial.Summarize(id, cfg, trial.Outcome{}), nil
}
