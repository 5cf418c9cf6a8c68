package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/workflows"
)

// e2eTraining is the training part of the end-to-end manifests: a model that trains in
// about a second a trial, with a checkpoint every 6 of its 12 steps.
const e2eTraining = `model_config: {arch: llama, vocab: 257, dim: 32, layers: 2, heads: 2, context: 32, hidden: 64, batch: 4}
data:
  default: byte
  max_bytes: 300000
batch_tokens: 128
steps: 12
eval_every: 6
eval_seqs: 8
test_seqs: 8
checkpoint_every: 6
seeds: [1]
`

const e2eManifest = "name: e2e\n" + e2eTraining + `optimizers:
  - name: sfadamw
    lr: 3e-3
    betas: [[0.9, 0.99]]
    c: [vanilla, 10, 50]
  - name: sfadamw
    lr: 1e6
    betas: [[0.5, 0.99]]
    c: [vanilla]
probes:
  decay:
    at: [6]
    steps: 2
tables:
  - kind: c_sensitivity
    name: c_e2e
    title: end-to-end sweep
    label: tab:c_e2e
`

// runCommand runs `sfsweep run` on a manifest with the state and output directories given
// and returns what it printed; a non-zero exit fails the test.
func runCommand(t *testing.T, state, out, manifest string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if code := runMain(ctx, []string{"run", "-ui=false", "-dir", state, "-out", out, manifest}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	return stdout.String() + stderr.String()
}

// probesManifest is an SF-AdamW and an AdamW trial of the end-to-end model with every probe.
const probesManifest = `name: probes
model_config: {arch: llama, vocab: 257, dim: 32, layers: 2, heads: 2, context: 32, hidden: 64, batch: 4}
data: {default: byte, max_bytes: 300000}
batch_tokens: 128
steps: 16
eval_every: 4
eval_seqs: 8
test_seqs: 8
checkpoint_every: 4
seeds: [1]
optimizers:
  - {name: sfadamw, lr: 3e-3, betas: [[0.9, 0.99]]}
  - {name: adamw, lr: 3e-3, betas: [[0.9, 0.95]], schedule: constant}
probes:
  lr_decay: {frac: 0.5, at: [4, 8]}
  interpolate: {from: 8, to: 12, points: 5, decayed: true}
`

// Every probe through the run command on the embedded stack: the probes' results land in
// the bucket and their plots on disk; run again, nothing is recomputed; a manifest that
// adds a probe to the trained trials runs that probe only (no result is rewritten).
func TestRunProbesEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded Temporal server and trains (-short)")
	}
	dir := t.TempDir()
	state, out := filepath.Join(dir, "state"), filepath.Join(dir, "out")
	run := func(src string) string {
		t.Helper()
		manifest := filepath.Join(dir, "probes.yaml")
		if err := os.WriteFile(manifest, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return runCommand(t, state, out, manifest)
	}
	log := run(probesManifest)
	if !strings.Contains(log, "2 run now (2 completed") {
		t.Fatalf("first run:\n%s", log)
	}
	bucket := filepath.Join(state, "s3", "sfsweep", "trials")
	count := func(pattern string) int {
		m, _ := filepath.Glob(filepath.Join(bucket, "*", "probes", pattern))
		return len(m)
	}
	// each trial: 2 branches and the plain interpolation; the AdamW one also the decayed one
	if b, i, d := count("lr-decay-0.5-step-*.json"), count("interp-00000008-00000012-n5.json"), count("interp-*-decayed-n5.json"); b != 4 || i != 2 || d != 1 {
		t.Errorf("%d branches, %d plain and %d decayed interpolations; want 4, 2, 1", b, i, d)
	}
	for _, f := range []string{"lr-decay.png", "interpolation.svg", "curves.png"} {
		if _, err := os.Stat(filepath.Join(out, "sweeps", "probes", "plots", f)); err != nil {
			t.Error(err)
		}
	}
	results, _ := filepath.Glob(filepath.Join(bucket, "*", "result.json"))
	mtimes := map[string]time.Time{}
	for _, r := range results {
		fi, _ := os.Stat(r)
		mtimes[r] = fi.ModTime()
	}
	if log := run(probesManifest); !strings.Contains(log, "0 run now") || !strings.Contains(log, "2 had results") {
		t.Errorf("second run:\n%s", log)
	}
	// a decay probe more: the trials run again for it alone
	log = run(strings.Replace(probesManifest, "probes:\n", "probes:\n  decay: {at: [4], steps: 2}\n", 1))
	if !strings.Contains(log, "2 run now (2 completed") || count("decay-step-00000004.json") != 2 {
		t.Errorf("with a decay probe added: %d decay probes\n%s", count("decay-step-00000004.json"), log)
	}
	for r, m := range mtimes {
		if fi, err := os.Stat(r); err != nil || !fi.ModTime().Equal(m) {
			t.Errorf("%s rewritten when only a probe was added", r)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "sweeps", "probes", "plots", "decay-probe.png")); err != nil {
		t.Error(err)
	}
}

