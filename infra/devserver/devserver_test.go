package devserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	workflowservice "go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/sfsweep/sfsweep/infra/temporalclient"
)

const taskQueue = "devserver-test"

// greet is the workflow under test: one activity, whose result it returns.
func greet(ctx workflow.Context, name string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var out string
	err := workflow.ExecuteActivity(ctx, shout, name).Get(ctx, &out)
	return out, err
}

// nap sleeps on a durable timer, then calls the activity.
func nap(ctx workflow.Context, name string) (string, error) {
	if err := workflow.Sleep(ctx, time.Second); err != nil {
		return "", err
	}
	return greet(ctx, name)
}

func shout(ctx context.Context, name string) (string, error) {
	if activity.GetInfo(ctx).ActivityType.Name == "" {
		return "", fmt.Errorf("no activity info")
	}
	return "HELLO " + strings.ToUpper(name), nil
}

func dial(t *testing.T, s *Server, ns string) client.Client {
	t.Helper()
	c, err := temporalclient.Dial(context.Background(), temporalclient.Options{Address: s.HostPort(), Namespace: ns})
	if err != nil {
		t.Fatalf("dial %s: %v", s.HostPort(), err)
	}
	return c
}

// TestRestartSurvives runs a workflow with an activity on a server backed by a SQLite file,
// restarts the server on the same file and reads the finished workflow's result again; a
// workflow waiting on a timer at the stop finishes after the restart, and new ones run.
func TestRestartSurvives(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	db := filepath.Join(t.TempDir(), "state", "temporal.db")
	opts := Options{DBPath: db, Namespaces: []string{"sfsweep", "other"}}
	if os.Getenv("DEVSERVER_LOG") != "" {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}

	t0 := time.Now()
	s, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first start (new file, schema set up): %v", time.Since(t0))
	defer s.Stop()

	c := dial(t, s, "sfsweep")
	// nap-1 resumes on another worker: let its sticky task time out after 1 s, not 5 s
	w := worker.New(c, taskQueue, worker.Options{StickyScheduleToStartTimeout: time.Second})
	w.RegisterWorkflow(greet)
	w.RegisterWorkflow(nap)
	w.RegisterActivity(shout)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "greet-1", TaskQueue: taskQueue}, greet, "river")
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if want := "HELLO RIVER"; got != want {
		t.Fatalf("workflow result = %q, want %q", got, want)
	}
	t.Logf("workflow with one activity: %v", time.Since(t0))
	// a workflow on a timer when the server stops finishes after the restart
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "nap-1", TaskQueue: taskQueue}, nap, "delta"); err != nil {
		t.Fatal(err)
	}
	waitTimerStarted(ctx, t, c, "nap-1")
	w.Stop()
	c.Close()
	t0 = time.Now()
	s.Stop()
	t.Logf("stop: %v", time.Since(t0))

	t0 = time.Now()
	s2, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("restart on %s: %v", db, err)
	}
	t.Logf("restart (existing file): %v", time.Since(t0))
	t0 = time.Now()
	defer s2.Stop()
	c2 := dial(t, s2, "sfsweep")
	defer c2.Close()
	got = ""
	if err := c2.GetWorkflow(ctx, "greet-1", "").Get(ctx, &got); err != nil {
		t.Fatalf("result after restart: %v", err)
	}
	if got != "HELLO RIVER" {
		t.Fatalf("result after restart = %q, want %q", got, "HELLO RIVER")
	}
	// the restarted server runs new workflows
	w2 := worker.New(c2, taskQueue, worker.Options{})
	w2.RegisterWorkflow(greet)
	w2.RegisterWorkflow(nap)
	w2.RegisterActivity(shout)
	if err := w2.Start(); err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	// Within 15 s: stale membership records of the first run once delayed matching by ~50 s.
	ctx15, cancel15 := context.WithTimeout(ctx, 15*time.Second)
	defer cancel15()
	t1 := time.Now()
	run2, err := c2.ExecuteWorkflow(ctx15, client.StartWorkflowOptions{ID: "greet-2", TaskQueue: taskQueue}, greet, "valley")
	if err != nil {
		t.Fatal(err)
	}
	if err := run2.Get(ctx15, &got); err != nil || got != "HELLO VALLEY" {
		t.Fatalf("workflow after restart = %q, %v", got, err)
	}
	t.Logf("workflow after restart: %v", time.Since(t1))
	if err := c2.GetWorkflow(ctx15, "nap-1", "").Get(ctx15, &got); err != nil || got != "HELLO DELTA" {
		t.Fatalf("workflow on a timer across the restart = %q, %v", got, err)
	}
	t.Logf("workflow on a timer across the restart: done %v after the restart", time.Since(t0))

	// the second namespace exists as well, on both starts
	c3 := dial(t, s2, "other")
	defer c3.Close()
	if _, err := c3.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "other"}); err != nil {
		t.Fatalf("describe namespace other: %v", err)
	}
}

