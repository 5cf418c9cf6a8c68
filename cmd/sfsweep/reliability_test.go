package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/sfsweep/sfsweep/infra/devserver"
	"github.com/sfsweep/sfsweep/infra/s3gw"
	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/training/checkpoint"
	"github.com/sfsweep/sfsweep/workflows"
)

// Fault-injection tests: real processes (the test binary re-executed as the sfsweep
// command, see TestMain) killed with SIGKILL at a chosen point of a sweep, and the
// sweep's outcome checked against an uninterrupted run. RELIABILITY.md lists what they
// show and what they do not.

// killManifest is one trial of the end-to-end test's model, long enough that a kill lands
// between two checkpoints, evaluated every two steps so that curves.jsonl in the bucket
// tells how far training got.
const killManifest = `name: worker-kill
model_config: {arch: llama, vocab: 257, dim: 32, layers: 2, heads: 2, context: 32, hidden: 64, batch: 4}
data: {default: byte, max_bytes: 300000}
batch_tokens: 128
steps: 400
eval_every: 2
eval_seqs: 4
test_seqs: 8
checkpoint_every: 50
seeds: [1]
optimizers:
  - {name: sfadamw, lr: 3e-3, betas: [[0.9, 0.99]]}
tables:
  - {kind: hyperparameters, name: worker_kill}
`

// killManifestEnv names a manifest file TestWorkerKilledMidTrain runs instead of
// killManifest: on a GPU machine, a trial of a cuda backend (bench/gpu/check.sh), whose
// gpu workers then train on the GPU. It keeps killManifest's shape: one trial, evaluated
// every two steps, checkpointed every 50.
const killManifestEnv = "SFSWEEP_KILL_MANIFEST"

// A gpu worker process is killed (SIGKILL) in the middle of a trial, between two of its
// checkpoints; a second gpu worker is started. The Train activity's heartbeat times out,
// RetryTransient starts it again on the new worker, which resumes from the newest
// checkpoint in S3; the trial's result must be bitwise identical to the same config
// trained uninterrupted.
func TestWorkerKilledMidTrain(t *testing.T) {
	ctx := serverTest(t, 3*time.Minute, "starts the embedded Temporal server, worker processes, and trains")
	src := killManifest
	if file := os.Getenv(killManifestEnv); file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		src = string(b)
	}
	lab := newGPULab(ctx, t, src)
	dir, cache, manifest, trial, tc, objects := lab.dir, lab.cache, lab.manifest, lab.trial, lab.tc, lab.objects
	cpuLog := &lab.cpuLog
	const ckEvery = 50

	workerA := startProcess(ctx, t, dir, "worker A", "worker", "-queue", "gpu", "-cache", cache)
	sweepID := lab.submit(ctx, t, manifest)

	lab.waitPastCheckpoint(ctx, t, ckEvery, workerA)
	workerA.kill(t)
	killedAt := time.Now()
	killStep := lastCurveStep(objects)
	if killStep >= 2*ckEvery {
		t.Logf("the kill landed at step %d, after the second checkpoint", killStep)
	}

	workerB := startProcess(ctx, t, dir, "worker B", "worker", "-queue", "gpu", "-cache", cache)
	defer workerB.interrupt(t)
	resumed := workerB.await("msg=resumed")
	var res workflows.SweepResult
	if err := tc.GetWorkflow(ctx, sweepID, "").Get(ctx, &res); err != nil {
		t.Fatalf("sweep: %v\nworker B:\n%s\ncpu worker:\n%s", err, workerB.output(), cpuLog.String())
	}
	doneAt := time.Now()
	if p := res.Progress; p.Total != 1 || p.Completed != 1 {
		t.Fatalf("sweep progress %+v", p)
	}
	var resumedAt time.Time
	select {
	case resumedAt = <-resumed:
	default:
		t.Fatalf("worker B never resumed the trial:\n%s", workerB.output())
	}

	got := lab.sameAsUninterrupted(ctx, t)
	if got.Resumed <= 0 || got.Resumed > killStep {
		t.Errorf("resumed_from = %d, want a checkpoint step in (0, %d] (the kill's step)", got.Resumed, killStep)
	}
	attempt, cause := trainAttempt(ctx, t, tc, workflows.TrialWorkflowID(sweepID, trial.ID))
	if attempt < 2 {
		t.Errorf("the Train activity completed on attempt %d: the kill caused no retry", attempt)
	}
	t.Logf("killed at step %d (or up to one evaluation later), resumed from the checkpoint at step %d: %d steps recomputed",
		killStep, got.Resumed, killStep-got.Resumed)
	t.Logf("Train activity: %d retries (last failure: %s); kill → training resumed on worker B: %.1f s; kill → sweep done: %.1f s",
		attempt-1, cause, resumedAt.Sub(killedAt).Seconds(), doneAt.Sub(killedAt).Seconds())
}

