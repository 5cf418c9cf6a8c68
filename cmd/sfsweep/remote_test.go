package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/sfsweep/sfsweep/infra/devserver"
	"github.com/sfsweep/sfsweep/infra/s3gw"
	"github.com/sfsweep/sfsweep/sweepclient"
	"github.com/sfsweep/sfsweep/training/backend"
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
	ctx := serverTest(t, 3*time.Minute, "starts the embedded Temporal server and trains")
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
	ctx := serverTest(t, 5*time.Minute, "starts the embedded Temporal server and trains")
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

// A TEMPORAL_TLS that cannot be read is refused by every command that reaches Temporal,
// naming the variable and its value, before anything is dialed: the user asked for TLS, so
// a plain connection must never be the fallback. The listener at TEMPORAL_ADDRESS counts
// the connections it gets; it must get none.
func TestMalformedTLSEnvRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var dialed atomic.Int32
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			dialed.Add(1)
			conn.Close()
		}
	}()
	t.Setenv("TEMPORAL_ADDRESS", ln.Addr().String())
	t.Setenv("TEMPORAL_TLS", "maybe")
	t.Setenv("SFSWEEP_S3_BUCKET", "results")
	t.Setenv("SFSWEEP_S3_ENDPOINT", "http://"+ln.Addr().String())
	t.Setenv("SFSWEEP_S3_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	manifest := filepath.Join(t.TempDir(), "e2e.yaml")
	if err := os.WriteFile(manifest, []byte(e2eManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, args := range [][]string{
		{"worker", "-queue", "cpu"},
		{"submit", manifest},
		{"status", "sweep-x"},
		{"cancel", "sweep-x"},
		{"serve", "-page", "127.0.0.1:0"},
	} {
		var out, errb bytes.Buffer
		code := runMain(ctx, args, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), `TEMPORAL_TLS="maybe"`) {
			t.Errorf("%v with TEMPORAL_TLS=maybe: exit %d, %s", args, code, errb.String())
		}
	}
	if n := dialed.Load(); n != 0 {
		t.Errorf("%d connection(s) reached TEMPORAL_ADDRESS (or the S3 endpoint) despite the malformed TEMPORAL_TLS", n)
	}
}

// The binary carries every backend its build has: cmd/sfsweep depends on training/native
// and training/cuda with and without the cuda tag (without it, training/cuda is empty), so
// a build with -tags cuda has the cuda backends in both sfsweep run and sfsweep worker.
func TestBackendsLinked(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the binary's packages: %v", err)
	}
	for _, tags := range []string{"", "cuda"} {
		cmd := exec.Command(goTool, "list", "-deps", "-tags", tags, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps -tags %q: %v", tags, err)
		}
		deps := strings.Fields(string(out))
		for _, pkg := range []string{"github.com/sfsweep/sfsweep/training/native", "github.com/sfsweep/sfsweep/training/cuda"} {
			if !slices.Contains(deps, pkg) {
				t.Errorf("tags %q: cmd/sfsweep does not depend on %s", tags, pkg)
			}
		}
		if hasCU := slices.Contains(deps, "gorgonia.org/cu"); hasCU != (tags == "cuda") {
			t.Errorf("tags %q: gorgonia.org/cu linked: %v", tags, hasCU)
		}
	}
	if !slices.Contains(backend.Names(), "cpu") {
		t.Errorf("the binary carries backends %v, without cpu", backend.Names())
	}
}

// A backend this build lacks: validate says so with the manifest's line and how to build
// it in, and run refuses it before anything is scheduled; a worker refuses to serve a
// device it has no backend for.
func TestBackendNotInBuild(t *testing.T) {
	if backend.Check("cuda") == nil {
		t.Skip("this build carries the cuda backend")
	}
	dir := t.TempDir()
	manifest := filepath.Join(dir, "cuda.yaml")
	src := "name: cuda-e2e\nbackend: cuda\n" + e2eTraining + "optimizers:\n  - name: sfadamw\n    lr: 3e-3\n    betas: [[0.9, 0.99]]\n"
	if err := os.WriteFile(manifest, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := runMain(context.Background(), []string{"validate", manifest}, &out, &errb); code != 0 {
		t.Fatalf("validate: exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"line 2: backend = cuda: not in this build", "-tags cuda", "docs/gpu.md", "sfsweep submit"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("validate does not say %q:\n%s", want, errb.String())
		}
	}
	out.Reset()
	errb.Reset()
	state := filepath.Join(dir, "state")
	if code := runMain(context.Background(), []string{"run", "-dir", state, manifest}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "line 2: backend = cuda: not in this build") {
		t.Errorf("run: exit %d, %s", code, errb.String())
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("run started a stack for a sweep it cannot train: %v", err)
	}
	errb.Reset()
	if code := runMain(context.Background(), []string{"worker", "-devices", "cpu,cuda"}, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), `-devices = "cpu,cuda": this build has no backend on device "cuda"`) || !strings.Contains(errb.String(), "-tags cuda") {
		t.Errorf("worker -devices cuda: exit %d, %s", code, errb.String())
	}
}

