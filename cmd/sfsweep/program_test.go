package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/search"
	"github.com/sfsweep/sfsweep/training"
)

// programTrial is what a trial of a sweep left in the state's bucket.
type programTrial struct {
	dir     string
	config  training.Config
	result  *training.Result
	failed  string
	curves  []training.CurvePoint
	logs    []string
	attempt int
}

// readProgramTrials reads the trials of a sweep of the fake trainer, by their mode.
func readProgramTrials(t *testing.T, state string) map[string]programTrial {
	t.Helper()
	out := map[string]programTrial{}
	for _, tr := range readAllTrials(t, state) {
		out[fmt.Sprint(tr.config.Trainer.Params["mode"])] = tr
	}
	return out
}

// readAllTrials reads every trial a sweep left in the state's bucket.
func readAllTrials(t *testing.T, state string) []programTrial {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(state, "s3", "*", "trials"))
	var out []programTrial
	for _, d := range dirs {
		out = append(out, readAllTrialsUnder(t, d)...)
	}
	return out
}

// readAllTrialsUnder reads every trial under a bucket's trials/ directory.
func readAllTrialsUnder(t *testing.T, trials string) []programTrial {
	t.Helper()
	configs, _ := filepath.Glob(filepath.Join(trials, "*", "config.json"))
	var out []programTrial
	for _, c := range configs {
		dir := filepath.Dir(c)
		var tr programTrial
		tr.dir = dir
		readJSON(t, c, &tr.config)
		if b, err := os.ReadFile(filepath.Join(dir, "result.json")); err == nil {
			tr.result = &training.Result{}
			if err := json.Unmarshal(b, tr.result); err != nil {
				t.Fatalf("%s: %v: %q", dir, err, b)
			}
		}
		if b, err := os.ReadFile(filepath.Join(dir, "failed.json")); err == nil {
			tr.failed = string(b)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "curves.jsonl")); err == nil {
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				if l == "" {
					continue
				}
				var p training.CurvePoint
				if err := json.Unmarshal([]byte(l), &p); err != nil {
					t.Fatalf("%s: %v", dir, err)
				}
				tr.curves = append(tr.curves, p)
			}
		}
		tr.logs, _ = filepath.Glob(filepath.Join(dir, "program", "logs", "*"))
		if b, err := os.ReadFile(filepath.Join(dir, "attempts.json")); err == nil {
			var a struct{ Attempts int }
			if json.Unmarshal(b, &a) == nil {
				tr.attempt = a.Attempts
			}
		}
		out = append(out, tr)
	}
	return out
}

func readJSON(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v: %q", file, err, b)
	}
}

