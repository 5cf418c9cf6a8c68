package program

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const testGrace = 200 * time.Millisecond

// attempt is an Attempt of the fake trainer (main_test.go) running script, with the
// short durations tests use.
func attempt(t *testing.T, script string) Attempt {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	metrics := filepath.Join(run, "metrics.jsonl")
	return Attempt{
		Argv: []string{self},
		Env: map[string]string{
			"PROGRAM_TEST_MODE":      "fake",
			"FAKE_SCRIPT":            script,
			"SFSWEEP_RUN_DIR":        run,
			"SFSWEEP_METRICS":        metrics,
			"SFSWEEP_CHECKPOINT_DIR": filepath.Join(run, "checkpoints"),
		},
		Dir:     run,
		Metrics: metrics,
		LogDir:  filepath.Join(dir, "logs"),
		Grace:   testGrace,
		Poll:    10 * time.Millisecond,
	}
}

func runFake(t *testing.T, a Attempt) Outcome {
	t.Helper()
	out, err := Run(context.Background(), a)
	if err != nil {
		t.Fatalf("Run: %v (outcome %+v)", err, out)
	}
	return out
}

func TestRunExitStatuses(t *testing.T) {
	val := `line {"step": 10, "train_loss": 3.9, "val_loss": 3.8}`
	for _, tc := range []struct {
		name, script string
		status       Status
		code         int
		signal       string
		reason       string // in Reason
	}{
		{"completed", val + "\nexit 0", Completed, 0, "", ""},
		{"no val loss", `line {"step": 10, "train_loss": 3.9}` + "\nexit 0", Failed, 0, "", "without a metrics line with a validation loss"},
		{"diverged", val + "\nexit 3", Diverged, 3, "", "diverged at step 10"},
		{"invalid", "stderr usage: train.py [-h]\nstderr train.py: error: argument --lr: invalid float value: 'x'\nexit 2", Invalid, 2, "", "invalid float value"},
		{"failed", val + "\nstderr CUDA out of memory\nexit 1", Failed, 1, "", "exit status 1: CUDA out of memory"},
		{"signal", val + "\nkill", Failed, -1, "killed", "signal killed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := runFake(t, attempt(t, tc.script))
			if out.Status != tc.status || out.ExitCode != tc.code || out.Signal != tc.signal {
				t.Errorf("status %s, exit %d, signal %q; want %s, %d, %q (%s)", out.Status, out.ExitCode, out.Signal, tc.status, tc.code, tc.signal, out.Reason)
			}
			if !strings.Contains(out.Reason, tc.reason) || (tc.reason == "") != (out.Reason == "") {
				t.Errorf("Reason = %q, want it to hold %q", out.Reason, tc.reason)
			}
		})
	}
}

func TestRunNonFiniteLossDiverges(t *testing.T) {
	a := attempt(t, `line {"step": 1, "train_loss": 3.9}
line {"step": 2, "train_loss": NaN, "val_loss": 4.0}
line {"step": 3, "train_loss": 3.0}
hang`)
	var got []int
	a.OnMetric = func(m Metric) { got = append(got, m.Step) }
	start := time.Now()
	out := runFake(t, a)
	if out.Status != Diverged || out.DivergedAt != 2 || out.Signal != "terminated" {
		t.Errorf("outcome %+v, want diverged at 2, ended by SIGTERM", out)
	}
	if !slices.Equal(got, []int{1, 2}) || out.Lines != 2 || out.Last.Step != 2 {
		t.Errorf("OnMetric got %v, Lines %d, Last %d: want the lines up to the divergence", got, out.Lines, out.Last.Step)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v to end a diverged program", d)
	}
}

func TestRunStall(t *testing.T) {
	a := attempt(t, `line {"step": 1, "train_loss": 3.9}
hang`)
	a.Stall = 300 * time.Millisecond
	start := time.Now()
	out := runFake(t, a)
	if out.Status != Stalled || !strings.Contains(out.Reason, "no metrics line for 300ms (last step 1)") {
		t.Errorf("outcome %s %q, want stalled", out.Status, out.Reason)
	}
	if d := time.Since(start); d < a.Stall {
		t.Errorf("stalled after %v, before the stall timeout", d)
	}
	a = attempt(t, "hang") // a resumed attempt that writes nothing: no step of its own to quote
	a.Stall = 100 * time.Millisecond
	if out := runFake(t, a); out.Status != Stalled || !strings.Contains(out.Reason, "no metrics line for 100ms since the attempt started") {
		t.Errorf("outcome %s %q, want stalled with no line", out.Status, out.Reason)
	}
}

