package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sfsweep/sfsweep/training/backend"
)

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
	if testing.Short() {
		t.Skip("starts the embedded Temporal server and trains (-short)")
	}
	if backend.Check("cuda") == nil {
		t.Skip("this build carries the cuda backend: every worker serves it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
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
	if tr := st.Trials[0]; tr.State != trialWaiting || tr.Device != "cuda" || tr.Queue != "train-cuda" || tr.LastFailure != "" {
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
