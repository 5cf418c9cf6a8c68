package workflows

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/sfsweep/sfsweep/internal/probe"
	"github.com/sfsweep/sfsweep/internal/status"
)

// fakeWorld stands in for the store and the trainer in workflow unit tests: it records
// which activities ran, how many Train attempts were in flight at once, and how trials
// end (by trial ID: "div" diverges, "bad" has an invalid config, "flaky" fails twice
// before it succeeds, "broken" fails every attempt).
type fakeWorld struct {
	mu                  sync.Mutex
	trials              []TrialRef
	pageSize            int            // of the stored plan
	pagesRead           []int          // ReadPlan calls
	shortPages          bool           // ReadPlan returns a page without its last trial
	trained             map[string]int // attempts
	inFlight, maxFlight int
	failed              []string
	notified            []NotifyInput
	probes              []DecayProbeInput
	branches            []LRDecayInput
	interpolations      []InterpolateInput
	builds              int
	retired             []RetireInput
}

func (f *fakeWorld) register(env *testsuite.TestWorkflowEnvironment) {
	env.RegisterWorkflow(Trial)
	env.RegisterWorkflow(Tables)
	env.RegisterActivityWithOptions(func(ctx context.Context, in PlanInput) (PlanOutput, error) {
		if !in.Paged {
			return PlanOutput{Trials: f.trials}, nil
		}
		out := PlanOutput{Prefix: "plans/run", PageSize: f.pageSize, Total: len(f.trials)}
		for _, t := range f.trials {
			if t.Done {
				out.Skipped++
			}
		}
		return out, nil
	}, activity.RegisterOptions{Name: ActivityPlan})
	env.RegisterActivityWithOptions(func(ctx context.Context, in ReadPlanInput) ([]TrialRef, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.pagesRead = append(f.pagesRead, in.Page)
		if in.Prefix != "plans/run" {
			return nil, fmt.Errorf("plan prefix %q", in.Prefix)
		}
		lo := in.Page * f.pageSize
		page := f.trials[lo:min(lo+f.pageSize, len(f.trials))]
		if f.shortPages {
			page = page[:len(page)-1]
		}
		return page, nil
	}, activity.RegisterOptions{Name: ActivityReadPlan})
	env.RegisterActivityWithOptions(func(ctx context.Context, in TrainInput) (TrainOutput, error) {
		f.mu.Lock()
		f.trained[in.TrialID]++
		attempt := f.trained[in.TrialID]
		f.inFlight++
		f.maxFlight = max(f.maxFlight, f.inFlight)
		f.mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
		switch in.TrialID {
		case "div":
			return TrainOutput{Status: status.Diverged, DivergedAt: 7}, nil
		case "bad":
			return TrainOutput{}, temporal.NewNonRetryableApplicationError("optimizer.beta1 = 1: must be in [0, 1)", ErrorInvalidConfig, nil)
		case "flaky":
			if attempt < 3 {
				return TrainOutput{}, errors.New("CUDA error: an illegal memory access")
			}
		case "broken":
			return TrainOutput{}, errors.New("CUDA error: uncorrectable ECC error encountered")
		}
		arithmetic := "cpu-fp32/2"
		if in.TrialID == "c" {
			arithmetic = "cpu-fp32/1" // trained by an older engine
		}
		return TrainOutput{Status: status.Completed, Checkpoints: []int{10, 20}, Arithmetic: arithmetic}, nil
	}, activity.RegisterOptions{Name: ActivityTrain})
	env.RegisterActivityWithOptions(func(ctx context.Context, in DecayProbeInput) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.probes = append(f.probes, in)
		return nil
	}, activity.RegisterOptions{Name: ActivityDecayProbe})
	env.RegisterActivityWithOptions(func(ctx context.Context, in LRDecayInput) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.branches = append(f.branches, in)
		return nil
	}, activity.RegisterOptions{Name: ActivityLRDecay})
	env.RegisterActivityWithOptions(func(ctx context.Context, in InterpolateInput) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.interpolations = append(f.interpolations, in)
		return nil
	}, activity.RegisterOptions{Name: ActivityInterpolate})
	env.RegisterActivityWithOptions(func(ctx context.Context, in RecordFailedInput) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.failed = append(f.failed, in.TrialID)
		return nil
	}, activity.RegisterOptions{Name: ActivityRecordFailed})
	env.RegisterActivityWithOptions(func(ctx context.Context, in NotifyInput) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.notified = append(f.notified, in)
		return nil
	}, activity.RegisterOptions{Name: ActivityNotifyTables})
	env.RegisterActivityWithOptions(func(ctx context.Context, in BuildTablesInput) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.builds++
		return nil
	}, activity.RegisterOptions{Name: ActivityBuildTables})
	env.RegisterActivityWithOptions(func(ctx context.Context, in RetireInput) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.retired = append(f.retired, in)
		return nil
	}, activity.RegisterOptions{Name: ActivityRetireSchedule})
}

