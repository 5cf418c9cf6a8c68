package workflows

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// fakeSearch decides like a search without early stopping: configuration i is the trial
// "c<i>", trained to the end; at most parallel run at once, budget in all. It checks that
// the decisions come in sequence across runs and that every segment it started ends once.
type fakeSearch struct {
	mu              sync.Mutex
	budget, started int
	parallel        int
	running         map[int]bool
	seq             int
	calls           int // Decide calls of the current run
	maxCalls        int
	err             error
}

func (f *fakeSearch) decide(ctx context.Context, in DecideInput) (DecideOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.maxCalls = max(f.maxCalls, f.calls)
	if in.Seq != f.seq && f.err == nil {
		f.err = fmt.Errorf("decision %d asked for, %d expected", in.Seq, f.seq)
	}
	f.seq++
	for _, e := range in.Events {
		if !f.running[e.Candidate] && f.err == nil {
			f.err = fmt.Errorf("configuration %d ended twice, or was never started", e.Candidate)
		}
		delete(f.running, e.Candidate)
	}
	var out DecideOutput
	for len(out.Jobs) < in.MaxJobs && len(f.running) < f.parallel && f.started < f.budget {
		id := fmt.Sprintf("c%d", f.started)
		out.Jobs = append(out.Jobs, SegmentJob{Candidate: f.started, Until: 10, Final: true, Trials: []TrialRef{{ID: id}}})
		f.running[f.started] = true
		f.started++
	}
	out.Done = f.started == f.budget && len(f.running) == 0
	out.Counts = map[string]int{"completed": f.started - len(f.running), "running": len(f.running)}
	return out, nil
}

// A search of 2,000 configurations runs in a chain of runs of at most MaxDecisions
// decisions each, so every history stays bounded; each configuration trains once, and the
// decisions follow on across the runs.
func TestSearchHistoryBounded(t *testing.T) {
	const maxDecisions = 100
	f := &fakeSearch{budget: 2000, parallel: 8, running: map[int]bool{}}
	w := newWorld()
	var s testsuite.WorkflowTestSuite
	in := SweepInput{SweepID: "s", ManifestKey: "m", Window: 8, MaxDecisions: maxDecisions}
	runs := 0
	for ; ; runs++ {
		env := s.NewTestWorkflowEnvironment()
		w.register(env)
		env.RegisterActivityWithOptions(func(ctx context.Context, in PlanInput) (PlanOutput, error) {
			return PlanOutput{Search: true}, nil
		}, activity.RegisterOptions{Name: ActivityPlan})
		env.RegisterActivityWithOptions(f.decide, activity.RegisterOptions{Name: ActivityDecide})
		f.calls = 0
		env.ExecuteWorkflow(Sweep, in)
		err := env.GetWorkflowError()
		if err == nil {
			break
		}
		var can *workflow.ContinueAsNewError
		if !errors.As(err, &can) || runs > 100 {
			t.Fatalf("run %d: %v", runs, err)
		}
		in = SweepInput{}
		if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
			t.Fatal(err)
		}
		if in.Search == nil || in.Search.Seq != f.seq {
			t.Fatalf("run %d continued at %+v, the search is at decision %d", runs, in.Search, f.seq)
		}
	}
	if f.err != nil {
		t.Fatal(f.err)
	}
	// past the bound a run only records the ends of its running segments (at most parallel)
	if f.maxCalls > maxDecisions+8 || runs < 2 {
		t.Errorf("%d runs, up to %d decisions a run: want runs of at most %d decisions (and the segments' ends after)", runs+1, f.maxCalls, maxDecisions)
	}
	if len(w.trained) != 2000 {
		t.Errorf("%d configurations trained, want 2000", len(w.trained))
	}
	for id, n := range w.trained {
		if n != 1 {
			t.Errorf("%s trained %d times", id, n)
		}
	}
}
