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
	"github.com/sfsweep/sfsweep/infra/s3gw"
	"github.com/sfsweep/sfsweep/infra/s3store"
	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/faultproxy"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/report"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/checkpoint"
	"github.com/sfsweep/sfsweep/trial"
	"github.com/sfsweep/sfsweep/workflows"
)

// faultsManifest is a four-trial sweep: one row of a C-sensitivity table.
const faultsManifest = "name: faults\n" + e2eTraining + `optimizers:
  - name: sfadamw
    lr: 3e-3
    betas: [[0.9, 0.99]]
    c: [vanilla, 20, 50, 100]
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
// client and cache filled in, and the store too where through is nil (else through gives
// it: a store in front of the gateway), and submits the sweep of src with the heartbeat
// timeout, retry budget and stall timeout of tf. It returns when the Sweep workflow has started.
func startFaultStack(ctx context.Context, t *testing.T, src string, acts *activities.Activities, tf trialFlags, through func(*s3gw.Gateway) blob.Store) (*faultStack, client.WorkflowRun) {
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
	acts.Store = st.store
	if through != nil {
		acts.Store = through(st.gw)
	}
	acts.Client, acts.CacheDir = st.client, fs.cache
	stopWorkers, err := startWorkers(st.client, acts, workerRoles{cpu: true, devices: backend.Devices()}, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopWorkers)
	id := keys.SweepID(m.Name, []byte(src))
	key := keys.Manifest(id)
	fs.sweepID = id
	if err := acts.Store.Put(ctx, key, []byte(src)); err != nil {
		t.Fatal(err)
	}
	tf.window = 3
	run, err := st.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: workflows.QueueCPU}, workflows.Sweep, tf.input(id, key))
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

// hungEngine is the real compute engine whose Backward never returns from its
// hangAt-th call, as a device that hangs rather than fails (until release is closed).
type hungEngine struct {
	backend.HostEngine
	calls, hangAt int
	release       <-chan struct{}
}

func (h *hungEngine) Backward() error {
	h.calls++
	if h.calls == h.hangAt {
		<-h.release
		return errors.New("released")
	}
	return h.HostEngine.Backward()
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
// uninterrupted run; a device that hangs is abandoned by the watchdog after the stall
// timeout and its trial resumes the same way; a permanent fault exhausts the retry budget
// (8 attempts), the trial is recorded failed, its cell reads "failed", and the rest of the
// sweep finishes.
func TestComputeFaults(t *testing.T) {
	ctx := serverTest(t, 4*time.Minute, "starts the embedded Temporal server and trains")
	// the server fires retry timers with about 1 s granularity (measured: 100 ms intervals
	// wait 1.0–1.1 s), so the test's backoff starts at 1 s: 1, 2, 2, ... s
	retry := workflows.TrainRetry{InitialInterval: time.Second, MaximumInterval: 2 * time.Second}
	policy := retry.Policy()

	log := &attemptLog{started: map[string][]time.Time{}, failed: map[string][]time.Time{}}
	var transientID, permanentID, hungID string
	release := make(chan struct{})
	defer close(release)
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
		case trialID == hungID && attempt == 1: // hangs at step 9
			return &hungEngine{HostEngine: host, hangAt: 9, release: release}
		case trialID == permanentID: // every attempt, at its second step
			return &faultyEngine{HostEngine: host, failAt: 2, failed: failed, err: fmt.Errorf("CUDA error: device unavailable (attempt %d)", attempt)}
		}
		return e
	}
	fs, run := startFaultStack(ctx, t, faultsManifest, acts, trialFlags{heartbeat: 30 * time.Second, stall: 2 * time.Second, retry: retry}, nil)
	transient, permanent, healthy, hung := fs.trialByC(t, 0), fs.trialByC(t, 20), fs.trialByC(t, 50), fs.trialByC(t, 100)
	log.mu.Lock()
	transientID, permanentID, hungID = transient.ID, permanent.ID, hung.ID
	log.mu.Unlock()

	var res workflows.SweepResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if p := res.Progress; p.Total != 4 || p.Completed != 3 || p.Failed != 1 {
		t.Errorf("sweep progress %+v, want 4 trials: 3 completed, 1 failed", p)
	}

	// transient: two faults, resumed from checkpoint 6, bitwise the uninterrupted run
	got := readResult(t, fs.objectPath(keys.RunResult(keys.Trial(transient.ID))))
	if got.Resumed != 6 {
		t.Errorf("transient trial resumed from step %d, want 6", got.Resumed)
	}
	_, want := trainDirect(ctx, t, transient, filepath.Join(fs.dir, "ref"), fs.cache)
	sameResult(t, got, want)
	if a, cause := trainAttempt(ctx, t, fs.client, workflows.TrialWorkflowID(fs.sweepID, transient.ID)); a != 3 || !strings.Contains(cause, "illegal memory access") {
		t.Errorf("transient trial's Train completed on attempt %d after %q, want 3 after the illegal memory access", a, cause)
	}

	// hung: the watchdog abandons attempt 1 after the stall timeout; attempt 2 resumes bitwise
	got = readResult(t, fs.objectPath(keys.RunResult(keys.Trial(hung.ID))))
	if got.Resumed != 6 {
		t.Errorf("hung trial resumed from step %d, want 6", got.Resumed)
	}
	_, want = trainDirect(ctx, t, hung, filepath.Join(fs.dir, "ref"), fs.cache)
	sameResult(t, got, want)
	if a, cause := trainAttempt(ctx, t, fs.client, workflows.TrialWorkflowID(fs.sweepID, hung.ID)); a != 2 || !strings.Contains(cause, "the compute is stuck") {
		t.Errorf("hung trial's Train completed on attempt %d after %q, want 2 after a stall", a, cause)
	} else {
		t.Logf("hung device: %s", cause)
	}

	// permanent: 8 attempts, recorded failed with the last error; its cell reads failed
	if n := len(log.started[permanent.ID]); n != int(policy.MaximumAttempts) {
		t.Errorf("the permanently failing trial ran %d attempts, want %d", n, policy.MaximumAttempts)
	}
	b, err := os.ReadFile(fs.objectPath(keys.TrialFailed(permanent.ID)))
	if err != nil {
		t.Fatalf("no failed record for the trial that exhausted its retries: %v", err)
	}
	var rec struct{ Reason string }
	if err := json.Unmarshal(b, &rec); err != nil || !strings.Contains(rec.Reason, "device unavailable (attempt 8)") {
		t.Errorf("failed record %s (%v): want the last attempt's error", b, err)
	}
	if _, err := os.Stat(fs.objectPath(keys.RunResult(keys.Trial(permanent.ID)))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the failed trial has a result (%v)", err)
	}

	// the healthy trial is untouched by the others' faults
	if got := readResult(t, fs.objectPath(keys.RunResult(keys.Trial(healthy.ID)))); got.Resumed != 0 {
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
		len(starts), waits, policy.InitialInterval, policy.MaximumInterval, lastModified(t, fs.objectPath(keys.TrialFailed(permanent.ID))).Sub(fails[0]).Round(time.Millisecond))
	t.Logf("transient faults: attempts started %d, resumed from %d", len(log.started[transient.ID]), got.Resumed)

	// the attempts each retried trial took are recorded, for the index and the sweep page
	for _, c := range []struct {
		tr   sweeps.Trial
		want int
	}{{transient, 3}, {hung, 2}, {permanent, int(policy.MaximumAttempts)}} {
		var rec trial.Attempts
		if b, err := os.ReadFile(fs.objectPath(keys.TrialAttempts(c.tr.ID))); err != nil || json.Unmarshal(b, &rec) != nil || rec.Attempts != c.want {
			t.Errorf("trial %s: attempts record %+v (%v), want %d", c.tr.ID, rec, err, c.want)
		}
	}
	if _, err := os.Stat(fs.objectPath(keys.TrialAttempts(healthy.ID))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the trial trained in one attempt has an attempts record (%v)", err)
	}

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

// The object store fails under the workers: a fault-injecting proxy between every
// activity's S3 client and the gateway answers 500 and 503, answers slowly, drops
// connections, cuts request and response bodies in half and stalls. Every checkpoint and
// table write fails its first attempt (the faults in turn), and so does every read of a
// checkpoint by a decay probe, and one request in ten anywhere else (manifest, configs,
// curves, results, listings) fails at random. The sweep completes with every result bitwise equal to an
// uninterrupted run's, every checkpoint in the bucket verifies against its digest, and the
// tables in the bucket are byte for byte those built from the results without faults.
func TestObjectStoreFaults(t *testing.T) {
	ctx := serverTest(t, 4*time.Minute, "starts the embedded Temporal server and trains")

	// the e2e sweep with a checkpoint every 3 steps: 8 checkpoint writes (data and digest) per completed trial
	src := strings.Replace(e2eManifest, "checkpoint_every: 6", "checkpoint_every: 3", 1)
	// each class of request gets a stall once (it costs the response timeout), then the others in turn
	writeFaults := []faultproxy.Fault{faultproxy.Stall, faultproxy.Truncate, faultproxy.Drop, faultproxy.Error500, faultproxy.Error503, faultproxy.Slow}
	random := faultproxy.Random(7, 0.1, faultproxy.Error500, faultproxy.Error503, faultproxy.Slow, faultproxy.Drop, faultproxy.Truncate)
	var mu sync.Mutex
	turn := map[string]int{}
	classOf := func(key string) string {
		switch {
		case strings.Contains(key, "/"+keys.CheckpointsDir+"/"):
			return "checkpoint"
		case strings.Contains(key, "/tables/") || strings.Contains(key, "/plots/"):
			return "table"
		}
		return "other"
	}
	readFaults := []faultproxy.Fault{faultproxy.Stall, faultproxy.Truncate, faultproxy.Drop, faultproxy.Error503}
	decide := func(r faultproxy.Request) faultproxy.Fault {
		c, faults := classOf(r.Key), writeFaults
		if r.Method == "GET" && c == "checkpoint" { // the decay probes read checkpoints
			c, faults = "checkpoint read", readFaults
		}
		if (r.Method == "PUT" || c == "checkpoint read") && c != "other" && r.N%2 == 1 {
			mu.Lock()
			defer mu.Unlock()
			turn[c]++
			if turn[c] == 1 {
				return faultproxy.Stall
			}
			rest := faults[1:]
			return rest[(turn[c]-2)%len(rest)]
		}
		return random(r)
	}
	var proxy *faultproxy.Proxy
	through := func(gw *s3gw.Gateway) blob.Store {
		var err error
		proxy, err = faultproxy.Start(faultproxy.Options{Upstream: gw.Endpoint(), Decide: decide, SlowDelay: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { proxy.Close() })
		cfg := gw.StoreConfig("")
		cfg.Endpoint, cfg.HTTPClient = proxy.URL(), nil
		cfg.ResponseTimeout = 2 * time.Second // a stalled request is abandoned and retried
		cfg.MaxBackoff = 250 * time.Millisecond
		store, err := s3store.New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return store
	}
	start := time.Now()
	fs, run := startFaultStack(ctx, t, src, &activities.Activities{}, trialFlags{heartbeat: 30 * time.Second}, through)
	var res workflows.SweepResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if p := res.Progress; p.Total != 3 || p.Completed != 2 || p.Diverged != 1 || p.Failed != 0 {
		t.Errorf("sweep progress %+v, want 3 trials: 2 completed, 1 diverged", p)
	}
	md := waitTable(ctx, t, fs, "sweeps/e2e/tables/c_e2e.md", "diverged (step")
	elapsed := time.Since(start)

	// every completed trial is bitwise the uninterrupted run, and all its checkpoints verify
	for _, tr := range fs.trials {
		if tr.Config.Optimizer.LR > 1 {
			continue // the diverging one
		}
		got := readResult(t, fs.objectPath(keys.RunResult(keys.Trial(tr.ID))))
		_, want := trainDirect(ctx, t, tr, filepath.Join(fs.dir, "ref"), fs.cache)
		sameResult(t, got, want)
		// the store's own retries absorbed every fault: no Train attempt failed
		if a, cause := trainAttempt(ctx, t, fs.client, workflows.TrialWorkflowID(fs.sweepID, tr.ID)); a != 1 {
			t.Errorf("trial %s trained on attempt %d after %q: a storage fault reached the activity", tr.ID, a, cause)
		}
		checkpointsVerify(ctx, t, fs.store, tr.ID)
	}
	// no object is partial: every JSON object parses, no stray file is left beside them
	root := filepath.Join(fs.gw.Root(), fs.gw.Bucket())
	objects := 0
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		objects++
		rel, _ := filepath.Rel(root, path)
		switch ext := filepath.Ext(path); ext {
		case ".json":
			var v any
			if b, err := os.ReadFile(path); err != nil || json.Unmarshal(b, &v) != nil {
				t.Errorf("%s: not a whole JSON object (%v)", rel, err)
			}
		case ".jsonl", ".safetensors", ".yaml", ".md", ".csv", ".tex", ".png", ".svg", ".pdf":
		default:
			t.Errorf("unexpected object %s in the bucket", rel)
		}
		return nil
	})

	// the tables written under faults are the ones built from the results without faults
	tableKeys := []string{"sweeps/e2e/tables/c_e2e.md", "sweeps/e2e/tables/c_e2e.csv", "sweeps/e2e/tables/c_e2e.tex", "sweeps/e2e/tables/c_e2e.json"}
	before := map[string][]byte{}
	for _, k := range tableKeys {
		b, err := os.ReadFile(fs.objectPath(k))
		if err != nil {
			t.Fatal(err)
		}
		before[k] = b
	}
	if _, err := report.Build(ctx, fs.store, fs.manifest, report.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, k := range tableKeys {
		if b, _ := os.ReadFile(fs.objectPath(k)); string(b) != string(before[k]) {
			t.Errorf("%s written under faults differs from the fault-free build:\n%s", k, firstDiff(before[k], b))
		}
	}
	if strings.Count(md, "diverged (step") != 1 {
		t.Errorf("table:\n%s", md)
	}

	// every fault was injected into checkpoint writes and table writes, and others at random
	count := map[string]map[faultproxy.Fault]int{}
	for _, e := range proxy.Events() {
		c := classOf(e.Key)
		if e.Method != "PUT" && c != "other" {
			c += " read"
		}
		if e.Method == "DELETE" {
			c = "delete"
		}
		if count[c] == nil {
			count[c] = map[faultproxy.Fault]int{}
		}
		count[c][e.Fault]++
	}
	for c, faults := range map[string][]faultproxy.Fault{"checkpoint": writeFaults, "table": writeFaults, "checkpoint read": readFaults} {
		for _, f := range faults {
			if count[c][f] == 0 {
				t.Errorf("no %s fault on a %s (faults injected: %v)", f, c, count)
			}
		}
	}
	t.Logf("%d requests, %d faults injected %v; %d objects in the bucket; sweep and tables done in %v",
		proxy.Requests(), len(proxy.Events()), count, objects, elapsed.Round(100*time.Millisecond))
}

// checkpointsVerify loads every checkpoint of a trial in the store: there must be some, and
// each must verify against its digest.
func checkpointsVerify(ctx context.Context, t *testing.T, store blob.Store, trialID string) {
	t.Helper()
	prefix := keys.Checkpoints(keys.Trial(trialID))
	infos, err := checkpoint.List(ctx, store, prefix)
	if err != nil || len(infos) == 0 {
		t.Fatalf("checkpoints of %s: %v, %v", trialID, infos, err)
	}
	for _, in := range infos {
		if _, err := checkpoint.Load(ctx, store, prefix, in.Step); err != nil {
			t.Errorf("a checkpoint in the bucket does not verify: %v", err)
		}
	}
}