func TestRunUntilStopsAfterSync(t *testing.T) {
	a := attempt(t, "loop")
	a.Until = 5
	var mu sync.Mutex
	var last, synced int
	a.OnMetric = func(m Metric) { mu.Lock(); last = m.Step; mu.Unlock() }
	a.Sync = func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if synced < a.Until {
			synced = last
		}
		return nil
	}
	out := runFake(t, a)
	if out.Status != Stopped || out.Last.Step < 5 || !strings.Contains(out.Reason, "rung 5") {
		t.Errorf("outcome %s at step %d (%s), want stopped at or after 5", out.Status, out.Last.Step, out.Reason)
	}
	if synced < 5 {
		t.Errorf("stopped before a sync after step 5 (synced after step %d)", synced)
	}
}

func TestRunUntilWaitsForSync(t *testing.T) {
	a := attempt(t, "loop")
	a.Until = 2
	fails := 0
	a.Sync = func(context.Context) error {
		if fails < 8 {
			fails++
			return errors.New("store unreachable")
		}
		return nil
	}
	out := runFake(t, a)
	if out.Status != Stopped || fails != 8 {
		t.Errorf("status %s after %d failed syncs, want stopped after 8", out.Status, fails)
	}
	if len(out.SyncErrors) != syncErrorsKept || !strings.Contains(out.SyncErrors[0], "store unreachable") {
		t.Errorf("SyncErrors = %q", out.SyncErrors)
	}
}

func TestRunFinalSyncError(t *testing.T) {
	a := attempt(t, `line {"step": 1, "val_loss": 3.9}`)
	a.Sync = func(context.Context) error { return errors.New("disk full") }
	out, err := Run(context.Background(), a)
	if err == nil || !strings.Contains(err.Error(), "disk full") || out.Status != Completed {
		t.Errorf("Run = %s, %v; want completed and the final sync's error", out.Status, err)
	}
}

// childGone reports whether the fake trainer's child, whose pid it wrote to child.pid,
// has exited.
func childGone(t *testing.T, a Attempt) (int, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(a.Dir, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatal(err)
	}
	_, running := procStat(pid)
	return pid, !running
}

func TestRunCancelEndsTheGroup(t *testing.T) {
	a := attempt(t, "child\nline {\"step\": 1, \"train_loss\": 3.9}\nhang")
	ctx, cancel := context.WithCancel(context.Background())
	a.OnMetric = func(Metric) { cancel() } // the child exists once the line does
	synced := 0
	a.Sync = func(context.Context) error { synced++; return nil }
	start := time.Now()
	out, err := Run(ctx, a)
	if !errors.Is(err, context.Canceled) || out.Status != Canceled {
		t.Fatalf("Run = %s, %v; want canceled", out.Status, err)
	}
	if d := time.Since(start); d < testGrace {
		t.Errorf("returned after %v: the child ignores SIGTERM, so SIGKILL comes only after the grace", d)
	}
	if pid, gone := childGone(t, a); !gone {
		t.Errorf("child %d still running after Run returned", pid)
	}
	before := synced
	if _, err := Run(ctx, attempt(t, "hang")); !errors.Is(err, context.Canceled) || synced != before {
		t.Errorf("an attempt canceled before it starts: %v", err)
	}
}

func TestRunEndsWhatTheProgramLeaves(t *testing.T) {
	a := attempt(t, "child\nline {\"step\": 1, \"val_loss\": 3.9}\nexit 0")
	out := runFake(t, a)
	if out.Status != Completed {
		t.Errorf("status %s (%s), want completed", out.Status, out.Reason)
	}
	if pid, gone := childGone(t, a); !gone {
		t.Errorf("child %d still running after Run returned", pid)
	}
}