// The run command end to end on the embedded stack: a real Temporal server on SQLite, the
// S3 gateway, in-process workers, real training; the table lands on disk and in the store;
// running it again resumes and recomputes nothing.
func TestRunSweepEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded Temporal server and trains (-short)")
	}
	dir := t.TempDir()
	manifest := filepath.Join(dir, "e2e.yaml")
	if err := os.WriteFile(manifest, []byte(e2eManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	state, out := filepath.Join(dir, "state"), filepath.Join(dir, "out")
	run := func() string { t.Helper(); return runCommand(t, state, out, manifest) }
	log := run()

	md, err := os.ReadFile(filepath.Join(out, "sweeps", "e2e", "tables", "c_e2e.md"))
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	table := string(md)
	// rows β1 = 0.5 (diverged, C=10 and 50 not run) and 0.9 (three finished cells, one bold)
	for _, want := range []string{"| 0.5 | diverged (step ", "| -- | -- |", "| 0.9 | ", "**"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	for _, f := range []string{"tables/c_e2e.csv", "tables/c_e2e.tex", "tables/c_e2e.json", "plots/c_e2e-heatmap.png",
		"plots/c_e2e-heatmap.svg", "plots/curves.png", "plots/decay-probe.svg"} {
		if _, err := os.Stat(filepath.Join(out, "sweeps", "e2e", filepath.FromSlash(f))); err != nil {
			t.Error(err)
		}
	}
	// the objects are in the gateway's bucket: results, checkpoints, the decay probe
	results, _ := filepath.Glob(filepath.Join(state, "s3", "*", "trials", "*", "result.json"))
	if len(results) != 3 {
		t.Fatalf("%d result.json objects, want 3 (β1 = 0.9 with C = 10 is the vanilla trial)", len(results))
	}
	// runs.csv: a row per trial, the diverged one among them
	if b, err := os.ReadFile(filepath.Join(out, "sweeps", "e2e", "runs.csv")); err != nil {
		t.Error(err)
	} else if rows := strings.Split(strings.TrimSpace(string(b)), "\n"); len(rows) != 4 || !strings.HasPrefix(rows[0], "trial_id,state,") || !strings.Contains(string(b), ",diverged,") {
		t.Errorf("runs.csv: want a header and a row for each of the 3 trials, one diverged:\n%s", b)
	}
	// the tables again, from the state directory alone, by the sweep's name: the same table
	out2 := filepath.Join(dir, "out2")
	var tout, terr bytes.Buffer
	if code := runMain(context.Background(), []string{"tables", "regenerate", "-dir", state, "-out", out2, "e2e"}, &tout, &terr); code != 0 {
		t.Fatalf("tables regenerate -dir: exit %d: %s", code, terr.String())
	}
	if again, err := os.ReadFile(filepath.Join(out2, "sweeps", "e2e", "tables", "c_e2e.md")); err != nil || string(again) != table {
		t.Errorf("tables regenerate -dir: %v\n%s\nwant\n%s", err, again, table)
	}
	if _, err := os.Stat(filepath.Join(out2, "sweeps", "e2e", "runs.csv")); err != nil {
		t.Error(err)
	}
	terr.Reset()
	if code := runMain(context.Background(), []string{"tables", "regenerate", "-dir", state, "no-such-sweep"}, &tout, &terr); code != 1 || !strings.Contains(terr.String(), "has no sweep of that name") {
		t.Errorf("tables regenerate -dir of an unknown name: exit %d: %s", code, terr.String())
	}
	probes, _ := filepath.Glob(filepath.Join(state, "s3", "*", "trials", "*", "probes", "decay-step-00000006.json"))
	if len(probes) != 2 {
		t.Errorf("%d decay probes, want 2 (one per finished trial)", len(probes))
	}
	mtimes := map[string]time.Time{}
	diverged := 0
	for _, r := range results {
		fi, _ := os.Stat(r)
		mtimes[r] = fi.ModTime()
		b, _ := os.ReadFile(r)
		var res training.Result
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		if res.Status == status.Diverged {
			diverged++
		}
	}
	if diverged != 1 {
		t.Errorf("%d diverged results, want 1", diverged)
	}

	// again: the same sweep resumes, finds every result and trains nothing
	log = run()
	if !strings.Contains(log, "0 run now") || !strings.Contains(log, "3 had results") {
		t.Errorf("second run:\n%s", log)
	}
	for r, m := range mtimes {
		if fi, err := os.Stat(r); err != nil || !fi.ModTime().Equal(m) {
			t.Errorf("%s rewritten by the second run", r)
		}
	}
	md2, _ := os.ReadFile(filepath.Join(out, "sweeps", "e2e", "tables", "c_e2e.md"))
	if !bytes.Equal(md, md2) {
		t.Error("the table changed on a run that computed nothing")
	}
}

func TestValidate(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := runMain(context.Background(), []string{"validate", "../../sweeps/examples/c-sensitivity-tiny.yaml"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "69 grid points, 63 trials") {
		t.Errorf("validate printed:\n%s", stdout.String())
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(strings.Replace(e2eManifest, "[[0.9, 0.99]]", "[[0.9, 1.5]]", 1)), 0o644)
	stdout.Reset()
	stderr.Reset()
	if code := runMain(context.Background(), []string{"validate", bad}, &stdout, &stderr); code != 1 {
		t.Errorf("exit %d for a bad manifest", code)
	}
	if want := "line 16: optimizers[0].betas[0][1] = 1.5: must be in [0, 1)"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q, want it to contain %q", stderr.String(), want)
	}
}

// validate of a manifest with several mistakes reports them all, in line order, each with
// its field, value, reason and line: the unknown keys first (nothing else reads until they
// are gone), then, the keys fixed, every invalid value. The output is golden.
func TestValidateErrorsGolden(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "validate-errors.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var got strings.Builder
	for _, m := range []struct{ name, text string }{
		{"validate-errors.yaml", string(src)},
		{"validate-errors-keys-fixed.yaml", strings.NewReplacer("stepz:", "steps:", "lrr:", "lr:").Replace(string(src))},
	} {
		path := filepath.Join(dir, m.name)
		if err := os.WriteFile(path, []byte(m.text), 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		code := runMain(context.Background(), []string{"validate", path}, &stdout, &stderr)
		fmt.Fprintf(&got, "$ sfsweep validate %s\nexit %d\n%s", m.name, code, strings.ReplaceAll(stderr.String(), dir+string(filepath.Separator), ""))
	}
	golden := filepath.Join("testdata", "validate-errors.golden")
	if os.Getenv("SFSWEEP_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Errorf("validate printed\n%s\nwant (%s; SFSWEEP_UPDATE_GOLDEN=1 rewrites it)\n%s", got.String(), golden, want)
	}
}

// Failures show when they happen: a failed attempt and a failed trial print a line at
// once, above the live bars (which are redrawn below it) or as plain lines in a log.
func TestProgressFailures(t *testing.T) {
	for _, live := range []bool{false, true} {
		var buf bytes.Buffer
		b := newProgressBars(&buf, live)
		b.sweep(workflows.SweepProgress{Total: 3})
		b.step("t1", training.Progress{Step: 5, Steps: 10, TrainLoss: 2.5})
		b.attemptFailed("t1", 1, errors.New("CUDA error: an illegal memory access was encountered"))
		huge := errors.New("out of device memory: needs 90 GiB, larger than the whole device")
		b.attemptFailed("t3", 1, temporal.NewNonRetryableApplicationError(huge.Error(), "OutOfMemory", huge))
		b.sweep(workflows.SweepProgress{Total: 3, Failed: 1})
		b.probe("t2", "decay probe from step 6", false, nil)
		b.probe("t2", "LR-decay branch from step 6", false, nil)
		running := buf.String()
		b.probe("t2", "decay probe from step 6", true, nil)
		b.probe("t2", "LR-decay branch from step 6", true, errors.New("CUDA error: out of memory"))
		out := buf.String()
		if live && (!strings.Contains(running, "  trial t2  decay probe from step 6  0s\n") || !strings.Contains(running, "  trial t2  LR-decay branch from step 6  0s\n")) {
			t.Errorf("the running probes are not among the bars:\n%q", running)
		}
		for _, want := range []string{
			"trial t1: attempt 1 failed: CUDA error: an illegal memory access was encountered (retried",
			"trial t3: attempt 1 failed: out of device memory: needs 90 GiB, larger than the whole device (not retried",
			`sweep: a trial failed (1 so far); its cell reads "failed"`,
			"trial t2: LR-decay branch from step 6 failed: CUDA error: out of memory",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("live %v: output lacks %q:\n%q", live, want, out)
			}
		}
		if escapes := strings.Contains(out, "\033["); escapes != live {
			t.Errorf("live %v: escape sequences %v in %q", live, escapes, out)
		}
		if !live && !strings.Contains(out, "trial t2: decay probe from step 6 done in 0s\n") {
			t.Errorf("no line for the finished probe:\n%q", out)
		}
		if live && !strings.HasSuffix(out, "sweep [██████████····················] 1/3 trials  0 diverged  1 failed\n") {
			t.Errorf("the bars are not redrawn below the failure lines:\n%q", out)
		}
	}
}

// validate warns of a rung that judges too early, names it, and still succeeds: the
// search runs as written.
func TestValidateWarnsEarlyRungs(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := runMain(context.Background(), []string{"validate", "../../sweeps/examples/search-asha-tiny.yaml"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if want := "warning: search.early_stopping.rungs[0]: rung at step 30 is in the first 20% of the run"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q, want it to contain %q", stderr.String(), want)
	}
}

// A search's progress has no total: its lines count what has come so far, never "n/0".
func TestProgressOfSearch(t *testing.T) {
	var buf bytes.Buffer
	b := newProgressBars(&buf, false)
	b.sweep(workflows.SweepProgress{Configs: map[string]int{"running": 2}})
	b.sweep(workflows.SweepProgress{Completed: 1, Configs: map[string]int{"running": 1, "completed": 1}})
	if out := buf.String(); strings.Contains(out, "/0") || !strings.Contains(out, "search: 2 configurations so far (1 completed, 1 running); 1 trials done") {
		t.Errorf("progress:\n%s", out)
	}
}

// A trial's live line gives its rate and time left once they are known, and not a made-up
// "0 tok/s  ETA 0s" before.
func TestProgressRate(t *testing.T) {
	var buf bytes.Buffer
	b := newProgressBars(&buf, true)
	b.sweep(workflows.SweepProgress{Total: 2})
	b.step("t1", training.Progress{Step: 1, Steps: 10, TrainLoss: 2.5})
	first := buf.String()
	b.step("t1", training.Progress{Step: 3, Steps: 10, TrainLoss: 2.25, TokensPerSec: 2000, ETA: 3500 * time.Millisecond})
	later := buf.String()[len(first):]
	if !strings.Contains(first, "  trial t1  step 1/10  loss 2.5000\n") {
		t.Errorf("first line: %q", first)
	}
	if !strings.Contains(later, "  trial t1  step 3/10  loss 2.2500  2000 tok/s  ETA 4s\n") {
		t.Errorf("later line: %q", later)
	}
}
