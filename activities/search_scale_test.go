package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/report"
	"github.com/sfsweep/sfsweep/search"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/workflows"
)

// fakeTrainer trains a segment by writing what a trained one leaves in the store: the
// curves to its step (a validation loss that is a function of the trial and the step)
// and, to the end, a completed result. A segment whose outcome is there already is
// returned as the real Train returns a stored result: nothing written.
type fakeTrainer struct {
	store   blob.Store
	steps   int
	mu      sync.Mutex
	trained map[string]int // by "trial→until": segments written
}

func (f *fakeTrainer) train(ctx context.Context, in workflows.TrainInput) (workflows.TrainOutput, error) {
	until := in.Until
	if until == 0 {
		until = f.steps
	}
	prefix := keys.Trial(in.TrialID)
	out := workflows.TrainOutput{Step: until}
	if until == f.steps {
		out.Status = status.Completed
	}
	if _, err := f.store.Get(ctx, keys.RunResult(prefix)); err == nil {
		return out, nil
	}
	if b, err := f.store.Get(ctx, keys.RunCurves(prefix)); err == nil && strings.Count(string(b), "\n") >= until/2 && until < f.steps {
		return out, nil
	}
	h := fnv.New64a()
	h.Write([]byte(in.TrialID))
	start := 3 + float64(h.Sum64()%1000)/1000
	var curves []byte
	var last float64
	for step := 2; step <= until; step += 2 {
		last = start - 0.01*float64(step)
		b, _ := json.Marshal(training.CurvePoint{Step: step, Val: map[string]float64{training.IterX: last}})
		curves = append(append(curves, b...), '\n')
	}
	if err := f.store.Put(ctx, keys.RunCurves(prefix), curves); err != nil {
		return out, err
	}
	if until == f.steps {
		res := training.Result{Status: status.Completed, Steps: until, Val: map[string]float64{training.IterX: last},
			Test: map[string]float64{training.IterX: last}, TestPPL: map[string]float64{training.IterX: last}}
		b, _ := json.Marshal(res)
		if err := f.store.Put(ctx, keys.RunResult(prefix), b); err != nil {
			return out, err
		}
	}
	f.mu.Lock()
	f.trained[fmt.Sprintf("%s→%d", in.TrialID, until)]++
	f.mu.Unlock()
	return out, nil
}

// commandCounter counts the commands of each workflow run (activities, child workflows,
// timers, side effects, versions, signals): each adds a bounded number of events to the
// run's history, so their count bounds its length.
type commandCounter struct {
	interceptor.WorkerInterceptorBase
	mu sync.Mutex
	by map[string]int // by workflow type and ID, in one test environment's run of a Sweep
}

func (c *commandCounter) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &countInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, c: c}
}

type countInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	c *commandCounter
}

func (i *countInbound) Init(out interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&countOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: out}, c: i.c})
}

type countOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	c *commandCounter
}

func (o *countOutbound) count(ctx workflow.Context) {
	info := workflow.GetInfo(ctx)
	o.c.mu.Lock()
	o.c.by[info.WorkflowType.Name+" "+info.WorkflowExecution.ID]++
	o.c.mu.Unlock()
}

func (o *countOutbound) ExecuteActivity(ctx workflow.Context, name string, args ...any) workflow.Future {
	o.count(ctx)
	return o.Next.ExecuteActivity(ctx, name, args...)
}

func (o *countOutbound) ExecuteChildWorkflow(ctx workflow.Context, name string, args ...any) workflow.ChildWorkflowFuture {
	o.count(ctx)
	return o.Next.ExecuteChildWorkflow(ctx, name, args...)
}

func (o *countOutbound) NewTimer(ctx workflow.Context, d time.Duration) workflow.Future {
	o.count(ctx)
	return o.Next.NewTimer(ctx, d)
}

func (o *countOutbound) SideEffect(ctx workflow.Context, f func(ctx workflow.Context) any) converter.EncodedValue {
	o.count(ctx)
	return o.Next.SideEffect(ctx, f)
}

func (o *countOutbound) GetVersion(ctx workflow.Context, changeID string, min, max workflow.Version) workflow.Version {
	o.count(ctx)
	return o.Next.GetVersion(ctx, changeID, min, max)
}

func (o *countOutbound) SignalExternalWorkflow(ctx workflow.Context, id, runID, name string, arg any) workflow.Future {
	o.count(ctx)
	return o.Next.SignalExternalWorkflow(ctx, id, runID, name, arg)
}