func TestRunRefusesBadLines(t *testing.T) {
	a := attempt(t, `line not json
line [1, 2]
line {"train_loss": 3.0}
line {"step": -1}
line {"step": 4, "val_loss": "low"}
line {"step": 8, "train_loss": 3.1}
line {"step": 7, "train_loss": 3.0}
line {"step": 8, "tokens": 1.5}

line {"step": 8, "train_loss": 3.0, "accuracy": 0.5}
partial {"step": 9, "val_loss": 2.9}`)
	var told []string // what OnRefused hears while the program runs, for its heartbeats
	a.OnRefused = func(n int, line string) {
		if n == len(told)+1 {
			told = append(told, line)
		}
	}
	out := runFake(t, a)
	if out.Status != Completed || out.Lines != 3 || out.Refused != 7 || out.Last.Step != 9 || *out.Last.ValLoss != 2.9 {
		t.Fatalf("outcome %s, %d lines, %d refused, last %+v; want completed, 3, 7, step 9 (%s)", out.Status, out.Lines, out.Refused, out.Last, out.Reason)
	}
	if len(told) != 7 || !slices.Equal(told[:refusedSample], out.RefusedSample) {
		t.Errorf("OnRefused told %q, want the 7 refused lines, the sample first", told)
	}
	if len(out.RefusedSample) != refusedSample {
		t.Fatalf("RefusedSample = %q", out.RefusedSample)
	}
	for i, want := range []string{"line 1: not a JSON object: not json", "line 2: not a JSON object", "line 3: no step", "line 4: step -1: want an integer >= 0", `line 5: val_loss "low": want a number`} {
		if !strings.HasPrefix(out.RefusedSample[i], want) {
			t.Errorf("RefusedSample[%d] = %q, want %q...", i, out.RefusedSample[i], want)
		}
	}
}

