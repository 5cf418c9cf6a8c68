package sweepclient

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/workflows"
)

// fakeClient is the part of a Temporal client that Submit and Wait use; it logs each call
// in order. The embedded interface is nil: any other method panics.
type fakeClient struct {
	client.Client
	log      *[]string
	started  client.StartWorkflowOptions
	args     []any
	startErr error
	progress workflows.SweepProgress
	queries  int
	sched    fakeSchedules
}

func (c *fakeClient) ExecuteWorkflow(_ context.Context, o client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	*c.log = append(*c.log, "start "+o.ID)
	c.started, c.args = o, args
	if c.startErr != nil {
		return nil, c.startErr
	}
	return &fakeRun{id: o.ID}, nil
}

func (c *fakeClient) ScheduleClient() client.ScheduleClient {
	c.sched.log = c.log
	return &c.sched
}

func (c *fakeClient) QueryWorkflow(_ context.Context, id, _, query string, _ ...any) (converter.EncodedValue, error) {
	if query != workflows.QueryProgress {
		return nil, errors.New("unknown query " + query)
	}
	c.queries++
	p, err := converter.GetDefaultDataConverter().ToPayloads(c.progress)
	return client.NewValue(p), err
}

type fakeSchedules struct {
	client.ScheduleClient
	log     *[]string
	created client.ScheduleOptions
	err     error
}

func (s *fakeSchedules) Create(_ context.Context, o client.ScheduleOptions) (client.ScheduleHandle, error) {
	*s.log = append(*s.log, "schedule "+o.ID)
	s.created = o
	return nil, s.err
}

// logStore logs its puts in the client's log.
type logStore struct {
	blob.Store
	log *[]string
	err error
}

func (s logStore) Put(ctx context.Context, key string, data []byte) error {
	*s.log = append(*s.log, "put "+key)
	if s.err != nil {
		return s.err
	}
	return s.Store.Put(ctx, key, data)
}

// fakeRun ends with result once end is closed.
type fakeRun struct {
	client.WorkflowRun
	id     string
	end    chan struct{}
	result workflows.SweepResult
	err    error
}

func (r *fakeRun) GetID() string { return r.id }

func (r *fakeRun) Get(ctx context.Context, v any) error {
	select {
	case <-r.end:
	case <-ctx.Done():
		return ctx.Err()
	}
	*v.(*workflows.SweepResult) = r.result
	return r.err
}

func newFake(t *testing.T) (*fakeClient, logStore) {
	var log []string
	dir, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &fakeClient{log: &log}, logStore{Store: dir, log: &log}
}

// Submit stores the manifest, then starts the sweep's workflow joining one already
// running, then creates its tables schedule, in that order, with the input unchanged.
func TestSubmit(t *testing.T) {
	ctx := context.Background()
	c, store := newFake(t)
	in := workflows.SweepInput{SweepID: "sweep-a1", ManifestKey: "sweeps/sweep-a1/manifest.yaml", Window: 2, HeartbeatTimeout: time.Minute}
	run, err := Submit(ctx, c, store, []byte("name: a\n"), in)
	if err != nil {
		t.Fatal(err)
	}
	if run.GetID() != in.SweepID {
		t.Errorf("run %s, want %s", run.GetID(), in.SweepID)
	}
	want := []string{"put " + in.ManifestKey, "start " + in.SweepID, "schedule " + workflows.TablesScheduleID(in.SweepID)}
	if strings.Join(*c.log, "; ") != strings.Join(want, "; ") {
		t.Errorf("calls %q, want %q", *c.log, want)
	}
	if b, err := store.Get(ctx, in.ManifestKey); err != nil || string(b) != "name: a\n" {
		t.Errorf("stored manifest %q (%v)", b, err)
	}
	o := c.started
	if o.ID != in.SweepID || o.TaskQueue != workflows.QueueCPU || o.WorkflowIDConflictPolicy != enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING {
		t.Errorf("start options %+v", o)
	}
	if len(c.args) != 1 {
		t.Fatalf("workflow args %v", c.args)
	}
	got, _ := json.Marshal(c.args[0])
	wantIn, _ := json.Marshal(in)
	if string(got) != string(wantIn) {
		t.Errorf("input %s, want %s", got, wantIn)
	}
	a, ok := c.sched.created.Action.(*client.ScheduleWorkflowAction)
	if !ok || len(a.Args) != 1 || a.Args[0] != (workflows.BuildTablesInput{SweepID: in.SweepID, ManifestKey: in.ManifestKey}) {
		t.Errorf("schedule action %+v", c.sched.created.Action)
	}
}

