package activities

// Decide: one decision of a search. It applies the segments that ended (their outcomes
// read from the store), then asks the search's state for the next segments, suggesting
// configurations where it needs new ones. Each decision is logged in the store before it
// is returned, so a retried or replayed decision is the one made.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/search"
	"github.com/sfsweep/sfsweep/trial"
	"github.com/sfsweep/sfsweep/workflows"
)

// decision is a logged decision: its input, what it decided, and the configurations
// whose segments it saw fail.
type decision struct {
	In     workflows.DecideInput  `json:"in"`
	Out    workflows.DecideOutput `json:"out"`
	Failed []int                  `json:"failed,omitempty"`
}

// Decide makes decision in.Seq of a search, or returns it from the log if it was made
// and still holds. A logged decision that saw a configuration fail no longer holds once
// that configuration's trials have trained again without failing (the sweep was run
// again): the log is dropped from there and the search decides anew, reusing what its
// trials stored.
func (a *Activities) Decide(ctx context.Context, in workflows.DecideInput) (workflows.DecideOutput, error) {
	defer keepAlive(ctx, func() any { return "decide" })()
	sr, err := a.searcher(ctx, in.ManifestKey)
	if err != nil {
		return workflows.DecideOutput{}, err
	}
	d, err := a.loggedDecision(ctx, in.SweepID, in.Seq)
	if err != nil {
		return workflows.DecideOutput{}, err
	}
	if d != nil {
		stale, err := a.staleFailure(ctx, sr, in.SweepID, d)
		if err != nil {
			return workflows.DecideOutput{}, err
		}
		if !stale {
			return a.withReplay(ctx, in, d.Out)
		}
		if err := a.dropDecisions(ctx, in.SweepID, in.Seq); err != nil {
			return workflows.DecideOutput{}, err
		}
	}
	st, err := a.searchState(ctx, sr, in)
	if err != nil {
		return workflows.DecideOutput{}, err
	}
	out, failed, err := a.decide(ctx, sr, st, in)
	if err != nil {
		return out, err
	}
	b, _ := json.Marshal(decision{In: in, Out: out, Failed: failed})
	if err := a.Store.Put(ctx, keys.SearchDecision(in.SweepID, in.Seq), b); err != nil {
		return out, err
	}
	b, err = json.Marshal(search.Snapshot{Seq: in.Seq + 1, State: st})
	if err != nil {
		return out, err
	}
	if err := a.Store.Put(ctx, keys.SearchState(in.SweepID), b); err != nil {
		return out, err
	}
	return a.withReplay(ctx, in, out)
}

// withReplay marks out with the events of the next decision, if the log has it.
func (a *Activities) withReplay(ctx context.Context, in workflows.DecideInput, out workflows.DecideOutput) (workflows.DecideOutput, error) {
	next, err := a.loggedDecision(ctx, in.SweepID, in.Seq+1)
	if err != nil || next == nil {
		return out, err
	}
	out.Replay, out.Await = true, next.In.Events
	return out, nil
}

// loggedDecision is decision seq from the log, nil if it was not made.
func (a *Activities) loggedDecision(ctx context.Context, sweepID string, seq int) (*decision, error) {
	b, err := a.Store.Get(ctx, keys.SearchDecision(sweepID, seq))
	if errors.Is(err, blob.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var d decision
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("search decision %d: %w", seq, err)
	}
	return &d, nil
}

