package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"

	"github.com/sfsweep/sfsweep/activities"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/workflows"
)

// faultsManifest is a three-trial sweep: one row of a C-sensitivity table.
const faultsManifest = "name: faults\n" + e2eTraining + `optimizers:
  - name: sfadamw
    lr: 3e-3
    betas: [[0.9, 0.99]]
    c: [vanilla, 20, 50]
tables:
  - kind: c_sensitivity
    name: c_faults
    title: sweep under faults
    label: tab:c_faults
`

// faultStack is the embedded deployment of a fault-injection test: the Temporal server,
// the S3 gateway and workers in the test process, the activities' store and compute
// replaceable by faulty ones.
type faultStack struct {
	*stack
	dir, cache string
	trials     []sweeps.Trial
	manifest   *sweeps.Manifest
	sweepID    string
}

// startFaultStack starts the deployment and workers whose activities are acts with the
// store, client and cache filled in where acts leaves them nil, and submits the sweep of
// src with the retry budget retry. It returns when the Sweep workflow has started.
func startFaultStack(ctx context.Context, t *testing.T, src string, acts *activities.Activities, retry workflows.TrainRetry) (*faultStack, client.WorkflowRun) {
	t.Helper()
	dir := t.TempDir()
	st, err := startStack(ctx, filepath.Join(dir, "state"), false, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.stop)
	m, err := sweeps.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	trials, err := m.Expand()
	if err != nil {
		t.Fatal(err)
	}
	fs := &faultStack{stack: st, dir: dir, cache: filepath.Join(dir, "state", "data"), trials: trials, manifest: m}
	if acts.Store == nil {
		acts.Store = st.store
	}
	acts.Client, acts.CacheDir = st.client, fs.cache
	stopWorkers, err := startWorkers(st.client, acts, 1, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopWorkers)
	id, key := sweepKeys(m, []byte(src))
	fs.sweepID = id
	if err := acts.Store.Put(ctx, key, []byte(src)); err != nil {
		t.Fatal(err)
	}
	tf := trialFlags{heartbeat: 30 * time.Second, retry: retry}
	run, err := st.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: workflows.QueueCPU}, workflows.Sweep, tf.input(id, key, 3))
	if err != nil {
		t.Fatal(err)
	}
	return fs, run
}

// trialByC is the trial of the sweep with refined-SF parameter c (0: vanilla).
func (fs *faultStack) trialByC(t *testing.T, c float64) sweeps.Trial {
	t.Helper()
	for _, tr := range fs.trials {
		if tr.Config.Optimizer.C == c {
			return tr
		}
	}
	t.Fatalf("no trial with C = %g", c)
	return sweeps.Trial{}
}

// objectPath is the gateway's file of a key.
func (fs *faultStack) objectPath(key string) string {
	return filepath.Join(fs.gw.Root(), fs.gw.Bucket(), filepath.FromSlash(key))
}

// faultyEngine is the real compute engine whose Backward fails once, on its failAt-th
// call, with a GPU-style error, as the cuda backend reports a device fault.
type faultyEngine struct {
	backend.HostEngine
	calls, failAt int
	err           error
	failed        func()
}

func (f *faultyEngine) Backward() error {
	f.calls++
	if f.calls == f.failAt {
		f.failed()
		return f.err
	}
	return f.HostEngine.Backward()
}

// attemptLog records, per trial, when each Train attempt built its engine and when an
// injected fault ended it.
type attemptLog struct {
	mu      sync.Mutex
	started map[string][]time.Time
	failed  map[string][]time.Time
}