// TestProgramTrainerOutcomes runs a sweep of a program trainer through sfsweep run on
// the embedded stack: one program completes, one fails twice and resumes from its
// checkpoint, one diverges, one writes garbage between its metrics, one hangs, one
// refuses its config, one misses a module and one exits 0 at once (both before any
// metrics line, the same way each attempt). Each ends as docs/trainer.md says, and no
// program is left running.
func TestProgramTrainerOutcomes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded Temporal server (-short)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if d := os.Getenv("KEEPDIR"); d != "" {
		dir = d
	}
	pids := filepath.Join(dir, "pids")
	if err := os.Mkdir(pids, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, "program.yaml")
	src := fmt.Sprintf(`name: program-outcomes
trainer:
  name: fake
  program: %s
  version: fake-1
  env: {%s: "1", FAKE_PIDDIR: %q}
parameters:
  mode: [ok, flaky, diverge, garbage, hang, invalid, early, silent]
  q: 0.5
steps: 8
seeds: [1]
`, self, fakeTrainerEnv, pids)
	if err := os.WriteFile(manifest, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	state, out := filepath.Join(dir, "state"), filepath.Join(dir, "out")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := runMain(ctx, []string{"run", "-ui=false", "-page=off", "-dir", state, "-out", out,
		"-stall-timeout", "3s", "-attempts", "3", "-retry-initial", "100ms", "-retry-max", "200ms", manifest}, &stdout, &stderr)
	log := stdout.String() + stderr.String()
	// four trials failed (hang, invalid, early, silent): the run says so in its last line,
	// and its exit code
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if last := lines[len(lines)-1]; code != 1 || !strings.Contains(last, "4 of 8 trials failed") {
		t.Fatalf("exit %d, last line %q: want 1 and the failed trials counted\n%s", code, last, log)
	}
	trials := readProgramTrials(t, state)
	if len(trials) != 8 {
		t.Fatalf("%d trials, want 8\n%s", len(trials), log)
	}
	want := 1 + 0.5 + 4.0/9
	for _, mode := range []string{"ok", "flaky", "garbage"} {
		tr := trials[mode]
		r := tr.result
		if r == nil || r.Status != status.Completed {
			t.Fatalf("%s: result %+v, failed %s\n%s", mode, r, tr.failed, log)
		}
		if r.Steps != 8 || math.Abs(r.Val["w"]-want) > 1e-9 || math.Abs(r.Test["w"]-want-0.02) > 1e-9 || math.Abs(r.Metrics["val_ppl"]-2*want) > 1e-9 {
			t.Errorf("%s: result steps %d val %v test %v metrics %v, want 8, %v, %v, val_ppl %v", mode, r.Steps, r.Val, r.Test, r.Metrics, want, want+0.02, 2*want)
		}
		var steps []int
		for _, p := range tr.curves {
			steps = append(steps, p.Step)
		}
		if fmt.Sprint(steps) != "[1 2 3 4 5 6 7 8]" {
			t.Errorf("%s: curve steps %v, want each of 1..8 once", mode, steps)
		}
		if len(tr.logs) == 0 {
			t.Errorf("%s: no logs stored", mode)
		}
	}
	var summary struct {
		Refused int      `json:"refused_lines"`
		Sample  []string `json:"refused_sample"`
	}
	readJSON(t, filepath.Join(trials["garbage"].dir, "program", "logs", "attempt-1.json"), &summary)
	if summary.Refused != 3*8 || len(summary.Sample) == 0 {
		t.Errorf("garbage: %d refused lines recorded (%q), want 24", summary.Refused, summary.Sample)
	}
	if a := trials["flaky"].attempt; a != 3 {
		t.Errorf("flaky: %d attempts recorded, want 3", a)
	}
	if r := trials["diverge"].result; r == nil || r.Status != status.Diverged || r.DivergedAt != 4 {
		t.Errorf("diverge: result %+v, failed %s", r, trials["diverge"].failed)
	}
	if tr := trials["hang"]; tr.result != nil || !strings.Contains(tr.failed, "no metrics line for 3s") {
		t.Errorf("hang: result %+v, failed %q: want a failure after stalling", tr.result, tr.failed)
	}
	if tr := trials["invalid"]; tr.result != nil || !strings.Contains(tr.failed, "unrecognized arguments") || tr.attempt > 1 {
		t.Errorf("invalid: result %+v, failed %q, attempts %d: want one attempt, failed with the program's stderr", tr.result, tr.failed, tr.attempt)
	}
	// trials.json shows a program trial by its trainer, parameters and named metrics
	var index struct {
		Trials []struct {
			ID      string             `json:"id"`
			Trainer string             `json:"trainer"`
			Params  map[string]any     `json:"params"`
			Metrics map[string]float64 `json:"metrics"`
			Status  string             `json:"status"`
		} `json:"trials"`
	}
	ixs, _ := filepath.Glob(filepath.Join(state, "s3", "*", "sweeps", "program-outcomes", "trials.json"))
	if len(ixs) != 1 {
		t.Fatalf("trials.json: %v", ixs)
	}
	readJSON(t, ixs[0], &index)
	okRow := false
	for _, r := range index.Trials {
		if r.Trainer != "fake" || r.Params["q"] != 0.5 {
			t.Errorf("trials.json row %+v: want trainer fake and its parameters", r)
		}
		okRow = okRow || (r.Params["mode"] == "ok" && r.Status == "completed" && math.Abs(r.Metrics["val_ppl"]-2*want) < 1e-9)
	}
	if !okRow {
		t.Errorf("trials.json: no completed ok row with val_ppl %v: %+v", 2*want, index.Trials)
	}
	// failing before any metrics line the same way twice is not retried a third time
	for _, mode := range []string{"early", "silent"} {
		if tr := trials[mode]; tr.result != nil || tr.attempt != 2 || !strings.Contains(tr.failed, "not retried again") {
			t.Errorf("%s: result %+v, %d attempts, failed %q: want 2 of the 3 attempts, then not retried", mode, tr.result, tr.attempt, tr.failed)
		}
	}
	if left := fakeTrainerProcs(pids); len(left) > 0 {
		t.Errorf("programs still running after the sweep: pids %v", left)
	}
}

