package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/sweeps"
)

// wandbTestdata is a W&B sweep of sweeps/testdata/wandb.
func wandbTestdata(name string) string {
	return filepath.Join("..", "..", "sweeps", "testdata", "wandb", name)
}

// TestImportWandb runs "sfsweep import wandb" end to end: the manifest on standard
// output or in -o's file, notes on standard error, the exit codes of errors.
func TestImportWandb(t *testing.T) {
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := runMain(context.Background(), append([]string{"import"}, args...), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	sweep := wandbTestdata("bayes-hyperband.yaml")
	// it names its program: a sweep of that program, every parameter passed through
	code, stdout, stderr := run("wandb", sweep)
	if code != 0 || !strings.Contains(stdout, "\ntrainer:\n  name: train\n  program: train.py\n") || !strings.Contains(stdout, "\n  c: [vanilla, 50, 200]\n") {
		t.Errorf("a sweep of its program: exit code %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = run("wandb", "-program", "fit.py", sweep)
	if code != 0 || !strings.Contains(stdout, "  program: fit.py\n") || !strings.Contains(stderr, sweep+": line 3: program = train.py: the program is fit.py, as given") {
		t.Errorf("-program: exit code %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	// -count is the budget of a sweep without run_cap
	noCap := filepath.Join(t.TempDir(), "no-cap.yaml")
	if err := os.WriteFile(noCap, []byte("program: t.py\nmethod: random\nparameters: {lr: {min: 0.1, max: 0.2}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr = run("wandb", "-count", "7", noCap); code != 0 || !strings.Contains(stdout, "  trials: 7\n") {
		t.Errorf("-count: exit code %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if code, _, stderr = run("wandb", noCap); code != 1 || !strings.Contains(stderr, "give run_cap, or -count") {
		t.Errorf("no budget: exit code %d, stderr:\n%s", code, stderr)
	}

	// -native: sfsweep's engine, the program ignored
	code, stdout, stderr = run("wandb", "-native", sweep)
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr)
	}
	m, err := sweeps.Parse([]byte(stdout))
	if err != nil {
		t.Fatalf("standard output does not parse: %v\n%s", err, stdout)
	}
	if m.Method() != sweeps.MethodTPE || m.Search.Trials != 20 || len(m.Optimizers) != 2 {
		t.Errorf("search %+v, %d grids: want tpe, 20 trials, 2 grids", m.Search, len(m.Optimizers))
	}
	if !strings.Contains(stderr, sweep+": line 3: program = train.py: ignored") {
		t.Errorf("stderr has no note of program:\n%s", stderr)
	}

	// -o writes the file, flags after the sweep too
	dir := t.TempDir()
	out := filepath.Join(dir, "imported.yaml")
	code, stdout, stderr = run("wandb", sweep, "-native", "-o", out)
	if code != 0 || stdout != "" {
		t.Fatalf("-o: exit code %d, stdout %q; stderr:\n%s", code, stdout, stderr)
	}
	src, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sweeps.Parse(src); err != nil {
		t.Errorf("%s does not parse: %v", out, err)
	}

	// -base supplies the rest
	base := filepath.Join(dir, "base.yaml")
	if err := os.WriteFile(base, []byte(strings.Replace(sweeps.DefaultWandbBase, "steps: 300", "steps: 600", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = run("wandb", "-native", "-base", base, wandbTestdata("grid.yaml"))
	if m, err := sweeps.Parse([]byte(stdout)); code != 0 || err != nil || m.Steps != 600 {
		t.Errorf("-base: exit code %d, %v; stderr:\n%s", code, err, stderr)
	}
	// an error of the base names the base's file
	if err := os.WriteFile(base, []byte(strings.Replace(sweeps.DefaultWandbBase, "seq_len: 128", "seq_len: -1", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = run("wandb", "-native", "-base", base, wandbTestdata("grid.yaml"))
	if code != 1 || !strings.Contains(stderr, base+": line 6: seq_len = -1") {
		t.Errorf("bad base: exit code %d, stderr:\n%s", code, stderr)
	}

	// a bad sweep: exit code 1, the error with its file and line, nothing written
	bad := wandbTestdata("bad-batch-size.yaml")
	code, stdout, stderr = run("wandb", "-o", filepath.Join(dir, "bad.yaml"), bad)
	if code != 1 || stdout != "" || !strings.Contains(stderr, bad+": line 13: parameters.batch_size = ") || !strings.Contains(stderr, "give batch_tokens") {
		t.Errorf("bad sweep: exit code %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.yaml")); !os.IsNotExist(err) {
		t.Errorf("a failed import wrote its output: %v", err)
	}

	// the command line itself: exit code 2
	for _, args := range [][]string{{}, {"comet", sweep}, {"wandb"}, {"wandb", sweep, "extra.yaml"}, {"wandb", "-x", sweep}, {"wandb", "-native", "-program", "t.py", sweep}, {"wandb", "-count", "-1", sweep}} {
		if code, _, stderr := run(args...); code != 2 {
			t.Errorf("sfsweep import %v: exit code %d, want 2; stderr:\n%s", args, code, stderr)
		}
	}
	if code, _, _ := run("wandb", filepath.Join(dir, "missing.yaml")); code != 1 {
		t.Errorf("a missing sweep: exit code %d, want 1", code)
	}
	var help bytes.Buffer
	if runMain(context.Background(), []string{"help"}, &help, &help); !strings.Contains(help.String(), "  import       import wandb SWEEP.yaml: ") {
		t.Errorf("sfsweep help lists no import:\n%s", help.String())
	}
}