// TestMemory starts two in-memory servers side by side: each has its own database and ports.
func TestMemory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t0 := time.Now()
	a, err := Start(ctx, Options{UI: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("start in memory, with the UI: %v", time.Since(t0))
	defer a.Stop()
	// the UI serves its page, and its API reaches the frontend
	page := httpGet(t, "http://"+a.UIAddr()+"/")
	if !strings.Contains(page, "<html") {
		t.Fatalf("UI page: %.200q", page)
	}
	if ns := httpGet(t, "http://"+a.UIAddr()+"/api/v1/namespaces"); !strings.Contains(ns, `"default"`) {
		t.Fatalf("UI namespaces: %.300q", ns)
	}
	b, err := Start(ctx, Options{HTTPPort: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	if a.HostPort() == b.HostPort() {
		t.Fatalf("two servers on one address %s", a.HostPort())
	}
	if b.UIAddr() != "" {
		t.Fatalf("UIAddr = %q without the UI", b.UIAddr())
	}
	if b.HTTPAddr() != "" || a.HTTPAddr() == "" {
		t.Fatalf("HTTPAddr = %q, %q; want set, empty", a.HTTPAddr(), b.HTTPAddr())
	}
	ca, cb := dial(t, a, DefaultNamespace), dial(t, b, DefaultNamespace)
	defer ca.Close()
	defer cb.Close()
	wa := worker.New(ca, taskQueue, worker.Options{})
	wa.RegisterWorkflow(greet)
	wa.RegisterActivity(shout)
	if err := wa.Start(); err != nil {
		t.Fatal(err)
	}
	defer wa.Stop()
	run, err := ca.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "only-on-a", TaskQueue: taskQueue}, greet, "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.DescribeWorkflowExecution(ctx, "only-on-a", ""); err == nil {
		t.Fatal("workflow of server a found on server b")
	}
	b.Stop()
	b.Stop() // a second Stop is a no-op
}

func TestBadOptions(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Namespaces: []string{"a b"}}, `namespace "a b"`},
		{Options{Retention: -time.Hour}, "retention -1h0m0s"},
		{Options{DBPath: "x?mode=memory"}, `db path "x?mode=memory"`},
		{Options{HTTPPort: -2}, "HTTP port -2"},
		{Options{UIPort: 70000}, "UI port 70000"},
	} {
		_, err := Start(context.Background(), tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start(%+v) = %v, want an error naming %s", tc.opts, err, tc.want)
		}
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %.200q, %v", url, resp.StatusCode, b, err)
	}
	return string(b)
}

// waitTimerStarted waits until the history of workflow id holds a started timer, so that
// no workflow task of it is in flight.
func waitTimerStarted(ctx context.Context, t *testing.T, c client.Client, id string) {
	t.Helper()
	for ctx.Err() == nil {
		it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			if e.GetEventType() == enumspb.EVENT_TYPE_TIMER_STARTED {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("workflow %s started no timer", id)
}