// TestReferenceTrainerSweep sweeps examples/pytorch/train.py, the reference PyTorch
// trainer, through sfsweep run on the embedded stack: refined SF-AdamW against vanilla on
// the end-to-end model, with its table and plots. Needs Debian's python3-torch; skips,
// saying so, without it.
func TestReferenceTrainerSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded Temporal server and trains (-short)")
	}
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import torch, numpy").Run(); err != nil {
		t.Skipf("%s cannot import torch and numpy (apt-get install python3-torch python3-numpy): %v", python, err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	manifest := filepath.Join(dir, "torch.yaml")
	src := fmt.Sprintf(`name: torch-e2e
trainer:
  name: torch-llama
  program: %s/examples/pytorch/train.py
  interpreter: %s
  files: [%s/examples/pytorch/*.py, %s/bench/torch/torch_llama.py]
  env: {OMP_NUM_THREADS: "1"}
  probes: [lr_decay]
%soptimizers:
  - {name: sfadamw, lr: 3e-3, betas: [[0.9, 0.99]], c: [vanilla, 50]}
probes:
  lr_decay: {frac: 0.5, at: [6]}
tables:
  - {kind: c_sensitivity, name: c_torch, title: reference trainer, label: tab:c_torch}
`, root, python, root, root, e2eTraining)
	if err := os.WriteFile(manifest, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	state, out := filepath.Join(dir, "state"), filepath.Join(dir, "out")
	log := runCommand(t, state, out, manifest)
	md, err := os.ReadFile(filepath.Join(out, "sweeps", "torch-e2e", "tables", "c_torch.md"))
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if !strings.Contains(string(md), "| 0.9 | ") || strings.Count(string(md), "±") != 0 && !strings.Contains(string(md), "**") {
		t.Errorf("table:\n%s", md)
	}
	trials := 0
	for _, tr := range readAllTrials(t, state) {
		trials++
		r := tr.result
		if r == nil || r.Status != status.Completed || r.Steps != 12 || r.Primary != "x" || len(tr.curves) != 2 {
			t.Fatalf("trial %s: result %+v, %d curve points, failed %s", tr.dir, r, len(tr.curves), tr.failed)
		}
		if v := r.Val["x"]; !(v > 0 && v < math.Log(257)+1) || r.TestPPL["x"] <= 1 {
			t.Errorf("trial %s: val %v test ppl %v", tr.dir, r.Val, r.TestPPL)
		}
		if !strings.HasPrefix(tr.config.Trainer.Identity, "sha256:") {
			t.Errorf("trial %s: identity %q, want the hash of the trainer's files", tr.dir, tr.config.Trainer.Identity)
		}
		ckpts, _ := filepath.Glob(filepath.Join(tr.dir, "program", "checkpoints", "step-*.pt"))
		if len(ckpts) != 2 {
			t.Errorf("trial %s: checkpoints %v, want those of steps 6 and 12 (a probe keeps none)", tr.dir, ckpts)
		}
		var branch training.LRDecayResult
		readJSON(t, filepath.Join(tr.dir, "probes", "lr-decay-0.5-step-00000006.json"), &branch)
		if branch.FromStep != 6 || branch.Steps != 3 || len(branch.Curve) != 3 || !(float64(branch.After) > 0) || branch.Before != tr.curves[0].Val["x"] {
			t.Errorf("trial %s: LR-decay branch %+v, want 3 steps from 6, from the curve's %v", tr.dir, branch, tr.curves[0].Val)
		}
		if lr := branch.Curve; len(lr) == 3 && !(lr[0].LR > lr[1].LR && lr[1].LR > lr[2].LR) {
			t.Errorf("trial %s: the branch's learning rate does not decay: %+v", tr.dir, lr)
		}
	}
	if trials != 2 {
		t.Fatalf("%d trials, want 2", trials)
	}
	for _, f := range []string{"plots/c_torch-heatmap.png", "plots/curves.png", "plots/lr-decay.png"} {
		if _, err := os.Stat(filepath.Join(out, "sweeps", "torch-e2e", filepath.FromSlash(f))); err != nil {
			t.Error(err)
		}
	}
	// its page, served from the run's state alone
	get, stop := serveState(context.Background(), t, state)
	defer stop()
	m := regexp.MustCompile(`href="/sweeps/(sweep-torch-e2e-[0-9a-f]{8})"`).FindStringSubmatch(get("/"))
	if m == nil {
		t.Fatal("the page lists no torch-e2e sweep")
	}
	page := get("/sweeps/" + m[1])
	for _, want := range []string{"2/2 trials (100%)", ">2 completed<", "reference trainer"} {
		if !strings.Contains(page, want) {
			t.Errorf("the sweep page lacks %q", want)
		}
	}
}

// TestProgramASHA searches a program's own parameter with ASHA through sfsweep run,
// ranked by a metric the program names: the configurations stop at their rungs, the best
// is promoted, started again and resumed from its checkpoint, and trains to the end.
func TestProgramASHA(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf(`name: program-asha
trainer: {name: fake, program: %s, version: fake-1, env: {%s: "1"}}
parameters:
  q: [0.9, 0.0, 0.6, 0.3]
steps: 8
seeds: [1]
search:
  method: grid
  metric: val_ppl
  early_stopping: {rule: asha, rungs: [2, 4], eta: 2}
`, self, fakeTrainerEnv)
	r := runSearch(t, "program-asha", src, 4)
	stopped, completed := map[int]int{}, []float64{}
	for _, c := range r.st.Candidates {
		switch c.Status {
		case search.StatusStopped:
			stopped[c.StoppedAt]++
		case search.StatusCompleted:
			completed = append(completed, c.Point["q"])
		default:
			t.Errorf("configuration %d ended %s", c.Index, c.Status)
		}
	}
	if fmt.Sprint(completed) != "[0]" || stopped[2] != 2 || stopped[4] != 1 {
		t.Fatalf("completed %v, stopped by rung %v: want q = 0 to the end, two stopped at 2, one at 4", completed, stopped)
	}
	// the table's rung column is the metric the rungs ranked by, for every row: q = 0's
	// val_ppl at its last rung, 4, is 2·(1 + 4/5)
	if log := squashSpaces(r.log); !strings.Contains(log, " val_ppl at rung\n") || !strings.Contains(log, "completed 2.8889 4 3.6000") {
		t.Errorf("search table:\n%s", r.log)
	}
	if !strings.Contains(r.log, "best: val_ppl = 2.889 (mean of 1 seeds): trainer fake, q 0") {
		t.Errorf("search summary: want the best by the trainer's parameters\n%s", r.log)
	}
	var best programTrial
	for _, tr := range readAllTrials(t, r.state) {
		if tr.config.Trainer.Params["q"] == 0.0 {
			best = tr
		}
	}
	if best.result == nil || best.result.Steps != 8 || len(best.curves) != 8 {
		t.Fatalf("best: result %+v, %d curve points", best.result, len(best.curves))
	}
	var resumedFrom []string
	for _, l := range best.logs {
		if strings.HasSuffix(l, ".stderr") {
			b, _ := os.ReadFile(l)
			resumedFrom = append(resumedFrom, strings.TrimSpace(string(b)))
		}
	}
	got := strings.Join(resumedFrom, "; ")
	if !strings.Contains(got, "from step 2") || !strings.Contains(got, "from step 4") {
		t.Errorf("the promoted configuration's attempts did not resume from its rungs: %s", got)
	}
}

// TestProgramRelativePaths runs program sweeps as a user types them: by a relative
// manifest path, with the default relative state directory, once from the manifest's own
// folder (a trainer known by its program) and once from its parent (one known by its
// files). Every trial completes: the trainer's paths are the manifest's, not those of the
// working directory the embedded S3 gateway moves to.
func TestProgramRelativePaths(t *testing.T) {
	self := fakeTrainerBinary(t)
	root := t.TempDir()
	sub := filepath.Join(root, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\nexec %q \"$@\"\n", self)
	if err := os.WriteFile(filepath.Join(sub, "train.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := func(name, trainer string) string {
		return fmt.Sprintf(`name: %s
trainer: {name: fake, %s, env: {%s: "1"}}
parameters:
  q: [0.5, 0.25]
steps: 4
seeds: [1]
`, name, trainer, fakeTrainerEnv)
	}
	write := func(file, src string) {
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(sub, "grid.yaml"), manifest("relative-program", "program: train.sh"))
	write(filepath.Join(sub, "one.yaml"), manifest("relative-files", `program: train.sh, files: ["*.sh"]`))
	for _, c := range []struct{ cwd, file string }{{sub, "grid.yaml"}, {root, "sub/one.yaml"}} {
		t.Run(c.file, func(t *testing.T) {
			t.Chdir(c.cwd)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			var stdout, stderr bytes.Buffer
			code := runMain(ctx, []string{"run", "-ui=false", "-page=off", "-attempts", "2", "-retry-initial", "100ms", c.file}, &stdout, &stderr)
			log := stdout.String() + stderr.String()
			if code != 0 {
				t.Fatalf("sfsweep run %s from %s: exit %d\n%s", c.file, c.cwd, code, log)
			}
			trials := readAllTrials(t, ".sfsweep")
			done := 0
			for _, tr := range trials {
				if tr.result != nil && tr.result.Status == status.Completed && tr.failed == "" {
					done++
				} else {
					t.Errorf("trial %s: result %+v, failed %q", filepath.Base(tr.dir), tr.result, tr.failed)
				}
			}
			if done != 2 {
				t.Fatalf("%d of %d trials completed, want 2\n%s", done, len(trials), log)
			}
			// the program's grid has its table, on disk where run says
			tables, _ := filepath.Glob(filepath.Join("out", "sweeps", "relative-*", "tables", "parameters.md"))
			if len(tables) != 1 || !strings.Contains(squashSpaces(log), "q val_loss test_ppl val_ppl seeds") {
				t.Errorf("parameters table %v:\n%s", tables, log)
			}
		})
	}
}

// TestRunFailsSearchThatCompletesNothing runs a search whose every configuration fails
// (a program that refuses its config, or whose metric is NaN): sfsweep run writes what it
// has and exits 1, saying in its last line that no configuration completed, and each
// failed trial says why.
func TestRunFailsSearchThatCompletesNothing(t *testing.T) {
	self := fakeTrainerBinary(t)
	dir := t.TempDir()
	manifest := filepath.Join(dir, "nothing.yaml")
	src := fmt.Sprintf(`name: completes-nothing
trainer: {name: fake, program: %s, version: fake-1, env: {%s: "1"}}
parameters:
  mode: [invalid, nanppl]
  q: [0.1, 0.2]
steps: 4
seeds: [1]
search: {method: grid, metric: val_ppl, early_stopping: {rule: asha, rungs: [2], eta: 2}}
`, self, fakeTrainerEnv)
	if err := os.WriteFile(manifest, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := runMain(ctx, []string{"run", "-ui=false", "-page=off", "-dir", filepath.Join(dir, "state"), "-out", filepath.Join(dir, "out"), manifest}, &stdout, &stderr)
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if last := lines[len(lines)-1]; code != 1 || !strings.Contains(last, "the search completed no configuration (4 failed)") {
		t.Fatalf("exit %d, last line %q: want 1, no configuration completed\n%s%s", code, last, stdout.String(), stderr.String())
	}
	// a string parameter reads as its value in the search's table, not its choice index
	if !strings.Contains(squashSpaces(stdout.String()), "fake nanppl 0.1 failed") {
		t.Errorf("search table:\n%s", stdout.String())
	}
	// a NaN metric fails its configuration with a reason, and a program's error is
	// recorded once, not once per wrapper of it
	for _, tr := range readAllTrials(t, filepath.Join(dir, "state")) {
		mode := tr.config.Trainer.Params["mode"]
		want := map[any]string{"nanppl": "no finite val_ppl at step 2", "invalid": "unrecognized arguments"}[mode]
		if !strings.Contains(tr.failed, want) || strings.Count(tr.failed, "unrecognized arguments") > 1 {
			t.Errorf("%v trial: failed.json %q, want the reason %q once", mode, tr.failed, want)
		}
	}
}

// TestProgramRerunAfterFailure runs a sweep and a search whose trials fail (a flaky
// program, one attempt), then runs each again with the attempts it needs, on the same
// store. The second runs read the newest training: the sweep's trials are completed with
// no failed.json beside their results, and the search's configurations are completed or
// stopped at their rungs, none failed, and run exits 0.
func TestProgramRerunAfterFailure(t *testing.T) {
	self := fakeTrainerBinary(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	run := func(name, src, attempts string) (int, string) {
		manifest := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(manifest, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		var stdout, stderr bytes.Buffer
		code := runMain(ctx, []string{"run", "-ui=false", "-page=off", "-dir", state, "-out", filepath.Join(dir, "out"),
			"-attempts", attempts, "-retry-initial", "100ms", "-retry-max", "200ms", manifest}, &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	trainer := fmt.Sprintf("trainer: {name: fake, program: %s, version: fake-1, env: {%s: \"1\"}}\n", self, fakeTrainerEnv)
	sweep := "name: rerun-sweep\n" + trainer + "parameters:\n  mode: [flaky]\n  q: [0.5, 0.25]\nsteps: 4\nseeds: [1]\n"
	if code, log := run("rerun-sweep", sweep, "1"); code != 1 {
		t.Fatalf("first sweep: exit %d, want 1 (its flaky trials fail)\n%s", code, log)
	}
	if code, log := run("rerun-sweep", sweep, "3"); code != 0 {
		t.Fatalf("second sweep: exit %d, want 0\n%s", code, log)
	}
	for _, tr := range readAllTrials(t, state) {
		if tr.result == nil || tr.result.Status != status.Completed || tr.failed != "" {
			t.Errorf("trial %s after the rerun: result %+v, failed.json %q", filepath.Base(tr.dir), tr.result, tr.failed)
		}
	}

	search := "name: rerun-search\n" + trainer + `parameters:
  mode: [flaky]
  q: [0.9, 0.0, 0.6, 0.3]
steps: 8
seeds: [1]
search:
  method: grid
  metric: val_ppl
  early_stopping: {rule: asha, rungs: [4], eta: 2}
`
	if code, log := run("rerun-search", search, "1"); code != 1 {
		t.Fatalf("first search: exit %d, want 1\n%s", code, log)
	}
	code, log := run("rerun-search", search, "3")
	if code != 0 || !strings.Contains(log, "search done: 4 configurations (2 completed, 2 stopped)") {
		t.Fatalf("second search: exit %d, want 0 with 2 completed and 2 stopped\n%s", code, log)
	}
}

// validate shows a program trainer's trials by its parameters, and counts their steps.
func TestValidateProgramTrials(t *testing.T) {
	file := filepath.Join(t.TempDir(), "p.yaml")
	src := "name: p\ntrainer: {name: mine, version: v1}\nparameters: {dropout: [0.1, 0.2], model: [small]}\nsteps: 50\nseeds: [1, 2]\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := runMain(context.Background(), []string{"validate", file}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
	if !slices.Equal(header, []string{"trial", "trainer", "dropout", "model", "seed", "steps"}) || !strings.Contains(out, "4 trials") || !strings.Contains(out, "200 steps") ||
		!regexp.MustCompile(`(?m)^[0-9a-f]{16} +mine +0.2 +small +2 +50 *$`).MatchString(out) {
		t.Errorf("validate:\n%s", out)
	}
}

// fakeTrainerBinary skips the test under -short (it starts the embedded Temporal server)
// and returns the test binary, which runs as the fake trainer (fakeTrainerEnv).
func fakeTrainerBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts the embedded Temporal server (-short)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self
}

// A manifest edited so that it lacks trials of its earlier version is refused by the
// earlier version's tables, saying that -replace lets it through; with -replace its tables
// replace them, and the earlier trials' results stay in the store.
func TestRunReplace(t *testing.T) {
	ctx := serverTest(t, 3*time.Minute, "runs sfsweep run on the embedded stack three times")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(seeds string) {
		src := fmt.Sprintf("name: edited\ntrainer: {name: fake, program: %s, version: fake-1, env: {%s: \"1\"}}\nparameters: {mode: ok}\nsteps: 4\nseeds: %s\n", self, fakeTrainerEnv, seeds)
		if err := os.WriteFile(filepath.Join(dir, "edited.yaml"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name string, args ...string) *process {
		p := startProcess(ctx, t, dir, name, append([]string{"run", "-ui=false", "-page", "off"}, append(args, "edited.yaml")...)...)
		<-p.done
		return p
	}
	write("[1]")
	if p := run("first"); p.exitCode() != 0 {
		t.Fatalf("first run: exit %d\n%s", p.exitCode(), p.output())
	}
	write("[2]")
	if p := run("edited"); p.exitCode() != 1 || !strings.Contains(p.output(), "holds the tables of another sweep") || !strings.Contains(p.output(), "or run it with -replace") {
		t.Fatalf("the edited manifest: exit %d\n%s", p.exitCode(), p.output())
	}
	p := run("replace", "-replace")
	if p.exitCode() != 0 || !strings.Contains(p.output(), `-replace: its tables replace those of manifest "edited" at sweeps/edited`) {
		t.Fatalf("-replace: exit %d\n%s", p.exitCode(), p.output())
	}
	var out, errb bytes.Buffer
	if code := runMain(ctx, []string{"status", "-dir", filepath.Join(dir, ".sfsweep"), "edited"}, &out, &errb); code != 0 || !strings.Contains(out.String(), ": 1/1 trials done (1 completed") {
		t.Errorf("status of the replaced output: exit %d, %q %s", code, out.String(), errb.String())
	}
	if n := len(readAllTrials(t, filepath.Join(dir, ".sfsweep"))); n != 2 {
		t.Errorf("%d trials in the store, want both versions' 2", n)
	}
}

// squashSpaces is s with every run of spaces one space: a table as run prints it, its
// columns aligned, reads as its cells in order.
func squashSpaces(s string) string {
	return regexp.MustCompile(` +`).ReplaceAllString(s, " ")
}
