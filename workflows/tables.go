package workflows

import (
	"go.temporal.io/sdk/workflow"
)

// Tables rebuilds a sweep's tables whenever results land: each SignalResult marks them
// stale, and once no new signal has come for Debounce, or MaxWait after the first result
// not yet built, the BuildTables activity rebuilds every table. SignalSweepDone builds a
// last time and ends the workflow.
func Tables(ctx workflow.Context, in TablesInput) (TablesState, error) {
	return newTables(ctx, in).run()
}

// tables is a run of the Tables workflow.
type tables struct {
	ctx     workflow.Context
	in      TablesInput  // with its defaults; continue-as-new carries it on
	st      *TablesState // &in.State: what QueryTablesStatus answers
	cpu     workflow.Context
	results workflow.ReceiveChannel // SignalResult
	done    workflow.ReceiveChannel // SignalSweepDone
	bounded bool                    // MaxWait bounds the debounce (versionTablesMaxWait)
	builds  int                     // builds of this run
}

// newTables begins a run of Tables with in.
func newTables(ctx workflow.Context, in TablesInput) *tables {
	if in.Debounce <= 0 {
		in.Debounce = DefaultDebounce
	}
	t := &tables{ctx: ctx, in: in}
	t.st = &t.in.State
	t.cpu = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: QueueCPU, StartToCloseTimeout: cpuStartToClose, HeartbeatTimeout: cpuHeartbeat, RetryPolicy: RetryTransient,
	})
	t.results = workflow.GetSignalChannel(ctx, SignalResult)
	t.done = workflow.GetSignalChannel(ctx, SignalSweepDone)
	return t
}

// run is the workflow: wait for results, debounce them, build; end once the sweep is
// done, or continue as new once this run has built maxBuildsPerRun times.
func (t *tables) run() (TablesState, error) {
	if err := workflow.SetQueryHandler(t.ctx, QueryTablesStatus, t.state); err != nil {
		return *t.st, err
	}
	t.bounded = workflow.GetVersion(t.ctx, versionTablesMaxWait, workflow.DefaultVersion, 1) == 1
	if t.in.MaxWait <= 0 {
		t.in.MaxWait = DefaultTablesMaxWait
	}
	for {
		// wait for a signal, unless results are pending from before a continue-as-new or
		// the sweep has ended
		if !t.st.Pending && !t.st.Finished {
			sel := workflow.NewSelector(t.ctx)
			t.addSignals(sel)
			sel.Select(t.ctx)
		}
		t.debounce()
		if t.st.Pending || t.st.Finished {
			if err := t.build(); err != nil {
				return *t.st, err
			}
			t.builds++
		}
		if t.st.Finished {
			// drain what came meanwhile: the last build already saw every result
			for t.results.ReceiveAsync(nil) {
				t.st.Signals++
			}
			return *t.st, nil
		}
		if t.builds >= maxBuildsPerRun || workflow.GetInfo(t.ctx).GetContinueAsNewSuggested() {
			for t.results.ReceiveAsync(nil) {
				t.st.Signals++
				t.st.Pending = true
			}
			// the sweep's end, signalled during the last build, is not carried across
			// continue-as-new: this run builds once more and ends
			if workflow.GetVersion(t.ctx, versionTablesDoneBeforeCAN, workflow.DefaultVersion, 1) == 1 && t.done.ReceiveAsync(nil) {
				t.st.Finished = true
				continue
			}
			return *t.st, workflow.NewContinueAsNewError(t.ctx, Tables, t.in)
		}
	}
}

// state answers QueryTablesStatus.
func (t *tables) state() (TablesState, error) { return *t.st, nil }

// addSignals adds the workflow's signals to sel.
func (t *tables) addSignals(sel workflow.Selector) {
	sel.AddReceive(t.results, t.onResult)
	sel.AddReceive(t.done, t.onDone)
}

// onResult receives a SignalResult: the tables are stale.
func (t *tables) onResult(c workflow.ReceiveChannel, _ bool) {
	c.Receive(t.ctx, nil)
	t.st.Signals++
	t.st.Pending = true
}

// onDone receives SignalSweepDone.
func (t *tables) onDone(c workflow.ReceiveChannel, _ bool) {
	c.Receive(t.ctx, nil)
	t.st.Finished = true
}

// debounce absorbs signals until Debounce passes without one, or MaxWait in all (bounded),
// or the sweep is done.
func (t *tables) debounce() {
	deadline := workflow.Now(t.ctx).Add(t.in.MaxWait)
	for !t.st.Finished {
		wait := t.in.Debounce
		if t.bounded {
			left := deadline.Sub(workflow.Now(t.ctx))
			if left <= 0 {
				return
			}
			wait = min(wait, left)
		}
		timerCtx, cancelTimer := workflow.WithCancel(t.ctx)
		quiet := false
		sel := workflow.NewSelector(t.ctx)
		sel.AddFuture(workflow.NewTimer(timerCtx, wait), func(workflow.Future) { quiet = true })
		t.addSignals(sel)
		sel.Select(t.ctx)
		cancelTimer()
		if quiet {
			return
		}
	}
}

// build runs the BuildTables activity.
func (t *tables) build() error {
	t.st.Pending = false
	t.st.Builds++
	return workflow.ExecuteActivity(t.cpu, ActivityBuildTables, BuildTablesInput{SweepID: t.in.SweepID, ManifestKey: t.in.ManifestKey}).Get(t.ctx, nil)
}

// RegenerateTables is the action of a sweep's tables schedule: rebuild every table, then
// retire the schedule if the sweep has ended (its Tables workflow builds the last tables).
func RegenerateTables(ctx workflow.Context, in BuildTablesInput) error {
	cpu := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: QueueCPU, StartToCloseTimeout: cpuStartToClose, HeartbeatTimeout: cpuHeartbeat, RetryPolicy: RetryTransient,
	})
	if err := workflow.ExecuteActivity(cpu, ActivityBuildTables, in).Get(ctx, nil); err != nil {
		return err
	}
	return workflow.ExecuteActivity(cpu, ActivityRetireSchedule, RetireInput{SweepID: in.SweepID, ScheduleID: TablesScheduleID(in.SweepID)}).Get(ctx, nil)
}