// staleFailure reports whether logged decision d saw a configuration fail that has since
// trained again without failing. A log written before decisions named their failures is
// judged by the configurations failed in the search's stored state.
func (a *Activities) staleFailure(ctx context.Context, sr *searcher, sweepID string, d *decision) (bool, error) {
	if len(d.Failed) == 0 && d.Out.Counts[string(search.StatusFailed)] == 0 {
		return false, nil
	}
	b, err := a.Store.Get(ctx, keys.SearchState(sweepID))
	if errors.Is(err, blob.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var ss search.Snapshot
	if err := json.Unmarshal(b, &ss); err != nil || ss.State == nil {
		return false, fmt.Errorf("search state of %s: %v", sweepID, err)
	}
	for _, e := range d.In.Events {
		if e.Candidate < 0 || e.Candidate >= len(ss.State.Candidates) {
			continue
		}
		failed := slices.Contains(d.Failed, e.Candidate)
		if d.Failed == nil { // an older log
			failed = ss.State.Candidates[e.Candidate].Status == search.StatusFailed
		}
		if !failed {
			continue
		}
		ev, err := a.segmentOutcome(ctx, sr, ss.State, e)
		if err != nil {
			return false, err
		}
		if !ev.Failed {
			return true, nil
		}
	}
	return false, nil
}

// dropDecisions removes decisions seq, seq+1, ... from a search's log, and its stored
// state, which is that of the last of them: searchState rebuilds the state from the
// decisions before seq.
func (a *Activities) dropDecisions(ctx context.Context, sweepID string, seq int) error {
	if err := a.Store.Delete(ctx, keys.SearchState(sweepID)); err != nil {
		return err
	}
	for ; ; seq++ {
		d, err := a.loggedDecision(ctx, sweepID, seq)
		if err != nil || d == nil {
			return err
		}
		if err := a.Store.Delete(ctx, keys.SearchDecision(sweepID, seq)); err != nil {
			return err
		}
	}
}

// searchState is the state before decision in.Seq: the stored one, brought up to date by
// making again the logged decisions it lacks (a decision is a pure function of the state
// and its input, so they come out as logged), or a new state at decision 0.
func (a *Activities) searchState(ctx context.Context, sr *searcher, in workflows.DecideInput) (*search.State, error) {
	var ss search.Snapshot
	b, err := a.Store.Get(ctx, keys.SearchState(in.SweepID))
	switch {
	case errors.Is(err, blob.ErrNotFound) || (err == nil && in.Seq == 0):
		st, err := search.NewState(sr.config)
		if err != nil {
			return nil, invalid(err)
		}
		ss = search.Snapshot{State: st}
	case err != nil:
		return nil, err
	default:
		if err := json.Unmarshal(b, &ss); err != nil || ss.State == nil {
			return nil, fmt.Errorf("search state of %s: %v", in.SweepID, err)
		}
	}
	if ss.Seq > in.Seq {
		return nil, fmt.Errorf("search state of %s is at decision %d, decision %d asked for", in.SweepID, ss.Seq, in.Seq)
	}
	for seq := ss.Seq; seq < in.Seq; seq++ {
		d, err := a.loggedDecision(ctx, in.SweepID, seq)
		if err != nil {
			return nil, err
		}
		if d == nil {
			return nil, fmt.Errorf("search %s: decision %d is not in the log", in.SweepID, seq)
		}
		out, _, err := a.decide(ctx, sr, ss.State, d.In)
		if err != nil {
			return nil, err
		}
		if !slices.EqualFunc(out.Jobs, d.Out.Jobs, func(x, y workflows.SegmentJob) bool { return x.Candidate == y.Candidate && x.Until == y.Until }) {
			return nil, fmt.Errorf("search %s: decision %d made again differs from the log", in.SweepID, seq)
		}
	}
	return ss.State, nil
}

// decide applies in's events to st and picks up to in.MaxJobs segments. It returns the
// configurations whose segments failed too.
func (a *Activities) decide(ctx context.Context, sr *searcher, st *search.State, in workflows.DecideInput) (workflows.DecideOutput, []int, error) {
	var failed []int
	for _, e := range in.Events {
		ev, err := a.segmentOutcome(ctx, sr, st, e)
		if err != nil {
			return workflows.DecideOutput{}, nil, err
		}
		if ev.Failed {
			failed = append(failed, ev.Candidate)
		}
		if err := st.Apply(ev); err != nil {
			return workflows.DecideOutput{}, nil, fmt.Errorf("search decision %d: %w", in.Seq, err)
		}
	}
	var out workflows.DecideOutput
	for len(out.Jobs) < in.MaxJobs {
		job, ok := st.Next()
		if !ok {
			break
		}
		if job.New {
			g, p, err := sr.suggest(st)
			if err != nil {
				return out, nil, err
			}
			// a configuration suggested again shares the trials of the first (by their
			// content address) instead of training them twice
			trials, err := sr.m.PointTrials(g, p)
			if err != nil {
				return out, nil, invalid(err)
			}
			st.AddKeyed(g, p, trials[0].ID)
			continue
		}
		j, err := a.segment(ctx, sr, st.Candidates[job.Candidate], job.Until)
		if err != nil {
			return out, nil, err
		}
		out.Jobs = append(out.Jobs, j)
	}
	// a Next that found nothing to run has ended a search that can go no further (paused
	// configurations become stopped); one more Next here would start a job and drop it
	out.Done = st.Done()
	out.Counts = map[string]int{}
	for _, c := range st.Candidates {
		out.Counts[string(c.Status)]++
	}
	return out, failed, nil
}

// segment is the job of training candidate c's trials to until, their configs written.
func (a *Activities) segment(ctx context.Context, sr *searcher, c search.Candidate, until int) (workflows.SegmentJob, error) {
	trials, err := sr.trials(c)
	if err != nil {
		return workflows.SegmentJob{}, invalid(err)
	}
	j := workflows.SegmentJob{Candidate: c.Index, Until: until, Final: until == sr.m.Steps}
	for _, t := range trials {
		ref := workflows.TrialRef{ID: t.ID, Queue: trainQueue(t.Config)}
		if j.Final {
			ref.Probes = sr.m.ProbesFor(t)
		}
		if err := trial.EnsureConfig(ctx, a.Store, t.ID, t.Config); err != nil {
			return j, err
		}
		j.Trials = append(j.Trials, ref)
	}
	return j, nil
}

// segmentOutcome reads what became of candidate e.Candidate's trials trained to e.Until:
// the validation loss there (mean over seeds) of the rung's iterate (RungIterate) before
// the end and of the metric's at the end, with the final metric, or that a seed diverged
// or failed.
func (a *Activities) segmentOutcome(ctx context.Context, sr *searcher, st *search.State, e workflows.SegmentEvent) (search.Event, error) {
	if e.Candidate < 0 || e.Candidate >= len(st.Candidates) {
		return search.Event{}, fmt.Errorf("search event for configuration %d of %d", e.Candidate, len(st.Candidates))
	}
	c := st.Candidates[e.Candidate]
	ev := search.Event{Candidate: e.Candidate, Step: e.Until}
	trials, err := sr.trials(c)
	if err != nil {
		return ev, invalid(err)
	}
	var vals, finals []float64
	for _, t := range trials {
		it := sr.iterate(t.Config.Optimizer.Name)
		res, err := a.storedResult(ctx, t.ID)
		if err != nil {
			return ev, err
		}
		switch {
		case res != nil && res.Status == status.Diverged && res.DivergedAt <= e.Until:
			ev.Diverged, ev.Step = true, res.DivergedAt
		case res != nil && res.Status == status.Completed && e.Until == sr.m.Steps:
			vals = append(vals, res.Val[it])
			finals = append(finals, sr.metric(res, it))
		default:
			if reason, err := trial.ReadFailure(ctx, a.Store, t.ID); err == nil && reason != "" {
				ev.Failed = true
				continue
			}
			at := it
			if e.Until < sr.m.Steps {
				at = sr.m.RungIterate(t.Config.Optimizer.Name) // a rung before the end ranks by its own
			}
			v, ok, err := a.curveAt(ctx, sr, t.ID, e.Until, at)
			if err != nil {
				return ev, err
			}
			if !ok {
				// the segment ended without its rung's value: nothing to rank it by, which
				// its failed.json says, so that the tables and the page show why
				ev.Failed = true
				what := "val_loss of " + at
				if sr.named() {
					what = sr.m.MetricName()
				}
				reason := fmt.Sprintf("no finite %s at step %d or after it in the trial's curves (a NaN, a string or a missing key in its metrics lines): the search has nothing to rank it by", what, e.Until)
				if err := trial.WriteFailure(ctx, a.Store, t.ID, reason); err != nil {
					return ev, err
				}
				continue
			}
			vals = append(vals, v)
		}
	}
	if ev.Diverged || ev.Failed {
		if ev.Diverged {
			ev.Value = math.Inf(1)
		}
		ev.Step = e.Until
		return ev, nil
	}
	ev.Value = mean(vals)
	if len(finals) > 0 {
		f := mean(finals)
		ev.Final = &f
	}
	return ev, nil
}

// curveAt is a trial's validation loss of iterate it at step, from its curves, or a
// program's named metric there (the search's metric, to minimize). A program may log
// at steps of its own: its first point at or after step stands for step.
func (a *Activities) curveAt(ctx context.Context, sr *searcher, id string, step int, it string) (float64, bool, error) {
	points, err := trial.ReadCurves(ctx, a.Store, id)
	if err != nil {
		return 0, false, err
	}
	named := sr.named()
	for _, p := range points {
		if p.Step < step || (p.Step > step && sr.m.Trainer == nil) {
			continue
		}
		if named {
			v, ok := p.Metrics[sr.m.MetricName()]
			if ok {
				return sr.sign() * v, true, nil
			}
			continue
		}
		if v, ok := p.Val[it]; ok || sr.m.Trainer == nil {
			return v, ok, nil
		}
	}
	return 0, false, nil
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