func newWorld(ids ...string) *fakeWorld {
	f := &fakeWorld{trained: map[string]int{}, pageSize: 3}
	for _, id := range ids {
		f.trials = append(f.trials, TrialRef{ID: id, Done: id == "done"})
	}
	return f
}

func TestSweep(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	w := newWorld("a", "done", "div", "bad", "flaky", "b", "c", "broken")
	w.register(env)
	env.ExecuteWorkflow(Sweep, SweepInput{SweepID: "s", ManifestKey: "m", Window: 2})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	var res SweepResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	p := res.Progress
	if p.Total != 8 || p.Skipped != 1 || p.Completed != 4 || p.Diverged != 1 || p.Failed != 2 || !p.Done() || len(p.Running) != 0 {
		t.Errorf("progress %+v", p)
	}
	if !maps.Equal(p.Engines, map[string]int{"cpu-fp32/2": 3, "cpu-fp32/1": 1}) {
		t.Errorf("engines %v: want the completed trials counted by their engine's arithmetic", p.Engines)
	}
	var q SweepProgress
	v, err := env.QueryWorkflow(QueryProgress)
	if err == nil {
		err = v.Get(&q)
	}
	if err != nil || q.Total != 8 || q.Completed != 4 || q.Runs != 1 {
		t.Errorf("progress query: %+v, %v", q, err)
	}
	if w.trained["done"] != 0 || w.trained["bad"] != 1 || w.trained["flaky"] != 3 || w.trained["a"] != 1 || w.trained["broken"] != 8 {
		t.Errorf("train attempts %v: a finished trial is never retrained, an invalid one never retried, a transient failure retried, a permanent one 8 times", w.trained)
	}
	if w.maxFlight > 2 {
		t.Errorf("%d trials trained at once, window 2", w.maxFlight)
	}
	slices.Sort(w.failed)
	if !slices.Equal(w.failed, []string{"bad", "broken"}) {
		t.Errorf("recorded failures %v", w.failed)
	}
	// every trial that ran notifies the tables, and the sweep's end does once more
	if n := len(w.notified); n != 8 || !w.notified[n-1].Done {
		t.Errorf("%d notifications, last %+v", n, w.notified[len(w.notified)-1])
	}
}

// A sweep's retry budget reaches every trial: with 2 attempts the trial that needs 3 fails.
func TestSweepRetryBudget(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	w := newWorld("a", "flaky", "broken")
	w.register(env)
	env.ExecuteWorkflow(Sweep, SweepInput{SweepID: "s", ManifestKey: "m", Retry: TrainRetry{MaxAttempts: 2, InitialInterval: time.Millisecond}})
	var res SweepResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if p := res.Progress; p.Completed != 1 || p.Failed != 2 {
		t.Errorf("progress %+v", p)
	}
	if w.trained["a"] != 1 || w.trained["flaky"] != 2 || w.trained["broken"] != 2 {
		t.Errorf("train attempts %v, want 1, 2, 2", w.trained)
	}
}

