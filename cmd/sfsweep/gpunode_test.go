package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sfsweep/sfsweep/sweepclient"
	"github.com/sfsweep/sfsweep/training/backend"
)

// The GPUs of a node, on the stand-in machine: "sfsweep worker -gpus" in a real process,
// whose worker processes train with the stand-in cuda engine on simulated GPUs, on the
// embedded Temporal server and S3 gateway.

// standInMachine sets, for the processes the test starts, a stand-in machine of n GPUs of
// mib MiB each, whose engines wait for the gate it returns to open (standInGateEnv).
func standInMachine(t *testing.T, dir string, n int, mib int64) (gate string) {
	t.Helper()
	if backend.Check("cuda") == nil {
		t.Skip("this build carries the cuda backend: the stand-in cannot take its name")
	}
	gate = filepath.Join(dir, "gate")
	if err := os.Mkdir(gate, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(standInCUDAEnv, "1")
	t.Setenv(standInGPUsEnv, standInGPUs(n, mib))
	t.Setenv(standInGateEnv, gate)
	t.Setenv("SFSWEEP_GPU_LOCKS", t.TempDir()) // the stand-ins' UUIDs are every test's
	return gate
}

// standInGPUs lists n stand-in GPUs of mib MiB each as nvidia-smi would (standInGPUsEnv).
func standInGPUs(n int, mib int64) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%d, GPU-stand-in-%d, %d MiB\n", i, i, mib)
	}
	return b.String()
}

// gpuManifest writes a manifest of the end-to-end training on the cuda backend, with the
// model and seeds given, and returns its path and what one of its trials reserves on a
// stand-in GPU.
func gpuManifest(t *testing.T, dir, name, modelConfig, seeds string) (string, int64) {
	t.Helper()
	src := strings.Replace(e2eTraining, "seeds: [1]", "seeds: "+seeds, 1)
	if modelConfig != "" {
		src = regexp.MustCompile(`(?m)^model_config: .*$`).ReplaceAllString(src, "model_config: "+modelConfig)
	}
	src = "name: " + name + "\nbackend: cuda\n" + src + "optimizers:\n  - name: sfadamw\n    lr: 3e-3\n    betas: [[0.9, 0.99]]\n"
	file := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return file, reservation(t, file)
}

// reservation is what a trial of the manifest file reserves on a stand-in GPU.
func reservation(t *testing.T, file string) int64 {
	t.Helper()
	_, _, trials, err := loadManifest(context.Background(), file)
	if err != nil {
		t.Fatal(err)
	}
	cfg := trials[0].Config.WithDefaults()
	mc, err := cfg.ResolveModel()
	if err != nil {
		t.Fatal(err)
	}
	return standInNeed(mc, cfg.MicroBatch, cfg.SeqLen) + backend.WorkspaceBytes
}

// mibFor is the size in MiB of a GPU on which trials of reservation per fit n at a time
// and not n+1.
func mibFor(t *testing.T, per int64, n int) int64 {
	t.Helper()
	mib := (backend.ContextBytes+int64(n)*per)>>20 + 1
	if capacity := mib<<20 - backend.ContextBytes; capacity < int64(n)*per || capacity >= int64(n+1)*per {
		t.Fatalf("a GPU of %d MiB holds %d bytes of trials: not %d of %d bytes", mib, capacity, n, per)
	}
	return mib
}

// sweeper runs the sfsweep commands of a test in this process.
type sweeper struct {
	t   *testing.T
	ctx context.Context
}

func (s sweeper) cmd(args ...string) string {
	s.t.Helper()
	var out, errb bytes.Buffer
	if code := runMain(s.ctx, args, &out, &errb); code != 0 {
		s.t.Fatalf("%v: exit %d: %s", args, code, errb.String())
	}
	return strings.TrimSpace(out.String())
}

func (s sweeper) status(id string) sweepStatus {
	s.t.Helper()
	var st sweepStatus
	if err := json.Unmarshal([]byte(s.cmd("status", "-json", id)), &st); err != nil {
		s.t.Fatal(err)
	}
	return st
}