// TestRunEnvironment: the program sees its own variables, a few of the worker's, and a
// HOME of its own, not the worker's, under which the standard AWS chain would find the
// worker's credentials file.
func TestRunEnvironment(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-for-programs")
	workerHome := t.TempDir()
	if err := os.MkdirAll(filepath.Join(workerHome, ".aws"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(workerHome, ".aws", "credentials"), []byte("[default]\naws_secret_access_key = not-for-programs\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", workerHome)
	t.Setenv("LC_ALL", "C.UTF-8")
	t.Setenv("PYTHONUNBUFFERED", "0")
	a := attempt(t, "env\nline {\"step\": 1, \"val_loss\": 3.9}")
	a.Argv = append(a.Argv, "--lr=0.002", "a b")
	runFake(t, a)
	var env, argv []string
	for name, v := range map[string]*[]string{"env.json": &env, "argv.json": &argv} {
		b, err := os.ReadFile(filepath.Join(a.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
		_, ours := a.Env[k]
		switch {
		case ours, k == "PATH", k == "HOME", k == "USER", k == "LANG", k == "TZ", strings.HasPrefix(k, "LC_"), k == "PYTHONUNBUFFERED":
		default:
			t.Errorf("the program sees %s", kv)
		}
	}
	if got["PYTHONUNBUFFERED"] != "1" || got["LC_ALL"] != "C.UTF-8" || got["SFSWEEP_METRICS"] != a.Metrics || got["PATH"] != os.Getenv("PATH") {
		t.Errorf("environment %v", got)
	}
	if got["HOME"] != a.Dir {
		t.Errorf("HOME %q, want the run directory %q, not the worker's %q", got["HOME"], a.Dir, workerHome)
	}
	// a registry's home: the program's, made for it
	a = attempt(t, "env\nline {\"step\": 1, \"val_loss\": 3.9}")
	a.Home = filepath.Join(t.TempDir(), "trainer-home")
	runFake(t, a)
	b, err := os.ReadFile(filepath.Join(a.Dir, "env.json"))
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(a.Home); !strings.Contains(string(b), `"HOME=`+a.Home+`"`) || err != nil || !fi.IsDir() {
		t.Errorf("with Home %s: environment %s", a.Home, b)
	}
	if !slices.Equal(argv, []string{"--lr=0.002", "a b"}) {
		t.Errorf("argv %q", argv)
	}
	// a registry's env_pass: the worker's NCCL_* and HF_HOME reach the program, its
	// credentials do not, even where the attempt's patterns would match them, and the
	// trainer's own env overrides a passed value
	t.Setenv("NCCL_DEBUG", "INFO")
	t.Setenv("NCCL_IB_DISABLE", "1")
	t.Setenv("HF_HOME", "/cache/hf")
	t.Setenv("HF_TOKEN", "not-passed")
	t.Setenv("SFSWEEP_S3_SECRET_KEY", "not-for-programs")
	a = attempt(t, "env\nline {\"step\": 1, \"val_loss\": 3.9}")
	a.Pass = []string{"NCCL_*", "HF_HOME", "AWS_*", "SFSWEEP_*"}
	a.Env["NCCL_IB_DISABLE"] = "0"
	runFake(t, a)
	if b, err = os.ReadFile(filepath.Join(a.Dir, "env.json")); err != nil {
		t.Fatal(err)
	}
	env = nil
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatal(err)
	}
	passed := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		passed[k] = v
	}
	if passed["NCCL_DEBUG"] != "INFO" || passed["NCCL_IB_DISABLE"] != "0" || passed["HF_HOME"] != "/cache/hf" {
		t.Errorf("passed environment %v", passed)
	}
	for _, k := range []string{"HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "SFSWEEP_S3_SECRET_KEY"} {
		if v, ok := passed[k]; ok {
			t.Errorf("the program sees %s=%s", k, v)
		}
	}
}

func TestRunLogs(t *testing.T) {
	var script []string
	for i := range 30 {
		script = append(script, "stderr warning "+strconv.Itoa(i))
	}
	script = append(script, "stdout hello", "stderr 10%|#   \r50%|##  \r100%|###", "stderr crlf\r", "stderr "+strings.Repeat("x", 1000), `line {"step": 1, "val_loss": 3.9}`, "exit 1")
	a := attempt(t, strings.Join(script, "\n"))
	out := runFake(t, a)
	stdout, _ := os.ReadFile(filepath.Join(a.LogDir, "stdout"))
	stderr, _ := os.ReadFile(filepath.Join(a.LogDir, "stderr"))
	if string(stdout) != "hello\n" || !strings.HasPrefix(string(stderr), "warning 0\n") || len(stderr) < 1000 {
		t.Errorf("logs: stdout %q, stderr %d bytes", stdout, len(stderr))
	}
	if len(out.StderrTail) != stderrLines || out.StderrTail[0] != "warning 13" || out.StderrTail[17] != "100%|###" || out.StderrTail[18] != "crlf" || len(out.StderrTail[19]) != stderrLineLen+3 {
		t.Errorf("StderrTail = %q", out.StderrTail)
	}
	if !strings.Contains(out.Reason, "exit status 1: 100%|### | crlf | xxx") || len(out.Reason) > 600 {
		t.Errorf("Reason = %q", out.Reason)
	}
}

func TestRunCannotStart(t *testing.T) {
	a := attempt(t, "")
	a.Argv = []string{filepath.Join(a.Dir, "missing")}
	out, err := Run(context.Background(), a)
	if err == nil || out.Status != Failed || !strings.Contains(out.Reason, "cannot start") {
		t.Errorf("Run = %+v, %v", out, err)
	}
	a.Env["BAD=NAME"] = "x"
	if _, err := Run(context.Background(), a); err == nil {
		t.Error("Run took an environment variable named BAD=NAME")
	}
}

// TestRunSpec runs what Spec.Argv makes of a trainer and its parameters.
func TestRunSpec(t *testing.T) {
	a := attempt(t, "env\nline {\"step\": 1, \"val_loss\": 3.9}")
	self := a.Argv[0]
	spec := Spec{Name: "fake", Program: filepath.Base(self), Command: []string{"${env}", "${program}", "--config", "${args_json}", "${args}"}}
	if err := spec.Check(); err != nil {
		t.Fatal(err)
	}
	argv, err := spec.Argv(filepath.Dir(self), []Arg{{"lr", 1e-05}, {"model.n_layers", 4}, {"tags", []string{"a", "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	a.Argv = argv
	runFake(t, a)
	b, err := os.ReadFile(filepath.Join(a.Dir, "argv.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := []string{"--config", `{"lr":1e-05,"model.n_layers":4,"tags":["a","b"]}`, "--lr=1e-05", "--model.n_layers=4", `--tags=["a","b"]`}
	if !slices.Equal(got, want) {
		t.Errorf("the program got %q\nwant %q", got, want)
	}
}