func TestTrainRetry(t *testing.T) {
	def := TrainRetry{}.Policy()
	if def.MaximumAttempts != 8 || def.InitialInterval != time.Second || def.MaximumInterval != time.Minute || def == RetryTransient {
		t.Errorf("zero TrainRetry: %+v, want a copy of RetryTransient", def)
	}
	p := TrainRetry{MaxAttempts: 3, InitialInterval: 10 * time.Millisecond, MaximumInterval: 50 * time.Millisecond}.Policy()
	if p.MaximumAttempts != 3 || p.InitialInterval != 10*time.Millisecond || p.MaximumInterval != 50*time.Millisecond ||
		p.BackoffCoefficient != 2 || !slices.Equal(p.NonRetryableErrorTypes, []string{ErrorInvalidConfig}) || RetryTransient.MaximumAttempts != 8 {
		t.Errorf("policy %+v (RetryTransient %+v)", p, RetryTransient)
	}
}

func TestSweepDecayProbes(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	w := newWorld()
	w.trials = []TrialRef{{ID: "a", Probes: probe.Set{Decay: &probe.Decay{Steps: 5, PeakLR: 1e-4}}}, {ID: "div", Probes: probe.Set{Decay: &probe.Decay{Steps: 5}}},
		{ID: "b", Probes: probe.Set{Decay: &probe.Decay{At: []int{20}, Steps: 3}}}}
	w.register(env)
	env.ExecuteWorkflow(Sweep, SweepInput{SweepID: "s", ManifestKey: "m"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	// a: every checkpoint (10, 20); div: none (diverged); b: the step asked for
	got := map[string][]int{}
	for _, p := range w.probes {
		got[p.TrialID] = append(got[p.TrialID], p.Step)
	}
	if len(got["a"]) != 2 || len(got["div"]) != 0 || len(got["b"]) != 1 || got["b"][0] != 20 {
		t.Errorf("decay probes %v", got)
	}
}

// LR-decay branches run from the checkpoints asked for (every one if none), with the
// trial's fraction, after its decay probes; a diverged trial has none.
func TestSweepLRDecays(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	w := newWorld()
	w.trials = []TrialRef{{ID: "a", Probes: probe.Set{LRDecay: &probe.LRDecay{Frac: 0.2}}}, {ID: "div", Probes: probe.Set{LRDecay: &probe.LRDecay{Frac: 0.2}}},
		{ID: "b", Probes: probe.Set{LRDecay: &probe.LRDecay{At: []int{10}, Frac: 0.5}, Decay: &probe.Decay{Steps: 3}}},
		{ID: "sf", Probes: probe.Set{Decay: &probe.Decay{Steps: 3}}}}
	w.register(env)
	env.ExecuteWorkflow(Sweep, SweepInput{SweepID: "s", ManifestKey: "m"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, b := range w.branches {
		got[b.TrialID] = append(got[b.TrialID], fmt.Sprintf("%d@%g", b.Step, b.Frac))
	}
	slices.Sort(got["a"])
	want := map[string][]string{"a": {"10@0.2", "20@0.2"}, "b": {"10@0.5"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("branches %v, want %v", got, want)
	}
	if len(w.probes) != 4 { // b and sf: checkpoints 10 and 20
		t.Errorf("%d decay probes, want 4", len(w.probes))
	}
}

// A trial's interpolation runs once it has completed, plain and, where asked, to the end
// of a decay branch; a diverged trial has none.
func TestSweepInterpolations(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	w := newWorld()
	plain, decayed := &probe.Interpolation{From: 10, To: 20, Points: 11}, &probe.Interpolation{From: 10, To: 20, Points: 5, Decayed: true}
	w.trials = []TrialRef{{ID: "sf", Probes: probe.Set{Interpolate: plain}}, {ID: "adamw", Probes: probe.Set{Interpolate: decayed}},
		{ID: "div", Probes: probe.Set{Interpolate: decayed}}}
	w.register(env)
	env.ExecuteWorkflow(Sweep, SweepInput{SweepID: "s", ManifestKey: "m"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range w.interpolations {
		got = append(got, fmt.Sprintf("%s %d-%d n%d decayed=%v", in.TrialID, in.From, in.To, in.Points, in.Decayed))
	}
	slices.Sort(got)
	want := []string{"adamw 10-20 n5 decayed=false", "adamw 10-20 n5 decayed=true", "sf 10-20 n11 decayed=false"}
	if !slices.Equal(got, want) {
		t.Errorf("interpolations %v, want %v", got, want)
	}
}

// A sweep larger than a run's share continues as new, carrying its state.
func TestSweepContinueAsNew(t *testing.T) {
	defer func(n int) { maxChildrenPerRun = n }(maxChildrenPerRun)
	maxChildrenPerRun = 3
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	ids := make([]string, 8)
	for i := range ids {
		ids[i] = fmt.Sprintf("t%d", i)
	}
	w := newWorld(ids...)
	w.pageSize = 4 // runs of 3 children: the second and third runs begin inside a page
	w.register(env)
	env.ExecuteWorkflow(Sweep, SweepInput{SweepID: "s", ManifestKey: "m", Window: 2})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("error %v, want continue-as-new", err)
	}
	var next SweepInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if !next.Planned || next.Next != 3 || len(next.Trials) != 0 || next.PlanPrefix != "plans/run" || next.PlanPageSize != 4 ||
		next.Progress.Total != 8 || next.Progress.Completed != 3 || next.Progress.Runs != 1 {
		t.Errorf("continued with %+v", next)
	}
	if len(w.trained) != 3 || !slices.Equal(w.pagesRead, []int{0}) {
		t.Errorf("%d trials trained by the first run reading plan pages %v, want 3 from page 0", len(w.trained), w.pagesRead)
	}
	// the following runs read the plan on from where the first stopped, to the end
	for runs := 2; ; runs++ {
		env := s.NewTestWorkflowEnvironment()
		w.register(env)
		env.ExecuteWorkflow(Sweep, next)
		err := env.GetWorkflowError()
		if err == nil {
			var res SweepResult
			if err := env.GetWorkflowResult(&res); err != nil {
				t.Fatal(err)
			}
			if p := res.Progress; p.Total != 8 || p.Completed != 8 || p.Runs != runs {
				t.Errorf("last run's progress %+v", p)
			}
			break
		}
		if !errors.As(err, &can) || runs > 4 {
			t.Fatalf("run %d: %v", runs, err)
		}
		next = SweepInput{}
		if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
			t.Fatal(err)
		}
	}
	if len(w.trained) != 8 || !slices.Equal(w.pagesRead, []int{0, 0, 1, 1}) {
		t.Errorf("trained %v reading plan pages %v, want all 8 once, pages 0, 0, 1, 1 (each run reads the page it starts in)", w.trained, w.pagesRead)
	}
	for id, n := range w.trained {
		if n != 1 {
			t.Errorf("trial %s trained %d times", id, n)
		}
	}
}

// A stored plan whose page is shorter than its size says fails the sweep with the reason.
func TestSweepShortPlanPage(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	w := newWorld("a", "b", "c", "d")
	w.register(env)
	w.shortPages = true // each page of 3 holds 2
	env.ExecuteWorkflow(Sweep, SweepInput{SweepID: "s", ManifestKey: "m"})
	if err := env.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), "plan page 0 holds 2 trials, trial 2 of 4 wanted") {
		t.Errorf("error %v", err)
	}
}

func TestSweepCancel(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	w := newWorld("a", "b", "c", "d", "e")
	w.register(env)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalCancel, nil) }, 0)
	env.ExecuteWorkflow(Sweep, SweepInput{SweepID: "s", ManifestKey: "m", Window: 1})
	if err := env.GetWorkflowError(); !temporal.IsCanceledError(err) {
		t.Fatalf("error %v, want canceled", err)
	}
	if len(w.trained) > 1 {
		t.Errorf("%d trials started after the cancel signal", len(w.trained))
	}
}