// A schedule that already exists is the one a previous submission made: no error.
func TestSubmitAgain(t *testing.T) {
	c, store := newFake(t)
	c.sched.err = temporal.ErrScheduleAlreadyRunning
	if _, err := Submit(context.Background(), c, store, []byte("x"), workflows.SweepInput{SweepID: "s", ManifestKey: "sweeps/s/manifest.yaml"}); err != nil {
		t.Fatal(err)
	}
}

// A failed step stops the sequence: nothing after it happens, and its error says which.
func TestSubmitFails(t *testing.T) {
	in := workflows.SweepInput{SweepID: "s", ManifestKey: "sweeps/s/manifest.yaml"}
	boom := errors.New("boom")
	for _, tc := range []struct {
		name   string
		breaks func(*fakeClient, *logStore)
		calls  int
		want   string
	}{
		{"put", func(_ *fakeClient, s *logStore) { s.err = boom }, 1, "store the manifest: boom"},
		{"start", func(c *fakeClient, _ *logStore) { c.startErr = boom }, 2, "start sweep: boom"},
		{"schedule", func(c *fakeClient, _ *logStore) { c.sched.err = boom }, 3, "tables schedule: boom"},
	} {
		c, store := newFake(t)
		tc.breaks(c, &store)
		_, err := Submit(context.Background(), c, store, []byte("x"), in)
		if !errors.Is(err, boom) || err.Error() != tc.want {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
		if len(*c.log) != tc.calls {
			t.Errorf("%s: calls %q, want %d", tc.name, *c.log, tc.calls)
		}
	}
}

// Wait shows the sweep's progress while it runs and returns its result.
func TestWait(t *testing.T) {
	c, _ := newFake(t)
	c.progress = workflows.SweepProgress{Total: 5, Completed: 2}
	run := &fakeRun{id: "s", end: make(chan struct{}), result: workflows.SweepResult{Progress: workflows.SweepProgress{Total: 5, Completed: 5}}}
	shown := 0
	res, err := Wait(context.Background(), c, run, time.Millisecond, func(p workflows.SweepProgress) {
		if p.Total != 5 || p.Completed != 2 {
			t.Errorf("shown %+v, want %+v", p, c.progress)
		}
		if shown++; shown == 3 {
			close(run.end)
		}
	})
	if err != nil || res.Progress.Completed != 5 {
		t.Fatalf("result %+v, %v", res, err)
	}
	if shown < 3 || c.queries < 3 {
		t.Errorf("progress shown %d times (%d queries), want ≥ 3", shown, c.queries)
	}
}

// Wait returns the run's error, and ctx's once ctx is done.
func TestWaitErrors(t *testing.T) {
	c, _ := newFake(t)
	boom := errors.New("boom")
	run := &fakeRun{id: "s", end: make(chan struct{}), err: boom}
	close(run.end)
	if _, err := Wait(context.Background(), c, run, time.Hour, func(workflows.SweepProgress) {}); !errors.Is(err, boom) {
		t.Errorf("error %v, want %v", err, boom)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	run = &fakeRun{id: "s", end: make(chan struct{})}
	if _, err := Wait(ctx, c, run, time.Hour, func(workflows.SweepProgress) {}); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want %v", err, context.Canceled)
	}
}

// Progress decodes the sweep's answer to the progress query.
func TestProgress(t *testing.T) {
	c, _ := newFake(t)
	c.progress = workflows.SweepProgress{Total: 7, Skipped: 1, Completed: 3, Diverged: 1, Failed: 1, Running: []string{"t1"}}
	p, err := Progress(context.Background(), c, "s")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(p)
	want, _ := json.Marshal(c.progress)
	if string(got) != string(want) {
		t.Errorf("progress %s, want %s", got, want)
	}
}
