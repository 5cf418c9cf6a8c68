package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/sfsweep/sfsweep/infra/devserver"
	"github.com/sfsweep/sfsweep/infra/s3gw"
	"github.com/sfsweep/sfsweep/workflows"
)

// startRemote starts a Temporal server and an S3 gateway that the commands reach through
// the environment, as on a cluster, and writes the end-to-end manifest: it returns the
// test's directory, the servers and the manifest's path. The servers stop with the test.
func startRemote(ctx context.Context, t *testing.T) (dir string, srv *devserver.Server, gw *s3gw.Gateway, manifest string) {
	t.Helper()
	dir = t.TempDir()
	srv, err := devserver.Start(ctx, devserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	gw, err = s3gw.Start(ctx, s3gw.Options{Root: filepath.Join(dir, "s3")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Stop() })
	setRemoteEnv(t, srv, gw)
	manifest = filepath.Join(dir, "e2e.yaml")
	if err := os.WriteFile(manifest, []byte(e2eManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, srv, gw, manifest
}

// A worker whose training attempt is abandoned as stuck exits with status 1 (-exit-on-stall,
// the default), naming the stall, so that its supervisor restarts it with a fresh device.
// A stall timeout of 1 ms makes the first gap between two passes of a real trial (a
// checkpoint write, at the latest) a stall.
func TestWorkerExitsOnStall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded Temporal server and trains (-short)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir, _, _, manifest := startRemote(ctx, t)
	workerDone := make(chan int, 1)
	var wlog syncBuffer
	go func() {
		workerDone <- runMain(ctx, []string{"worker", "-queue", "all", "-cache", filepath.Join(dir, "cache")}, &wlog, &wlog)
	}()
	var out, errb bytes.Buffer
	if code := runMain(ctx, []string{"submit", "-stall-timeout", "1ms", manifest}, &out, &errb); code != 0 {
		t.Fatalf("submit: exit %d: %s", code, errb.String())
	}
	select {
	case code := <-workerDone:
		if log := wlog.String(); code != 1 || !strings.Contains(log, "exiting to get a fresh device") || !strings.Contains(log, "the compute is stuck") {
			t.Fatalf("worker exit %d, want 1 with the stall named; log:\n%s", code, log)
		}
	case <-ctx.Done():
		t.Fatalf("the worker did not exit after a stall; log:\n%s", wlog.String())
	}
}

// The distributed mode against a Temporal server and an S3 endpoint reached by address
// and credentials from the environment, as on a cluster: a worker process serving both
// queues, submit, status until done, the same manifest submitted again (one sweep),
// tables regenerate.
func TestDistributedMode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded Temporal server and trains (-short)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir, srv, gw, manifest := startRemote(ctx, t)
	creds := gw.Credentials()

	wctx, stopWorker := context.WithCancel(ctx)
	workerDone := make(chan int)
	var wlog syncBuffer
	go func() {
		workerDone <- runMain(wctx, []string{"worker", "-queue", "all", "-cache", filepath.Join(dir, "cache")}, &wlog, &wlog)
	}()
	defer func() { stopWorker(); <-workerDone }()

	cmd := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := runMain(ctx, args, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		return strings.TrimSpace(out.String())
	}
	// the same manifest submitted twice at once is one sweep
	ids := make(chan string, 2)
	for range 2 {
		go func() {
			var out, errb bytes.Buffer
			if code := runMain(ctx, []string{"submit", manifest}, &out, &errb); code != 0 {
				t.Errorf("submit: exit %d: %s", code, errb.String())
			}
			ids <- strings.TrimSpace(out.String())
		}()
	}
	id, again := <-ids, <-ids
	if id != again || id == "" {
		t.Fatalf("the same manifest submitted twice at once gave sweeps %q and %q", id, again)
	}
	var p workflows.SweepProgress
	for !p.Done() || p.Total == 0 {
		time.Sleep(500 * time.Millisecond)
		if err := json.Unmarshal([]byte(cmd("status", "-json", id)), &p); err != nil {
			t.Fatal(err)
		}
		if ctx.Err() != nil {
			t.Fatalf("sweep not done: %+v\n%s", p, wlog.String())
		}
	}
	if p.Total != 3 || p.Completed != 2 || p.Diverged != 1 {
		t.Errorf("progress %+v", p)
	}
	keys := cmd("tables", "regenerate", id)
	want := []string{"sweeps/e2e/tables/c_e2e.md", "sweeps/e2e/tables/c_e2e.tex", "sweeps/e2e/plots/c_e2e-heatmap.png",
		"sweeps/e2e/plots/curves.svg", "sweeps/e2e/plots/decay-probe.png"}
	for _, w := range want {
		if !strings.Contains(keys, w) {
			t.Errorf("tables regenerate did not write %s", w)
		}
	}
	if t.Failed() {
		t.Errorf("tables regenerate wrote:\n%s", keys)
	}
	// the tables schedule, triggered now that the sweep has ended, rebuilds and retires itself
	c, err := client.Dial(client.Options{HostPort: srv.HostPort(), Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := c.ScheduleClient().GetHandle(ctx, workflows.TablesScheduleID(id))
	if _, err := h.Describe(ctx); err != nil {
		t.Fatalf("no tables schedule after submit: %v", err)
	}
	if err := h.Trigger(ctx, client.ScheduleTriggerOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := h.Describe(ctx); err != nil {
			break // deleted
		}
		if ctx.Err() != nil {
			t.Fatal("the tables schedule was not retired after the sweep ended")
		}
		time.Sleep(200 * time.Millisecond)
	}
	// the S3 secret appears in no workflow input, result or history, nor in the worker's log
	secret := creds.SecretAccessKey
	if len(secret) < 16 {
		t.Fatalf("a secret of %d characters", len(secret))
	}
	list, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: devserver.DefaultNamespace})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Executions) < 5 {
		t.Errorf("%d workflow executions listed, want the sweep, its tables, 3 trials and more", len(list.Executions))
	}
	// one run of the sweep workflow, one of each trial's
	runs := map[string]int{}
	for _, ex := range list.Executions {
		runs[ex.Execution.WorkflowId]++
	}
	trials := 0
	for wid, n := range runs {
		if n != 1 && wid != workflows.TablesWorkflowID(id) { // the tables workflow may run again after it ended
			t.Errorf("workflow %s ran %d times", wid, n)
		}
		if strings.HasPrefix(wid, id+"/trial-") {
			trials++
		}
	}
	if trials != 3 {
		t.Errorf("%d trial workflows, want 3", trials)
	}
	for _, ex := range list.Executions {
		it := c.GetWorkflowHistory(ctx, ex.Execution.WorkflowId, ex.Execution.RunId, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(ev.String(), secret) || strings.Contains(ev.String(), creds.AccessKeyID) {
				t.Errorf("workflow %s: event %d carries the S3 credentials", ex.Execution.WorkflowId, ev.EventId)
			}
		}
	}
	if strings.Contains(wlog.String(), secret) {
		t.Error("the worker's log carries the S3 secret")
	}
	md, err := os.ReadFile(filepath.Join(dir, "s3", gw.Bucket(), "sweeps", "e2e", "tables", "c_e2e.md"))
	if err != nil || !strings.Contains(string(md), "diverged (step") {
		t.Errorf("table in the bucket (%v):\n%s", err, md)
	}
}

func TestRemoteBadInput(t *testing.T) {
	t.Setenv("SFSWEEP_S3_BUCKET", "")
	var out, errb bytes.Buffer
	if code := runMain(context.Background(), []string{"worker", "-queue", "tpu"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `-queue = "tpu"`) {
		t.Errorf("worker -queue tpu: exit %d, %s", code, errb.String())
	}
	errb.Reset()
	if code := runMain(context.Background(), []string{"tables", "regenerate", "sweep-x"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "-s3-bucket") {
		t.Errorf("tables regenerate without a bucket: exit %d, %s", code, errb.String())
	}
}