// finish waits for the sweep to end and returns its status.
func (s sweeper) finish(id string, procs ...*process) sweepStatus {
	s.t.Helper()
	var st sweepStatus
	waitFor(s.ctx, s.t, "sweep "+id+" to end", func() bool {
		st = s.status(id)
		return st.Done() && st.Total > 0
	}, procs...)
	return st
}

// engines counts the files the stand-in engines made leave in the gate.
func engines(t *testing.T, gate string) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(gate, "engine-*"))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

func openGate(t *testing.T, gate string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(gate, gateOpen), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// standInEvent is a line a stand-in GPU logged: its GPU, whether an engine was made, the
// engines live and the bytes held then, of the GPU's total.
type standInEvent struct {
	gpu         string
	made        bool
	live        int
	used, total int64
}

var standInLine = regexp.MustCompile(`^(GPU \S+): (` + regexp.QuoteMeta(standInMade) + `|` + regexp.QuoteMeta(standInClosed) + `) (\d+) engines, (\d+) of (\d+) bytes`)

// standInEvents reads the stand-in GPUs' lines of a supervisor's output, in order.
func standInEvents(out string) []standInEvent {
	var evs []standInEvent
	for l := range strings.Lines(out) {
		m := standInLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		live, _ := strconv.Atoi(m[3])
		used, _ := strconv.ParseInt(m[4], 10, 64)
		total, _ := strconv.ParseInt(m[5], 10, 64)
		evs = append(evs, standInEvent{gpu: m[1], made: m[2] == standInMade, live: live, used: used, total: total})
	}
	return evs
}

// 8 trials over 4 GPUs of 2 slots, each GPU the size of 2 of them: all 8 train at once,
// 2 on each GPU, and no GPU ever holds more than its memory.
func TestGPUsTrainAtOnce(t *testing.T) {
	ctx := serverTest(t, 5*time.Minute, "starts the embedded Temporal server and trains")
	dir, _, _, _ := startRemote(ctx, t)
	manifest, per := gpuManifest(t, dir, "gpus", "", "[1, 2, 3, 4, 5, 6, 7, 8]")
	gate := standInMachine(t, dir, 4, mibFor(t, per, 2))
	cache := filepath.Join(dir, "cache")
	startCPUWorker(ctx, t, cache)
	node := startProcess(ctx, t, dir, "gpu node", "worker", "-gpus", "all", "-slots", "8", "-cache", cache)
	s := sweeper{t, ctx}
	id := s.cmd("submit", manifest)
	waitFor(ctx, t, "8 engines made", func() bool { return engines(t, gate) == 8 }, node)
	openGate(t, gate)
	st := s.finish(id, node)
	if st.Completed != 8 {
		t.Errorf("sweep: %+v\n%s", st, node.output())
	}
	perGPU := map[string]int{}
	for _, e := range standInEvents(node.output()) {
		if e.made {
			perGPU[e.gpu]++
		}
		if e.live > 2 || e.used > e.total {
			t.Errorf("%s holds %d engines, %d of %d bytes", e.gpu, e.live, e.used, e.total)
		}
	}
	if len(perGPU) != 4 || perGPU["GPU 0"] != 2 || perGPU["GPU 1"] != 2 || perGPU["GPU 2"] != 2 || perGPU["GPU 3"] != 2 {
		t.Errorf("engines made by GPU: %v\n%s", perGPU, node.output())
	}
	for _, bad := range []string{"out of device memory", "waiting for GPU memory", "train attempt failed"} {
		if strings.Contains(node.output(), bad) {
			t.Errorf("the node's output says %q:\n%s", bad, node.output())
		}
	}
	node.interrupt(t)
}

// On a GPU the size of one trial, the second of two waits for memory, showing so in status,
// and trains once the first has finished; their decay probes, whose engines have the
// trials' shape, are admitted the same way; a trial larger than the whole GPU fails at
// once, once, with the figures.
func TestGPUMemoryAdmission(t *testing.T) {
	ctx := serverTest(t, 5*time.Minute, "starts the embedded Temporal server and trains")
	dir, _, _, _ := startRemote(ctx, t)
	manifest, per := gpuManifest(t, dir, "pair", "", "[1, 2]\nprobes:\n  decay: {at: [6], steps: 2}")
	gate := standInMachine(t, dir, 1, mibFor(t, per, 1))
	node := startProcess(ctx, t, dir, "gpu node", "worker", "-queue", "all", "-gpus", "0", "-slots", "2", "-cache", filepath.Join(dir, "cache"))
	s := sweeper{t, ctx}
	id := s.cmd("submit", manifest)
	want := fmt.Sprintf("waiting for GPU memory: needs %s, %s free on GPU 0", backend.GiB(per), backend.GiB(mibFor(t, per, 1)<<20-backend.ContextBytes-per))
	var admitting sweepclient.TrialState
	waitFor(ctx, t, "a trial waiting for memory in status", func() bool {
		for _, tr := range s.status(id).Trials {
			if tr.State == sweepclient.TrialAdmitting {
				admitting = tr
				return true
			}
		}
		return false
	}, node)
	if admitting.Waiting != want {
		t.Errorf("waiting trial: %+v, want %q", admitting, want)
	}
	free := mibFor(t, per, 1)<<20 - backend.ContextBytes - per
	if g := admitting.GPU; g == nil || g.Name != "GPU 0" || g.Trials != 1 || g.Waiting != 1 || g.Reserved != per || g.Free != free || g.Total != mibFor(t, per, 1)<<20 {
		t.Errorf("the waiting trial's GPU: %+v", g)
	}
	gpuLine := fmt.Sprintf("GPU 0 (worker %s): 1 trial(s) admitted, 1 waiting; %s reserved, %s free of ", strings.TrimSuffix(admitting.Worker, "@"), backend.GiB(per), backend.GiB(free))
	if text := s.cmd("status", id); !strings.Contains(text, "trial "+admitting.ID+": "+want) || !strings.Contains(text, gpuLine) || !strings.Contains(text, "waiting "+admitting.ID) {
		t.Errorf("status does not show the trial waiting on GPU 0 (%q):\n%s", gpuLine, text)
	}
	if n := engines(t, gate); n != 1 {
		t.Errorf("%d engines made while one waits for memory", n)
	}
	openGate(t, gate)
	if st := s.finish(id, node); st.Completed != 2 {
		t.Errorf("sweep: %+v\n%s", st, node.output())
	}
	// two trainings and their two decay probes, one engine at a time
	evs := standInEvents(node.output())
	for i, e := range evs {
		if e.made != (i%2 == 0) || e.live != i%2^1 {
			t.Errorf("engines made and closed: %+v, want one after the other\n%s", evs, node.output())
			break
		}
	}
	if len(evs) != 8 {
		t.Errorf("%d engines made and closed, want 4 (2 trainings, 2 probes)\n%s", len(evs)/2, node.output())
	}
	if out := node.output(); strings.Contains(out, "train attempt failed") || strings.Contains(out, "out of device memory") {
		t.Errorf("an attempt failed:\n%s", out)
	}

	huge, need := gpuManifest(t, dir, "huge", "{arch: llama, vocab: 257, dim: 512, layers: 4, heads: 2, context: 32, hidden: 1024, batch: 4}", "[1]")
	id = s.cmd("submit", huge)
	if st := s.finish(id, node); st.Failed != 1 {
		t.Errorf("sweep of a trial larger than the GPU: %+v\n%s", st, node.output())
	}
	var failures []string
	for l := range strings.Lines(node.output()) {
		if strings.Contains(l, "ActivityType=Train Attempt=") { // the SDK's line of a failed attempt
			failures = append(failures, l)
		}
	}
	if len(failures) != 1 {
		t.Fatalf("%d failed attempts, want 1:\n%s", len(failures), node.output())
	}
	for _, w := range []string{"Attempt=1 ", "retryable: false", "out of device memory", "needs " + backend.GiB(need), "does not fit on this device", "larger than the whole device"} {
		if !strings.Contains(failures[0], w) {
			t.Errorf("the failure does not say %q: %s", w, failures[0])
		}
	}
	if n := engines(t, gate); n != 4 {
		t.Errorf("%d engines made, want the pair's 4", n)
	}
	node.interrupt(t)
}