// gpuLab is a cluster of separate parts for one trial: a Temporal server, an S3 gateway
// (both reached through the environment, as on a cluster) and a cpu worker in this
// process, which stop with the test; and the trial trained uninterrupted into a local
// store, the reference (this also prepares the corpus the workers read from the shared
// cache).
type gpuLab struct {
	dir, cache, manifest string
	trial                sweeps.Trial
	refStore             blob.Store
	want                 *training.Result
	srv                  *devserver.Server
	gw                   *s3gw.Gateway
	tc                   client.Client
	cpuLog               syncBuffer
	objects              string // the trial's objects on the gateway's disk
}

func newGPULab(ctx context.Context, t *testing.T, src string) *gpuLab {
	return newGPULabWith(ctx, t, src, func(string) devserver.Options { return devserver.Options{} })
}

// newGPULabWith is newGPULab with the server's options, given the lab's directory.
func newGPULabWith(ctx context.Context, t *testing.T, src string, server func(dir string) devserver.Options) *gpuLab {
	t.Helper()
	l := &gpuLab{dir: t.TempDir()}
	l.cache, l.manifest = filepath.Join(l.dir, "cache"), filepath.Join(l.dir, "manifest.yaml")
	if err := os.WriteFile(l.manifest, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	l.trial = onlyTrial(t, src)
	l.refStore, l.want = trainDirect(ctx, t, l.trial, filepath.Join(l.dir, "direct"), l.cache)
	var err error
	if l.srv, err = devserver.Start(ctx, server(l.dir)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.srv.Stop() }) // the server l.srv is at the end
	if l.gw, err = s3gw.Start(ctx, s3gw.Options{Root: filepath.Join(l.dir, "s3")}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.gw.Stop() })
	setRemoteEnv(t, l.srv, l.gw)
	if l.tc, err = client.Dial(client.Options{HostPort: l.srv.HostPort(), Namespace: devserver.DefaultNamespace, Logger: quietLogger{}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.tc.Close)
	// the cpu worker (workflows, planning, tables) stays up in this process
	wctx, stopCPU := context.WithCancel(ctx)
	cpuDone := make(chan int)
	go func() {
		cpuDone <- runMain(wctx, []string{"worker", "-queue", "cpu", "-cache", l.cache}, &l.cpuLog, &l.cpuLog)
	}()
	t.Cleanup(func() { stopCPU(); <-cpuDone })
	l.objects = filepath.Join(l.gw.Root(), l.gw.Bucket(), "trials", l.trial.ID)
	return l
}

// submit submits a manifest file with a 3 s heartbeat timeout and returns the sweep's ID.
func (l *gpuLab) submit(ctx context.Context, t *testing.T, file string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := runMain(ctx, []string{"submit", "-heartbeat", "3s", file}, &out, &errb); code != 0 {
		t.Fatalf("submit: exit %d: %s", code, errb.String())
	}
	return strings.TrimSpace(out.String())
}

// waitPastCheckpoint waits for the trial's first checkpoint (at step every) in the bucket,
// then for training to be 10 steps past it.
func (l *gpuLab) waitPastCheckpoint(ctx context.Context, t *testing.T, every int, procs ...*process) {
	t.Helper()
	sidecar := filepath.Join(l.objects, filepath.FromSlash(checkpoint.SidecarKey(keys.CheckpointsDir, int64(every))))
	waitFor(ctx, t, "the first checkpoint of the trial in the bucket", func() bool {
		_, err := os.Stat(sidecar)
		return err == nil
	}, procs...)
	waitFor(ctx, t, "training past the first checkpoint", func() bool {
		return lastCurveStep(l.objects) >= every+10
	}, procs...)
}

// sameAsUninterrupted reads the trial's result from the bucket and fails unless it and
// its curves.jsonl, as written, are bitwise the uninterrupted reference run's.
func (l *gpuLab) sameAsUninterrupted(ctx context.Context, t *testing.T) *training.Result {
	t.Helper()
	got := readResult(t, filepath.Join(l.objects, keys.ResultName))
	sameResult(t, got, l.want)
	wantCurves, err := l.refStore.Get(ctx, keys.RunCurves(keys.Trial(l.trial.ID)))
	if err != nil {
		t.Fatal(err)
	}
	if gotCurves, err := os.ReadFile(filepath.Join(l.objects, keys.CurvesName)); err != nil || !bytes.Equal(gotCurves, wantCurves) {
		t.Errorf("curves.jsonl differs from the uninterrupted run's (%v)", err)
	}
	return got
}