// A grid search of 2,000 configurations with the real Decide over a local store (and a
// Train that writes the outcomes Decide reads), run to its end and then run again from
// its first decision: both are chains of runs that continue as new every
// MaxDecisions decisions, the second while it replays the first's log, so every
// run's history stays bounded (its commands counted); the decisions follow on across the
// runs, every segment is trained once in all, and the search ends with every
// configuration completed or stopped, the best third of the rung promoted.
func TestSearchOf2000Configurations(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 configurations (-short)")
	}
	const maxDecisions, parallel = 50, 8
	store, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := store.Put(ctx, "sweeps/s/manifest.yaml", []byte(gridSearch(40, 50, "{method: grid, seed: 1, parallel: 8, early_stopping: {rule: asha, min_steps: 2}}"))); err != nil {
		t.Fatal(err)
	}
	a := &Activities{Store: store}
	f := &fakeTrainer{store: store, steps: 4, trained: map[string]int{}}
	counter := &commandCounter{by: map[string]int{}}
	// a run decides at most maxDecisions + parallel times (the ends of its last segments),
	// each with up to parallel ended segments that free as many slots
	bound := (maxDecisions + parallel + 1) * (parallel + 1)
	var s testsuite.WorkflowTestSuite
	most := 0 // commands of a Sweep run
	checkCommands := func(name string, run int) {
		for wf, n := range counter.by {
			if strings.HasPrefix(wf, "Sweep ") {
				most = max(most, n)
			}
			if n > bound {
				t.Errorf("%s, run %d: %s has %d commands, more than %d", name, run, wf, n, bound)
			}
		}
		clear(counter.by)
	}
	check := func(name string, runs int) {
		t.Helper()
		t.Logf("%s: %d runs, at most %d commands in a Sweep run (bound %d)", name, runs, most, bound)
		if runs < 2 {
			t.Errorf("%s: %d run: want a chain of runs of at most %d decisions", name, runs, maxDecisions)
		}
		most = 0
	}
	pass := func(name string) (runs int) {
		in := workflows.SweepInput{SweepID: "s", ManifestKey: "sweeps/s/manifest.yaml", Window: parallel, MaxDecisions: maxDecisions}
		seq := 0
		for ; ; runs++ {
			env := s.NewTestWorkflowEnvironment()
			env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{counter}})
			env.RegisterWorkflow(workflows.Sweep)
			env.RegisterWorkflow(workflows.Trial)
			env.RegisterActivityWithOptions(a.Plan, activity.RegisterOptions{Name: workflows.ActivityPlan})
			env.RegisterActivityWithOptions(a.Decide, activity.RegisterOptions{Name: workflows.ActivityDecide})
			env.RegisterActivityWithOptions(f.train, activity.RegisterOptions{Name: workflows.ActivityTrain})
			env.RegisterActivityWithOptions(func(context.Context, workflows.NotifyInput) error { return nil }, activity.RegisterOptions{Name: workflows.ActivityNotifyTables})
			env.ExecuteWorkflow(workflows.Sweep, in)
			checkCommands(name, runs)
			err := env.GetWorkflowError()
			if err == nil {
				return runs + 1
			}
			var can *workflow.ContinueAsNewError
			if !errors.As(err, &can) || runs > 1000 {
				t.Fatalf("%s, run %d: %v", name, runs, err)
			}
			in = workflows.SweepInput{}
			if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
				t.Fatal(err)
			}
			if in.Search == nil || in.Search.Seq <= seq {
				t.Fatalf("%s, run %d continued at %+v, after decision %d", name, runs, in.Search, seq)
			}
			seq = in.Search.Seq
		}
	}
	check("first", pass("first"))
	st, err := report.ReadSearch(ctx, store, "s")
	if err != nil || st == nil {
		t.Fatalf("search state: %v", err)
	}
	counts := map[search.Status]int{}
	for _, c := range st.Candidates {
		counts[c.Status]++
	}
	if len(st.Candidates) != 2000 || counts[search.StatusCompleted]+counts[search.StatusStopped] != 2000 || counts[search.StatusCompleted] < 2000/3 {
		t.Errorf("%d configurations, %v: want 2,000 completed or stopped, at least a third completed", len(st.Candidates), counts)
	}
	segments := len(f.trained)
	check("replay", pass("replay"))
	if len(f.trained) != segments {
		t.Errorf("the replay trained %d segments more", len(f.trained)-segments)
	}
	for seg, n := range f.trained {
		if n != 1 {
			t.Errorf("segment %s trained %d times", seg, n)
		}
	}
}