// Results that land close together are built once; a later one builds again; the sweep's
// end builds a last time and ends the workflow.
func TestTablesDebounce(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	w := newWorld()
	w.register(env)
	for i, at := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, time.Minute} {
		id := fmt.Sprint(i)
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalResult, id) }, at)
	}
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalSweepDone, "") }, 2*time.Minute)
	env.ExecuteWorkflow(Tables, TablesInput{SweepID: "s", ManifestKey: "m", Debounce: 5 * time.Second})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var st TablesState
	if err := env.GetWorkflowResult(&st); err != nil {
		t.Fatal(err)
	}
	if w.builds != 3 || st.Builds != 3 || st.Signals != 4 || !st.Finished {
		t.Errorf("%d builds, state %+v; want 3 builds (signals 0–2 together, 3, the end)", w.builds, st)
	}
}

// Results that keep landing sooner than the debounce are still built every MaxWait: a
// signal a second for three minutes, a 5 s debounce and a 30 s bound build at 31, 62, 93,
// 124 and 155 s, after the last signal (180 s) is quiet for 5 s, and at the end.
func TestTablesMaxWait(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	w := newWorld()
	w.register(env)
	for i := 1; i <= 180; i++ {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalResult, fmt.Sprint(i)) }, time.Duration(i)*time.Second)
	}
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalSweepDone, "") }, 4*time.Minute)
	env.ExecuteWorkflow(Tables, TablesInput{SweepID: "s", ManifestKey: "m", Debounce: 5 * time.Second, MaxWait: 30 * time.Second})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var st TablesState
	if err := env.GetWorkflowResult(&st); err != nil {
		t.Fatal(err)
	}
	if w.builds != 7 || st.Builds != 7 || st.Signals != 180 || !st.Finished {
		t.Errorf("%d builds, state %+v; want 7 builds of 180 signals", w.builds, st)
	}
}

