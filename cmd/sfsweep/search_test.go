package main

import (
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/report"
	"github.com/sfsweep/sfsweep/search"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/trial"
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
	r := runSearch(t, "asha", ashaManifest, 9)
	st, store, state, out, manifest := r.st, r.store, r.state, r.out, r.manifest
	counts := map[search.Status]int{}
	steps := 0
	for _, c := range st.Candidates {
		counts[c.Status]++
		trained := c.Until
		ids := candidateTrials(t, manifest, c)
		res, err := trial.ReadResult(context.Background(), store, ids[0])
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
	// the stopped configurations are drawn to their rung, and the key says so
	if svg, err := os.ReadFile(filepath.Join(out, "sweeps", "asha", "plots", "curves.svg")); err != nil || !strings.Contains(string(svg), ">stopped early at a rung<") {
		t.Errorf("curves.svg does not draw the stopped configurations (%v)", err)
	}
	decisions, _ := filepath.Glob(filepath.Join(state, "s3", "*", "sweeps", "*", "search", "decisions", "*.json"))
	results, _ := filepath.Glob(filepath.Join(state, "s3", "*", "trials", "*", "result.json"))
	mtimes := map[string]time.Time{}
	for _, r := range append(results, decisions...) {
		fi, _ := os.Stat(r)
		mtimes[r] = fi.ModTime()
	}

	// again: the same decisions from the log, nothing trained or rewritten
	if log := runCommand(t, state, out, manifest); !strings.Contains(log, "search done: 9 configurations") {
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
	r := runSearch(t, "tpe", tpeManifest, 5)
	st, store, manifest := r.st, r.store, r.manifest
	if !strings.Contains(r.log, "search done: 5 configurations (5 completed)") {
		t.Fatalf("run:\n%s", r.log)
	}
	lrs := map[float64]bool{}
	for _, c := range st.Candidates {
		lr := c.Point["lr"]
		if lr < 1e-4 || lr > 3e-2 || lrs[lr] || c.Final == nil {
			t.Errorf("configuration %d: lr %g, final %v", c.Index, lr, c.Final)
		}
		lrs[lr] = true
		res, err := trial.ReadResult(context.Background(), store, candidateTrials(t, manifest, c)[0])
		if err != nil || res == nil {
			t.Fatalf("configuration %d: no result (%v)", c.Index, err)
		}
		if want := res.TestPPL[training.IterX]; *c.Final != want {
			t.Errorf("configuration %d: final %g, its trial's test perplexity %g", c.Index, *c.Final, want)
		}
	}
}

// searchRun is a search run end to end by sfsweep run.
type searchRun struct {
	state, out, manifest, log string // the state and output folders, the manifest, what the run printed
	st                        *search.State
	store                     blob.Store
	all                       []int // the configurations' indices
}

// runSearch writes manifest src as name.yaml in a new folder, runs it with sfsweep run
// (skipped under -short), and reads back its search, which must have made configs
// configurations.
func runSearch(t *testing.T, name, src string, configs int) searchRun {
	t.Helper()
	if testing.Short() {
		t.Skip("starts the embedded Temporal server and trains (-short)")
	}
	dir := t.TempDir()
	r := searchRun{manifest: filepath.Join(dir, name+".yaml"), state: filepath.Join(dir, "state"), out: filepath.Join(dir, "out")}
	if err := os.WriteFile(r.manifest, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r.log = runCommand(t, r.state, r.out, r.manifest)
	if !strings.Contains(r.log, fmt.Sprintf("search done: %d configurations", configs)) {
		t.Fatalf("run:\n%s", r.log)
	}
	r.st, r.store = readSearchState(t, r.state, r.manifest)
	if len(r.st.Candidates) != configs {
		t.Fatalf("%d configurations, want %d", len(r.st.Candidates), configs)
	}
	for i := range configs {
		r.all = append(r.all, i)
	}
	return r
}

// halvingManifest is a random search of 4 configurations (lr log-uniform, C a choice),
// stopped by synchronous successive halving with η = 2 at rungs 2, 6 and 18.
var halvingManifest = "name: halving\n" + searchTraining + `optimizers:
  - name: sfadamw
    lr: {distribution: log_uniform, min: 3e-4, max: 3e-2}
    betas: [[0.9, 0.99]]
    c: [vanilla, 50]
search:
  method: random
  trials: 4
  seed: 5
  early_stopping: {rule: sync_halving, rungs: [2, 6], eta: 2}
`

// A random search stopped by synchronous halving end to end: four configurations sampled
// inside the bounds reach step 2; the best two by their validation loss there (read from
// their trials' curves) go on to 6 and the others stop at 2; the better of those two
// completes and the other stops at 6, each stopped one reading "stopped (step N)" in the
// search's table.
func TestRunRandomHalvingEndToEnd(t *testing.T) {
	r := runSearch(t, "halving", halvingManifest, 4)
	for _, c := range r.st.Candidates {
		if lr, cv := c.Point["lr"], c.Point["c"]; lr < 3e-4 || lr > 3e-2 || (cv != 0 && cv != 50) {
			t.Errorf("configuration %d: %v outside the space", c.Index, c.Point)
		}
	}
	// what halving must decide from the values recorded at the rungs
	want := map[int]search.Candidate{}
	alive := slices.Clone(r.all)
	for _, rung := range []int{2, 6} {
		at := r.rungValues(t, alive, rung)
		slices.SortStableFunc(alive, func(a, b int) int { return cmp.Compare(at[a], at[b]) })
		keep := len(alive) / 2
		for _, i := range alive[keep:] {
			want[i] = search.Candidate{Status: search.StatusStopped, StoppedAt: rung}
		}
		alive = alive[:keep]
	}
	for _, i := range alive {
		want[i] = search.Candidate{Status: search.StatusCompleted}
	}
	r.checkOutcomes(t, want, filepath.Join(r.out, "sweeps", "halving", "tables"))
}

// medianManifest is a grid of 4 learning rates searched one configuration at a time,
// stopped by the median rule after 2 have completed, at rungs 2 and 6 of 18.
var medianManifest = "name: median\n" + searchTraining + `optimizers:
  - name: sfadamw
    lr: [1e-4, 1e-3, 3e-3, 3e-2]
    betas: [[0.9, 0.99]]
search:
  method: grid
  seed: 4
  parallel: 1
  early_stopping: {rule: median, rungs: [2, 6], min_trials: 2}
`

// The median rule end to end, one configuration at a time (so its decisions follow the
// order of the configurations): once two have completed, a configuration stops at a rung
// where its best validation loss so far is worse than the median of the completed ones'
// there (all read from the trials' curves); the others complete.
func TestRunMedianEndToEnd(t *testing.T) {
	r := runSearch(t, "median", medianManifest, 4)
	want := map[int]search.Candidate{}
	var completed []int
	for _, i := range r.all {
		best := math.Inf(1)
		for _, rung := range []int{2, 6} {
			at := r.rungValues(t, append(slices.Clone(completed), i), rung)
			best = min(best, at[i])
			var theirs []float64
			for _, j := range completed {
				theirs = append(theirs, at[j])
			}
			if len(completed) >= 2 && best > median(theirs) {
				want[i] = search.Candidate{Status: search.StatusStopped, StoppedAt: rung}
				break
			}
		}
		if _, stopped := want[i]; !stopped {
			want[i] = search.Candidate{Status: search.StatusCompleted}
			completed = append(completed, i)
		}
	}
	r.checkOutcomes(t, want, filepath.Join(r.out, "sweeps", "median", "tables"))
}

// rungValues are the validation losses (of x, the metric's iterate) of configurations is
// at step, read from their trial's curves.
func (r searchRun) rungValues(t *testing.T, is []int, step int) map[int]float64 {
	t.Helper()
	vals := map[int]float64{}
	for _, i := range is {
		id := candidateTrials(t, r.manifest, r.st.Candidates[i])[0]
		b, err := r.store.Get(context.Background(), keys.RunCurves(keys.Trial(id)))
		if err != nil {
			t.Fatalf("configuration %d: curves: %v", i, err)
		}
		for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
			var p training.CurvePoint
			if err := json.Unmarshal([]byte(line), &p); err != nil {
				t.Fatalf("configuration %d: curves: %v", i, err)
			}
			if p.Step == step {
				vals[i] = p.Val[training.IterX]
			}
		}
		if _, ok := vals[i]; !ok {
			t.Fatalf("configuration %d: no validation loss at step %d in its curves", i, step)
		}
	}
	return vals
}

// checkOutcomes compares each configuration's status (and step, if stopped) with want's,
// and finds each stopped one as "stopped (step N)" in its row of the search table
// (tables/search.md under dir, its row found by the configuration's rank in search.csv).
func (r searchRun) checkOutcomes(t *testing.T, want map[int]search.Candidate, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "search.md"))
	if err != nil {
		t.Fatal(err)
	}
	byRank := map[string]string{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Split(line, "|"); len(f) > 2 {
			byRank[strings.TrimSpace(f[1])] = line
		}
	}
	f, err := os.Open(filepath.Join(dir, "search.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) == 0 || recs[0][0] != "rank" || recs[0][1] != "index" {
		t.Fatalf("search.csv: %v, %v: want rank and index first", recs, err)
	}
	rows := map[string]string{} // by index
	for _, rec := range recs[1:] {
		rows[rec[1]] = byRank[rec[0]]
	}
	stopped := 0
	for _, c := range r.st.Candidates {
		w := want[c.Index]
		if c.Status != w.Status || c.StoppedAt != w.StoppedAt {
			t.Errorf("configuration %d (%v): %s at %d, the rule decides %s at %d", c.Index, c.Point, c.Status, c.StoppedAt, w.Status, w.StoppedAt)
		}
		row := rows[strconv.Itoa(c.Index)]
		if c.Status == search.StatusStopped {
			stopped++
			if !strings.Contains(row, fmt.Sprintf("stopped (step %d)", c.StoppedAt)) {
				t.Errorf("configuration %d stopped at %d: its row in the search table is %q", c.Index, c.StoppedAt, row)
			}
		} else if !strings.Contains(row, string(c.Status)) {
			t.Errorf("configuration %d %s: its row in the search table is %q", c.Index, c.Status, row)
		}
	}
	if stopped == 0 {
		t.Errorf("no configuration stopped: the run tests no stopping")
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
	_, m, _, err := loadManifest(context.Background(), manifest)
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
	_, m, _, err := loadManifest(context.Background(), manifest)
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