// Trials are routed by device: a worker without a cuda backend never takes a cuda trial,
// which shows as waiting (not failed) in status until a worker that has cuda starts; then
// it trains. The cuda worker is a separate process with a stand-in cuda backend (the cpu
// engine under the cuda name, registered only in the test binary), as no GPU is here.
func TestRoutedByDevice(t *testing.T) {
	if backend.Check("cuda") == nil {
		t.Skip("this build carries the cuda backend: every worker serves it")
	}
	ctx := serverTest(t, 5*time.Minute, "starts the embedded Temporal server and trains")
	dir, _, _, cpuManifest := startRemote(ctx, t)
	cudaManifest := filepath.Join(dir, "cuda.yaml")
	src := "name: cuda-e2e\nbackend: cuda\n" + e2eTraining + "optimizers:\n  - name: sfadamw\n    lr: 3e-3\n    betas: [[0.9, 0.99]]\n"
	if err := os.WriteFile(cudaManifest, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "cache")
	wctx, stopWorker := context.WithCancel(ctx)
	workerDone := make(chan int)
	var wlog syncBuffer
	go func() {
		workerDone <- runMain(wctx, []string{"worker", "-queue", "all", "-cache", cache}, &wlog, &wlog)
	}()
	defer func() { stopWorker(); <-workerDone }()

	cmd := func(args ...string) (stdout, stderr string) {
		t.Helper()
		var out, errb bytes.Buffer
		if code := runMain(ctx, args, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		return strings.TrimSpace(out.String()), errb.String()
	}
	status := func(id string) sweepStatus {
		t.Helper()
		out, _ := cmd("status", "-json", id)
		var st sweepStatus
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	cudaID, warn := cmd("submit", cudaManifest)
	if !strings.Contains(warn, "no worker serves backend cuda now (none polls task queue train-cuda)") {
		t.Errorf("submit of a cuda sweep with no cuda worker does not warn:\n%s", warn)
	}
	cpuID, _ := cmd("submit", cpuManifest)
	for st := status(cpuID); !st.Done() || st.Total == 0; st = status(cpuID) {
		if ctx.Err() != nil {
			t.Fatalf("the cpu sweep did not finish: %+v\n%s", st, wlog.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	// the worker trained the cpu sweep; the cuda trial, planned before it, still waits
	st := status(cudaID)
	if st.Total != 1 || st.Completed+st.Failed+st.Diverged != 0 || len(st.Trials) != 1 {
		t.Fatalf("cuda sweep with no cuda worker: %+v", st)
	}
	if tr := st.Trials[0]; tr.State != sweepclient.TrialWaiting || tr.Device != "cuda" || tr.Queue != "train-cuda" || tr.LastFailure != "" {
		t.Errorf("the cuda trial: %+v, want waiting for device cuda on train-cuda", tr)
	}
	if text, _ := cmd("status", cudaID); !strings.Contains(text, "waiting for a worker of device cuda: none polls task queue train-cuda") {
		t.Errorf("status does not show the trial waiting:\n%s", text)
	}
	if strings.Contains(wlog.String(), "not in this build") {
		t.Errorf("the cpu worker was handed the cuda trial:\n%s", wlog.String())
	}
	// a worker with a cuda backend takes it
	t.Setenv(standInCUDAEnv, "1")
	cuda := startProcess(ctx, t, dir, "cuda worker", "worker", "-queue", "gpu", "-devices", "cuda", "-cache", cache)
	for st = status(cudaID); !st.Done(); st = status(cudaID) {
		if ctx.Err() != nil || cuda.exited() {
			t.Fatalf("the cuda sweep did not finish: %+v\n%s", st, cuda.output())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if st.Completed != 1 {
		t.Errorf("cuda sweep: %+v", st)
	}
	if !strings.Contains(cuda.output(), "queue train-cuda") {
		t.Errorf("the cuda worker does not name its queue:\n%s", cuda.output())
	}
}

// status says when the sweep's results come from engines of different arithmetic, and
// nothing about engines when one produced them all.
func TestStatusEngines(t *testing.T) {
	for _, engines := range []map[string]int{{"cpu-fp32/1": 2, "cpu-fp32/2": 5}, {"cpu-fp32/2": 7}} {
		var b bytes.Buffer
		printStatus(&b, "sweep-x", sweepStatus{SweepProgress: workflows.SweepProgress{Total: 7, Completed: 7, Engines: engines}})
		mixed := strings.Contains(b.String(), "engines of different arithmetic: cpu-fp32/1 (2), cpu-fp32/2 (5)")
		if mixed != (len(engines) > 1) || !strings.HasPrefix(b.String(), "sweep-x: 7/7 trials done") {
			t.Errorf("engines %v: status\n%s", engines, b.String())
		}
	}
}

// status prints a failed trial's reason, how many more failed than it shows, and a
// running program's refused metrics lines.
func TestStatusShowsFailures(t *testing.T) {
	var b strings.Builder
	p := workflows.SweepProgress{Total: 30, Completed: 5, Failed: 25, Failures: []workflows.TrialFailure{{TrialID: "abc", Reason: "program: exit status 1: ModuleNotFoundError"}}}
	running := []sweepclient.TrialState{{ID: "def", State: sweepclient.TrialTraining, Refused: 3, RefusedFirst: "line 2: not a JSON object: [1]"}}
	printStatus(&b, "sweep-x", sweepStatus{SweepProgress: p, Trials: running})
	if !strings.Contains(b.String(), "trial abc: failed: program: exit status 1: ModuleNotFoundError") || !strings.Contains(b.String(), "and 24 more failed trials") ||
		!strings.Contains(b.String(), "trial def: training; 3 metrics lines refused, the first line 2: not a JSON object: [1]") {
		t.Errorf("status:\n%s", b.String())
	}
}