// The sweep's end signalled while the build before a continue-as-new runs is not lost: the
// run builds once more and ends, rather than continuing as new and waiting for a signal
// that has been sent already.
func TestTablesDoneDuringLastBuild(t *testing.T) {
	defer func(n int) { maxBuildsPerRun = n }(maxBuildsPerRun)
	maxBuildsPerRun = 1
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	w := newWorld()
	w.register(env)
	sent := false
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == ActivityBuildTables && !sent {
			sent = true
			env.SignalWorkflow(SignalSweepDone, "")
		}
	})
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalResult, "a") }, time.Second)
	env.ExecuteWorkflow(Tables, TablesInput{SweepID: "s", ManifestKey: "m", Debounce: 5 * time.Second})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("%v: the run continued as new with the sweep's end unread", err)
	}
	var st TablesState
	if err := env.GetWorkflowResult(&st); err != nil {
		t.Fatal(err)
	}
	if w.builds != 2 || !st.Finished {
		t.Errorf("%d builds, state %+v; want the result's build and the end's", w.builds, st)
	}
}

// The schedule's action rebuilds the tables, then asks to retire the schedule.
func TestRegenerateTables(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	w := newWorld()
	w.register(env)
	env.ExecuteWorkflow(RegenerateTables, BuildTablesInput{SweepID: "s", ManifestKey: "m"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if w.builds != 1 || len(w.retired) != 1 || w.retired[0].ScheduleID != TablesScheduleID("s") {
		t.Errorf("%d builds, retired %+v", w.builds, w.retired)
	}
}