// serverKillManifest is five trials of the same model, short enough that the sweep takes
// a few seconds, with checkpoints so that a trial cut off mid-training resumes.
const serverKillManifest = `name: server-kill
model_config: {arch: llama, vocab: 257, dim: 32, layers: 2, heads: 2, context: 32, hidden: 64, batch: 4}
data: {default: byte, max_bytes: 300000}
batch_tokens: 128
steps: 300
eval_every: 5
eval_seqs: 4
test_seqs: 8
checkpoint_every: 40
seeds: [1, 2, 3, 4, 5]
optimizers:
  - {name: sfadamw, lr: 3e-3, betas: [[0.9, 0.99]]}
tables:
  - {kind: hyperparameters, name: server_kill}
`

// The whole embedded deployment (sfsweep run: Temporal server on SQLite, S3 gateway,
// workers, in one process) is killed with SIGKILL while a trial trains, after at least one
// result landed; the same command is run again on the same state directory. The sweep
// completes, no result that existed before the kill is written again, every trial has its
// result, the tables exist, and a trial cut off mid-training resumed from its checkpoint
// bitwise identical to an uninterrupted run.
func TestServerKilledMidSweep(t *testing.T) {
	ctx := serverTest(t, 3*time.Minute, "starts the embedded Temporal server in child processes and trains")
	dir := t.TempDir()
	manifest := filepath.Join(dir, "server-kill.yaml")
	if err := os.WriteFile(manifest, []byte(serverKillManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := sweeps.Parse([]byte(serverKillManifest))
	if err != nil {
		t.Fatal(err)
	}
	trials, err := m.Expand()
	if err != nil || len(trials) != 5 {
		t.Fatalf("%d trials (%v), want 5", len(trials), err)
	}
	const ckEvery = 40
	state, out := filepath.Join(dir, "state"), filepath.Join(dir, "out")
	histories := filepath.Join(dir, "histories")
	args := []string{"run", "-ui=false", "-dir", state, "-out", out, "-heartbeat", "3s", "-window", "2", "-record-histories", histories, manifest}
	objects := filepath.Join(state, "s3", s3gw.DefaultBucket, "trials")

	first := startProcess(ctx, t, dir, "sfsweep run (first)", args...)
	// Kill while a trial trains between two checkpoints (past its first), after at least
	// one result landed, and between 0.3 s and 1.5 s after the newest result: by then that
	// trial's NotifyTables activity has returned and the Tables workflow's BuildTables (2 s
	// of quiet after a result) has not started. Those cpu-queue activities do not
	// heartbeat; one cut off by the kill would be retried only after its start-to-close
	// timeout (minutes, see RELIABILITY.md).
	seen := map[string]time.Time{} // result.json → when this test first saw it
	var cutID string               // the trial cut off mid-training
	waitFor(ctx, t, "a trial training past its first checkpoint shortly after a result landed", func() bool {
		now := time.Now()
		var newest time.Time
		for _, tr := range trials {
			if _, err := os.Stat(filepath.Join(objects, tr.ID, keys.ResultName)); err == nil {
				if _, ok := seen[tr.ID]; !ok {
					seen[tr.ID] = now
				}
				if seen[tr.ID].After(newest) {
					newest = seen[tr.ID]
				}
			}
		}
		if len(seen) == len(trials) {
			t.Fatalf("the sweep finished before a kill point was found\n%s", first.output())
		}
		if len(seen) == 0 {
			return false
		}
		if since := now.Sub(newest); since < 300*time.Millisecond || since > 1500*time.Millisecond {
			return false
		}
		for _, tr := range trials {
			d := filepath.Join(objects, tr.ID)
			if _, done := seen[tr.ID]; done {
				continue
			}
			// past a checkpoint, not on one
			step := lastCurveStep(d)
			if _, err := os.Stat(filepath.Join(d, filepath.FromSlash(checkpoint.SidecarKey(keys.CheckpointsDir, ckEvery)))); err == nil && step > ckEvery && step%ckEvery != 0 {
				cutID = tr.ID
				return true
			}
		}
		return false
	}, first)
	first.kill(t)
	killedAt := time.Now()
	killStep := lastCurveStep(filepath.Join(objects, cutID))

	before := map[string]resultFile{}
	for _, tr := range trials {
		if rf, ok := statResult(t, filepath.Join(objects, tr.ID)); ok {
			before[tr.ID] = rf
		}
	}
	if len(before) == 0 || len(before) == len(trials) {
		t.Fatalf("%d results at the kill, want some but not all", len(before))
	}

	second := startProcess(ctx, t, dir, "sfsweep run (again)", args...)
	restartedAt := time.Now()
	stackUp, cutTraining := second.await("sweep workflow "), second.await("trial "+cutID+" step ")
	if code := second.exitCode(); code != 0 {
		t.Fatalf("second run: exit %d\n%s", code, second.output())
	}
	doneAt := time.Now()
	log := second.output()
	// each trial counted once, as completed, by the sweep workflow that outlived the kill
	n := len(trials)
	if want := fmt.Sprintf("sweep done: %d trials, %d run now (%d completed, 0 diverged, 0 failed), 0 had results", n, n, n); !strings.Contains(log, want) {
		t.Errorf("second run does not report %q:\n%s", want, log)
	}

	// the results from before the kill are untouched; every trial has its result
	for _, tr := range trials {
		d := filepath.Join(objects, tr.ID)
		rf, ok := statResult(t, d)
		if !ok {
			t.Errorf("trial %s: no result.json after the second run", tr.ID)
			continue
		}
		if old, had := before[tr.ID]; had && (!rf.mtime.Equal(old.mtime) || !bytes.Equal(rf.data, old.data)) {
			t.Errorf("trial %s: result.json existed before the kill and was written again (mtime %v, was %v)", tr.ID, rf.mtime, old.mtime)
		}
		if _, err := os.Stat(filepath.Join(d, keys.FailedName)); err == nil {
			t.Errorf("trial %s: marked failed", tr.ID)
		}
	}
	// the tables: on disk and in the bucket, in every format
	for _, ext := range []string{"md", "csv", "tex", "json"} {
		for _, p := range []string{
			filepath.Join(out, "sweeps", m.Name, "tables", "server_kill."+ext),
			filepath.Join(state, "s3", s3gw.DefaultBucket, "sweeps", m.Name, "tables", "server_kill."+ext),
		} {
			if _, err := os.Stat(p); err != nil {
				t.Error(err)
			}
		}
	}

	// the trial cut off mid-training resumed from its checkpoint, bitwise
	var cut sweeps.Trial
	for _, tr := range trials {
		if tr.ID == cutID {
			cut = tr
		}
	}
	got := readResult(t, filepath.Join(objects, cutID, keys.ResultName))
	if got.Resumed < ckEvery || got.Resumed > killStep {
		t.Errorf("trial %s, cut off at step %d: resumed_from = %d, want a checkpoint step in [%d, %d]", cutID, killStep, got.Resumed, ckEvery, killStep)
	}
	_, want := trainDirect(ctx, t, cut, filepath.Join(dir, "direct"), filepath.Join(state, "data"))
	sameResult(t, got, want)

	attempt, cause := recordedTrainAttempt(t, filepath.Join(histories, strings.ReplaceAll(workflows.TrialWorkflowID(sweepIDOf(t, log), cutID), "/", "_")+".json"))
	if attempt < 2 {
		t.Errorf("trial %s: Train completed on attempt %d: the kill caused no retry", cutID, attempt)
	}
	t.Logf("killed with %d of %d results, trial %s at step %d (or up to one evaluation later); it resumed from step %d: %d steps recomputed",
		len(before), len(trials), cutID[:8], killStep, got.Resumed, killStep-got.Resumed)
	t.Logf("its Train activity: %d retries (last failure: %s); restart → sweep workflow reached: %s, → the trial's first evaluation after resuming: %s; kill → sweep done: %.1f s",
		attempt-1, cause, since(restartedAt, stackUp), since(restartedAt, cutTraining), doneAt.Sub(killedAt).Seconds())
}

// since is the time from start to the moment on c, if it came.
func since(start time.Time, c <-chan time.Time) string {
	select {
	case at := <-c:
		return fmt.Sprintf("%.1f s", at.Sub(start).Seconds())
	default:
		return "never"
	}
}

// sweepIDOf reads the sweep's workflow ID from the output of sfsweep run.
func sweepIDOf(t *testing.T, log string) string {
	t.Helper()
	_, rest, ok := strings.Cut(log, "sweep workflow ")
	id, _, _ := strings.Cut(rest, "\n")
	if !ok || id == "" {
		t.Fatalf("no sweep workflow ID in:\n%s", log)
	}
	return id
}

// quietLogger discards the Temporal client's log.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
