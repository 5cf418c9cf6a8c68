package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/workflows"
)

// The worker process of one GPU is killed (SIGKILL) in the middle of a trial, between two
// of its checkpoints. The supervisor starts it again; the Train activity's heartbeat times
// out and the trial resumes from its newest checkpoint on a GPU of the node, bitwise equal
// to the same configuration trained uninterrupted (on the cpu engine, which the stand-in
// GPUs run under the cuda name).
func TestGPUWorkerKilled(t *testing.T) {
	ctx := serverTest(t, 3*time.Minute, "starts the embedded Temporal server, worker processes, and trains")
	lab, trial, _, node, sweepID := gpuNodeTrial(ctx, t, "gpu-kill", 2)

	const ckEvery = 50
	lab.waitPastCheckpoint(ctx, t, ckEvery, node)
	gpu, pid := trainingProcess(t, node.output())
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killStep := lastCurveStep(lab.objects)
	resumed := node.await("msg=resumed")
	if st := (sweeper{t, ctx}).finish(sweepID, node); st.Completed != 1 {
		t.Fatalf("sweep: %+v\n%s", st, node.output())
	}
	select {
	case <-resumed:
	default:
		t.Fatalf("no worker process resumed the trial:\n%s", node.output())
	}
	if !strings.Contains(node.output(), "worker: "+gpu+": worker process exited (signal: killed): starting it again in 1s") {
		t.Errorf("the supervisor does not say it restarts %s's worker process:\n%s", gpu, node.output())
	}
	got := readResult(t, filepath.Join(lab.objects, keys.ResultName))
	got.ConfigHash, got.Engine = lab.want.ConfigHash, lab.want.Engine // the backend's name differs, not the bits
	sameResult(t, got, lab.want)
	wantCurves, err := lab.refStore.Get(ctx, keys.RunCurves(keys.Trial(lab.trial.ID)))
	if err != nil {
		t.Fatal(err)
	}
	if gotCurves, err := os.ReadFile(filepath.Join(lab.objects, keys.CurvesName)); err != nil || !bytes.Equal(gotCurves, wantCurves) {
		t.Errorf("curves.jsonl differs from the uninterrupted run's (%v)", err)
	}
	if got.Resumed <= 0 || got.Resumed > killStep {
		t.Errorf("resumed_from = %d, want a checkpoint step in (0, %d]", got.Resumed, killStep)
	}
	if attempt, _ := trainAttempt(ctx, t, lab.tc, workflows.TrialWorkflowID(sweepID, trial.ID)); attempt < 2 {
		t.Errorf("the Train activity completed on attempt %d: the kill caused no retry", attempt)
	}
	node.interrupt(t)
}