// The compute backend fails the way a GPU does (ECC errors, illegal memory accesses)
// inside real Train activities on the real Temporal server: a transient fault is retried
// with backoff and the trial resumes from its checkpoint, bitwise equal to an
// uninterrupted run; a permanent one exhausts the retry budget (8 attempts), the trial is
// recorded failed, its cell reads "failed", and the rest of the sweep finishes.
func TestComputeFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded Temporal server and trains (-short)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// the server fires retry timers with about 1 s granularity (measured: 100 ms intervals
	// wait 1.0–1.1 s), so the test's backoff starts at 1 s: 1, 2, 2, ... s
	retry := workflows.TrainRetry{InitialInterval: time.Second, MaximumInterval: 2 * time.Second}
	policy := retry.Policy()

	log := &attemptLog{started: map[string][]time.Time{}, failed: map[string][]time.Time{}}
	var transientID, permanentID string
	acts := &activities.Activities{}
	acts.WrapEngine = func(ctx context.Context, trialID string, e backend.Engine) backend.Engine {
		attempt := int(activity.GetInfo(ctx).Attempt)
		log.mu.Lock()
		defer log.mu.Unlock()
		log.started[trialID] = append(log.started[trialID], time.Now())
		failed := func() {
			log.mu.Lock()
			defer log.mu.Unlock()
			log.failed[trialID] = append(log.failed[trialID], time.Now())
		}
		host := e.(backend.HostEngine)
		switch {
		case trialID == transientID && attempt == 1: // at step 9, past checkpoint 6
			return &faultyEngine{HostEngine: host, failAt: 9, failed: failed, err: errors.New("CUDA error: uncorrectable ECC error encountered")}
		case trialID == transientID && attempt == 2: // resumed from 6: at step 8
			return &faultyEngine{HostEngine: host, failAt: 2, failed: failed, err: errors.New("CUDA error: an illegal memory access was encountered")}
		case trialID == permanentID: // every attempt, at its second step
			return &faultyEngine{HostEngine: host, failAt: 2, failed: failed, err: fmt.Errorf("CUDA error: device unavailable (attempt %d)", attempt)}
		}
		return e
	}
	fs, run := startFaultStack(ctx, t, faultsManifest, acts, retry)
	transient, permanent, healthy := fs.trialByC(t, 0), fs.trialByC(t, 20), fs.trialByC(t, 50)
	log.mu.Lock()
	transientID, permanentID = transient.ID, permanent.ID
	log.mu.Unlock()

	var res workflows.SweepResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if p := res.Progress; p.Total != 3 || p.Completed != 2 || p.Failed != 1 {
		t.Errorf("sweep progress %+v, want 3 trials: 2 completed, 1 failed", p)
	}

	// transient: two faults, resumed from checkpoint 6, bitwise the uninterrupted run
	got := readResult(t, fs.objectPath("trials/"+transient.ID+"/"+training.ResultKey))
	if got.Resumed != 6 {
		t.Errorf("transient trial resumed from step %d, want 6", got.Resumed)
	}
	_, want := trainDirect(ctx, t, transient, filepath.Join(fs.dir, "ref"), fs.cache)
	sameResult(t, got, want)
	if a, cause := trainAttempt(ctx, t, fs.client, workflows.TrialWorkflowID(fs.sweepID, transient.ID)); a != 3 || !strings.Contains(cause, "illegal memory access") {
		t.Errorf("transient trial's Train completed on attempt %d after %q, want 3 after the illegal memory access", a, cause)
	}

	// permanent: 8 attempts, recorded failed with the last error; its cell reads failed
	if n := len(log.started[permanent.ID]); n != int(policy.MaximumAttempts) {
		t.Errorf("the permanently failing trial ran %d attempts, want %d", n, policy.MaximumAttempts)
	}
	b, err := os.ReadFile(fs.objectPath("trials/" + permanent.ID + "/" + activities.FailedKey))
	if err != nil {
		t.Fatalf("no failed record for the trial that exhausted its retries: %v", err)
	}
	var rec struct{ Reason string }
	if err := json.Unmarshal(b, &rec); err != nil || !strings.Contains(rec.Reason, "device unavailable (attempt 8)") {
		t.Errorf("failed record %s (%v): want the last attempt's error", b, err)
	}
	if _, err := os.Stat(fs.objectPath("trials/" + permanent.ID + "/" + training.ResultKey)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the failed trial has a result (%v)", err)
	}

	// the healthy trial is untouched by the others' faults
	if got := readResult(t, fs.objectPath("trials/"+healthy.ID+"/"+training.ResultKey)); got.Resumed != 0 {
		t.Errorf("healthy trial resumed from %d", got.Resumed)
	} else {
		_, want := trainDirect(ctx, t, healthy, filepath.Join(fs.dir, "ref"), fs.cache)
		sameResult(t, got, want)
	}

	// backoff: attempt k+1 starts no sooner than the policy's k-th interval after attempt k failed
	starts, fails := log.started[permanent.ID], log.failed[permanent.ID]
	var waits []string
	for k := 0; k+1 < len(starts) && k < len(fails); k++ {
		interval := min(time.Duration(float64(policy.InitialInterval)*pow2(k)), policy.MaximumInterval)
		wait := starts[k+1].Sub(fails[k])
		waits = append(waits, wait.Round(time.Millisecond).String())
		if wait < interval*9/10 {
			t.Errorf("attempt %d started %v after attempt %d failed, the backoff is %v", k+2, wait, k+1, interval)
		}
	}
	t.Logf("permanent fault: %d attempts, waits between a failure and the next attempt %v (policy %v doubling to %v); first fault → failed record %v",
		len(starts), waits, policy.InitialInterval, policy.MaximumInterval, lastModified(t, fs.objectPath("trials/"+permanent.ID+"/"+activities.FailedKey)).Sub(fails[0]).Round(time.Millisecond))
	t.Logf("transient faults: attempts started %d, resumed from %d", len(log.started[transient.ID]), got.Resumed)

	// the table: numbers for the two completed trials, "failed" for the third
	md := waitTable(ctx, t, fs, "sweeps/faults/tables/c_faults.md", "failed")
	if strings.Count(md, "failed") != 1 {
		t.Errorf("table:\n%s\nwant exactly one failed cell", md)
	}
}

func pow2(k int) float64 { return float64(uint64(1) << k) }

func lastModified(t *testing.T, path string) time.Time {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime()
}

// waitTable waits until the sweep's Tables workflow has written a table containing want
// (it rebuilds the tables after the sweep's end) and returns it.
func waitTable(ctx context.Context, t *testing.T, fs *faultStack, key, want string) string {
	t.Helper()
	for {
		b, err := os.ReadFile(fs.objectPath(key))
		if err == nil && strings.Contains(string(b), want) {
			if d, err := fs.client.DescribeWorkflowExecution(ctx, workflows.TablesWorkflowID(fs.sweepID), ""); err == nil &&
				d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
				b, err = os.ReadFile(fs.objectPath(key))
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("no table %s containing %q (%v)", key, want, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
