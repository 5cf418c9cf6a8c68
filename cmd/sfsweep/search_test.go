package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/report"
	"github.com/sfsweep/sfsweep/search"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/workflows"
)

// searchTraining is e2eTraining with rungs at 2 and 6 of 18 steps.
var searchTraining = strings.NewReplacer("steps: 12", "steps: 18", "eval_every: 6", "eval_every: 2", "checkpoint_every: 6", "checkpoint_every: 2").Replace(e2eTraining)

// ashaManifest is a 3 × 3 grid (lr × C) searched by ASHA with η = 3 at rungs 2, 6, 18.
var ashaManifest = "name: asha\n" + searchTraining + `optimizers:
  - name: sfadamw
    lr: [1e-3, 3e-3, 1e-2]
    betas: [[0.9, 0.99]]
    c: [vanilla, 50, 200]
search:
  method: grid
  seed: 3
  parallel: 2
  early_stopping: {rule: asha, min_steps: 2, eta: 3}
tables:
  - {kind: c_sensitivity, name: c_asha, optimizer: sfadamw, lr: 3e-3}
`

// ASHA over a grid end to end on the embedded stack: the best third of each rung goes on
// from its checkpoint, the others are stopped (no result, their rung's checkpoint kept),
// far fewer steps are trained than the grid's, and a second run recomputes nothing.
func TestRunASHAEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded Temporal server and trains (-short)")
	}
	dir := t.TempDir()
	manifest := filepath.Join(dir, "asha.yaml")
	if err := os.WriteFile(manifest, []byte(ashaManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	state, out := filepath.Join(dir, "state"), filepath.Join(dir, "out")
	log := runCommand(t, state, out, manifest)
	if !strings.Contains(log, "search done: 9 configurations") {
		t.Fatalf("run:\n%s", log)
	}
	st, store := readSearchState(t, state, manifest)
	counts := map[search.Status]int{}
	steps := 0
	for _, c := range st.Candidates {
		counts[c.Status]++
		trained := c.Until
		ids := candidateTrials(t, manifest, c)
		res, err := report.ReadResult(context.Background(), store, ids[0])
		if err != nil {
			t.Fatal(err)
		}
		switch c.Status {
		case search.StatusCompleted:
			if res == nil || res.Resumed != 6 || res.Steps != 18 {
				t.Errorf("completed configuration %d: result %+v, want 18 steps resumed from the rung at 6", c.Index, res)
			}
		case search.StatusStopped:
			if res != nil {
				t.Errorf("stopped configuration %d has a result", c.Index)
			}
			if c.StoppedAt != 2 && c.StoppedAt != 6 {
				t.Errorf("configuration %d stopped at %d, not a rung", c.Index, c.StoppedAt)
			}
			trained = c.StoppedAt
			if _, err := store.Get(context.Background(), keys.Checkpoint(keys.Checkpoints(keys.Trial(ids[0])), int64(c.StoppedAt))); err != nil {
				t.Errorf("configuration %d: no checkpoint at its rung %d: %v", c.Index, c.StoppedAt, err)
			}
		default:
			t.Errorf("configuration %d ended %s", c.Index, c.Status)
		}
		steps += trained
	}
	// η = 3 over 9: 9 reach step 2, 3 step 6, 1 the end (ASHA may promote more when it
	// promotes early, never fewer to the end)
	if counts[search.StatusCompleted] < 1 || counts[search.StatusStopped] < 6 || steps > 9*18*4/10 {
		t.Errorf("%v, %d steps trained of the grid's %d", counts, steps, 9*18)
	}
	table, err := os.ReadFile(filepath.Join(out, "sweeps", "asha", "tables", "c_asha.md"))
	if err != nil {
		t.Fatal(err)
	}
	decisions, _ := filepath.Glob(filepath.Join(state, "s3", "*", "sweeps", "*", "search", "decisions", "*.json"))
	results, _ := filepath.Glob(filepath.Join(state, "s3", "*", "trials", "*", "result.json"))
	mtimes := map[string]time.Time{}
	for _, r := range append(results, decisions...) {
		fi, _ := os.Stat(r)
		mtimes[r] = fi.ModTime()
	}

	// again: the same decisions from the log, nothing trained or rewritten
	log = runCommand(t, state, out, manifest)
	if !strings.Contains(log, "search done: 9 configurations") {
		t.Fatalf("second run:\n%s", log)
	}
	for r, m := range mtimes {
		if fi, err := os.Stat(r); err != nil || !fi.ModTime().Equal(m) {
			t.Errorf("%s rewritten by the second run", r)
		}
	}
	if again, _ := os.ReadFile(filepath.Join(out, "sweeps", "asha", "tables", "c_asha.md")); string(again) != string(table) {
		t.Errorf("table changed:\n%s\nthen\n%s", table, again)
	}
}

// tpeManifest is a TPE search of 5 learning rates from a log-uniform distribution.
var tpeManifest = "name: tpe\n" + searchTraining + `optimizers:
  - name: sfadamw
    lr: {distribution: log_uniform, min: 1e-4, max: 3e-2}
    betas: [[0.9, 0.99]]
search:
  method: tpe
  trials: 5
  seed: 11
  metric: test_ppl
  parallel: 2
`

// A TPE search end to end: five configurations sampled inside the bounds, each trained
// to its end and recorded with its metric.
func TestRunTPEEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded Temporal server and trains (-short)")
	}
	dir := t.TempDir()
	manifest := filepath.Join(dir, "tpe.yaml")
	if err := os.WriteFile(manifest, []byte(tpeManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	state, out := filepath.Join(dir, "state"), filepath.Join(dir, "out")
	if log := runCommand(t, state, out, manifest); !strings.Contains(log, "search done: 5 configurations (5 completed)") {
		t.Fatalf("run:\n%s", log)
	}
	st, store := readSearchState(t, state, manifest)
	lrs := map[float64]bool{}
	for _, c := range st.Candidates {
		lr := c.Point["lr"]
		if lr < 1e-4 || lr > 3e-2 || lrs[lr] || c.Final == nil {
			t.Errorf("configuration %d: lr %g, final %v", c.Index, lr, c.Final)
		}
		lrs[lr] = true
		res, err := report.ReadResult(context.Background(), store, candidateTrials(t, manifest, c)[0])
		if err != nil || res == nil {
			t.Fatalf("configuration %d: no result (%v)", c.Index, err)
		}
		if want := res.TestPPL[training.IterX]; *c.Final != want {
			t.Errorf("configuration %d: final %g, its trial's test perplexity %g", c.Index, *c.Final, want)
		}
	}
	if len(st.Candidates) != 5 {
		t.Errorf("%d configurations, want 5", len(st.Candidates))
	}
}

// readSearchState reads the search state of the sweep of manifest from the embedded S3
// gateway's files under state.
func readSearchState(t *testing.T, state, manifest string) (*search.State, blob.Store) {
	t.Helper()
	src, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	_, m, _, err := loadManifest(manifest)
	if err != nil {
		t.Fatal(err)
	}
	buckets, _ := filepath.Glob(filepath.Join(state, "s3", "*"))
	var store blob.Store
	for _, b := range buckets {
		if fi, err := os.Stat(b); err == nil && fi.IsDir() {
			if store, err = blob.NewDir(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	if store == nil {
		t.Fatalf("no bucket under %s", state)
	}
	st, err := report.ReadSearch(context.Background(), store, keys.SweepID(m.Name, src))
	if err != nil || st == nil {
		t.Fatalf("search state: %v", err)
	}
	b, _ := json.Marshal(st)
	t.Logf("search state: %s", b)
	return st, store
}

// candidateTrials are the trial IDs of a search's configuration.
func candidateTrials(t *testing.T, manifest string, c search.Candidate) []string {
	t.Helper()
	_, m, _, err := loadManifest(manifest)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := m.PointTrials(c.Grid, c.Point)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(ts))
	for i, tr := range ts {
		ids[i] = tr.ID
	}
	return ids
}

// status shows a search by its configurations.
func TestPrintSearchStatus(t *testing.T) {
	var b strings.Builder
	printStatus(&b, "sweep-s", sweepStatus{SweepProgress: workflows.SweepProgress{Configs: map[string]int{"stopped": 8, "completed": 1}, Completed: 3}})
	if want := "sweep-s: a search of 9 configurations so far (1 completed, 8 stopped); 3 trials completed"; !strings.HasPrefix(b.String(), want) {
		t.Errorf("status:\n%s\nwant it to begin %q", b.String(), want)
	}
}