// gpuNodeTrial starts killManifest's trial under the cuda backend, named name, on a GPU
// node (a supervisor and its worker processes) of gpus stand-in GPUs, its gate open; the
// lab holds the same configuration trained uninterrupted on the cpu backend.
func gpuNodeTrial(ctx context.Context, t *testing.T, name string, gpus int) (lab *gpuLab, trial sweeps.Trial, gate string, node *process, sweepID string) {
	t.Helper()
	lab = newGPULab(ctx, t, killManifest)
	src := strings.Replace(killManifest, "name: worker-kill\n", "name: "+name+"\nbackend: cuda\n", 1)
	manifest := filepath.Join(lab.dir, name+".yaml")
	if err := os.WriteFile(manifest, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	per := reservation(t, manifest)
	trial = onlyTrial(t, src)
	lab.objects = filepath.Join(lab.gw.Root(), lab.gw.Bucket(), "trials", trial.ID)
	gate = standInMachine(t, lab.dir, gpus, mibFor(t, per, 1))
	openGate(t, gate)
	node = startProcess(ctx, t, lab.dir, "gpu node", "worker", "-gpus", "all", "-slots", strconv.Itoa(gpus), "-cache", lab.cache)
	return lab, trial, gate, node, lab.submit(ctx, t, manifest)
}

var workerProcessLine = regexp.MustCompile(`worker: (GPU \S+) \(.*\): worker process (\d+),`)

// trainingProcess returns the GPU whose stand-in engine was made, and the pid of its
// worker process, from a supervisor's output.
func trainingProcess(t *testing.T, out string) (gpu string, pid int) {
	t.Helper()
	evs := standInEvents(out)
	if len(evs) == 0 || !evs[0].made {
		t.Fatalf("no engine made:\n%s", out)
	}
	for _, m := range workerProcessLine.FindAllStringSubmatch(out, -1) {
		if m[1] == evs[0].gpu {
			pid, _ = strconv.Atoi(m[2])
		}
	}
	if pid == 0 {
		t.Fatalf("no worker process of %s:\n%s", evs[0].gpu, out)
	}
	return evs[0].gpu, pid
}

// A device fault in the middle of a trial, a sticky error after which every call of the
// process on its GPU fails, ends the worker process of that GPU: the attempt fails with the
// fault, the process stops polling at once, so that it takes no second attempt, and exits;
// the supervisor starts it again, and the trial resumes from its newest checkpoint in the
// new process, bitwise equal to the same configuration trained uninterrupted.
func TestGPUDeviceFault(t *testing.T) {
	ctx := serverTest(t, 3*time.Minute, "starts the embedded Temporal server, worker processes, and trains")
	lab, trial, gate, node, sweepID := gpuNodeTrial(ctx, t, "gpu-fault", 1)

	lab.waitPastCheckpoint(ctx, t, 50, node)
	gpu, pid := trainingProcess(t, node.output())
	faulted := node.await(standInFaulted)
	if err := os.WriteFile(filepath.Join(gate, gateFault), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if st := (sweeper{t, ctx}).finish(sweepID, node); st.Completed != 1 {
		t.Fatalf("sweep: %+v\n%s", st, node.output())
	}
	select {
	case <-faulted:
	default:
		t.Fatalf("the device did not fault:\n%s", node.output())
	}
	out := node.output()
	if !strings.Contains(out, "worker: "+gpu+": worker process exited (exit status 1): starting it again in 1s") ||
		!strings.Contains(out, "exiting for a fresh device context after a device fault") {
		t.Errorf("the faulted worker process of %s did not exit for the supervisor to start it again:\n%s", gpu, out)
	}
	// the faulted process made the one engine it faulted in, and no other
	made, err := filepath.Glob(filepath.Join(gate, "engine-"+strconv.Itoa(pid)+"-*"))
	if err != nil || len(made) != 1 {
		t.Errorf("the faulted process %d made %d engines (%v), want 1: it took another attempt", pid, len(made), err)
	}
	attempt, cause := trainAttempt(ctx, t, lab.tc, workflows.TrialWorkflowID(sweepID, trial.ID))
	if attempt != 2 || !strings.Contains(cause, "device fault") {
		t.Errorf("the Train activity completed on attempt %d after %q, want attempt 2 after the device fault", attempt, cause)
	}
	got := readResult(t, filepath.Join(lab.objects, keys.ResultName))
	got.ConfigHash, got.Engine = lab.want.ConfigHash, lab.want.Engine // the backend's name differs, not the bits
	sameResult(t, got, lab.want)
	if got.Resumed <= 0 {
		t.Errorf("resumed_from = %d: the trial did not resume from a checkpoint", got.Resumed)
	}
	node.interrupt(t)
}

// sfsweep run trains in its own process: a device fault there ends that process two
// seconds later, saying so, after no other attempt in it; run restarts itself in a fresh
// process, where the trial resumes from its checkpoint and completes.
func TestRunDeviceFault(t *testing.T) {
	ctx := serverTest(t, 3*time.Minute, "runs sfsweep run on the embedded stack through a restart, and trains")
	dir := t.TempDir()
	gate := standInMachine(t, dir, 1, 4096)
	t.Setenv(gpuEnv, "0, GPU-stand-in-0, 4096 MiB")
	openGate(t, gate)
	src := strings.Replace(killManifest, "name: worker-kill\n", "name: run-fault\nbackend: cuda\n", 1)
	if err := os.WriteFile(filepath.Join(dir, "run-fault.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	trial := onlyTrial(t, src)
	checkpoints := filepath.Join(dir, ".sfsweep", "s3", "sfsweep", keys.Checkpoints(keys.Trial(trial.ID)))
	run := startProcess(ctx, t, dir, "run", "run", "-ui=false", "run-fault.yaml")
	waitFor(ctx, t, "a checkpoint", func() bool {
		cks, _ := filepath.Glob(filepath.Join(checkpoints, "*.safetensors"))
		return len(cks) > 0
	}, run)
	if err := os.WriteFile(filepath.Join(gate, gateFault), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-run.done:
	case <-ctx.Done():
		t.Fatalf("run did not end after the device fault:\n%s", run.output())
	}
	out := run.output()
	if code := run.exitCode(); code != 0 || !strings.Contains(out, "ended after a device fault") ||
		!strings.Contains(out, "restarting in a fresh process") || !strings.Contains(out, "1 completed") {
		t.Fatalf("run after a device fault: exit %d\n%s", code, out)
	}
	// one engine in the faulted process, one in the fresh one: the faulted process took no
	// second attempt
	if n := strings.Count(out, standInMade); n != 2 {
		t.Errorf("the two processes made %d engines, want 2\n%s", n, out)
	}
	res := readResult(t, filepath.Join(dir, ".sfsweep", "s3", "sfsweep", "trials", trial.ID, keys.ResultName))
	if res.Resumed <= 0 {
		t.Errorf("resumed_from = %d: the trial did not resume from its checkpoint", res.Resumed)
	}
}
