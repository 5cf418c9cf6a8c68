// Package quickstart holds the README's quick start: a training program of a few lines and
// its sweep manifest. Its test follows the quick start as a newcomer would: the README's
// snippets are the files, and `sfsweep run sweep.yaml`, run from the manifest's directory
// by the built command, ends with the tables and runs.csv the README names, each trial's
// result the program's own when run alone.
package quickstart

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// readmeBlock returns the lines of the README's fenced block whose first line is first.
func readmeBlock(t *testing.T, first string) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if l != first || i == 0 || !strings.HasPrefix(lines[i-1], "```") {
			continue
		}
		for j := i + 1; j < len(lines); j++ {
			if strings.HasPrefix(lines[j], "```") {
				return lines[i+1 : j]
			}
		}
	}
	t.Fatalf("README.md has no block starting %q", first)
	return nil
}

func fileLines(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
}

// The README shows the manifest as it is, and lines of the program in their order.
func TestReadmeShowsTheFiles(t *testing.T) {
	var manifest []string
	for _, l := range fileLines(t, "sweep.yaml") {
		if !strings.HasPrefix(l, "#") {
			manifest = append(manifest, l)
		}
	}
	if got := readmeBlock(t, "# examples/quickstart/sweep.yaml"); strings.Join(got, "\n") != strings.Join(manifest, "\n") {
		t.Errorf("the README's manifest is not sweep.yaml:\n%s\nagainst\n%s", strings.Join(got, "\n"), strings.Join(manifest, "\n"))
	}
	program := fileLines(t, "train.py")
	at := 0
	for _, l := range readmeBlock(t, "# the heart of examples/quickstart/train.py") {
		if strings.TrimSpace(l) == "..." {
			continue
		}
		for at < len(program) && program[at] != l {
			at++
		}
		if at == len(program) {
			t.Errorf("the README's line %q is not a line of train.py after the ones before it", l)
			return
		}
		at++
	}
	if n := len(program); n != 29 {
		t.Errorf("train.py has %d lines; the README says 29", n)
	}
}

// alone runs train.py as sfsweep would, without sfsweep, and returns its last metrics line
// and exit status.
func alone(t *testing.T, python, lr, momentum string, seed int) (map[string]float64, int) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(python, "train.py", "--lr="+lr, "--momentum="+momentum)
	cmd.Env = append(os.Environ(), "SFSWEEP_STEPS=200", fmt.Sprintf("SFSWEEP_SEED=%d", seed),
		"SFSWEEP_CHECKPOINT_DIR="+dir, "SFSWEEP_METRICS="+filepath.Join(dir, "metrics.jsonl"))
	code := 0
	if out, err := cmd.CombinedOutput(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("train.py: %v\n%s", err, out)
		}
		code = ee.ExitCode()
	}
	lines := fileLines(t, filepath.Join(dir, "metrics.jsonl"))
	var last map[string]float64
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	return last, code
}

func TestQuickStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds sfsweep and runs a sweep of 16 trials (-short)")
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH: the quick start's program needs one")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "sfsweep")
	build := exec.Command("go", "build", "-o", bin, "github.com/sfsweep/sfsweep/cmd/sfsweep")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// The manifest's directory as a user has it, apart from this tree.
	work := filepath.Join(tmp, "quickstart")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"sweep.yaml", "train.py"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SFSWEEP_") {
			env = append(env, kv)
		}
	}
	run := func() string {
		t.Helper()
		cmd := exec.Command(bin, "run", "-ui=false", "-page", "off", "sweep.yaml")
		cmd.Dir, cmd.Env = work, env
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-done:
			case <-time.After(8 * time.Minute):
				cmd.Process.Kill()
			}
		}()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("sfsweep run sweep.yaml: %v\n%s", err, out)
		}
		return string(out)
	}
	run()

	out := filepath.Join(work, "out", "sweeps", "quickstart")
	f, err := os.Open(filepath.Join(out, "runs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(bufio.NewReader(f)).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 17 {
		t.Fatalf("runs.csv has %d rows; want a header and 16 trials", len(records))
	}
	col := map[string]int{}
	for i, name := range records[0] {
		col[name] = i
	}
	for _, name := range []string{"state", "val_loss", "diverged_at", "config.seed", "config.trainer.params.lr", "config.trainer.params.momentum"} {
		if _, ok := col[name]; !ok {
			t.Fatalf("runs.csv has no column %s: %q", name, records[0])
		}
	}
	diverged := 0
	for _, r := range records[1:] {
		lr, momentum := r[col["config.trainer.params.lr"]], r[col["config.trainer.params.momentum"]]
		seed, err := strconv.Atoi(r[col["config.seed"]])
		if err != nil {
			t.Fatalf("seed %q: %v", r[col["config.seed"]], err)
		}
		want, code := alone(t, python, lr, momentum, seed)
		name := fmt.Sprintf("lr %s, momentum %s, seed %d", lr, momentum, seed)
		switch code {
		case 0:
			got, err := strconv.ParseFloat(r[col["val_loss"]], 64)
			if r[col["state"]] != "completed" || err != nil || got != want["val_loss"] {
				t.Errorf("%s: %s, val_loss %s; alone it completes with %v", name, r[col["state"]], r[col["val_loss"]], want["val_loss"])
			}
		case 3:
			diverged++
			if r[col["state"]] != "diverged" || r[col["diverged_at"]] != strconv.Itoa(int(want["step"])) {
				t.Errorf("%s: %s at %q; alone it diverges after step %v", name, r[col["state"]], r[col["diverged_at"]], want["step"])
			}
		default:
			t.Errorf("%s: train.py alone exits %d", name, code)
		}
	}
	if diverged == 0 {
		t.Error("no trial of the grid diverged: the README's table shows one")
	}
	table, err := os.ReadFile(filepath.Join(out, "tables", "parameters.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(table), "| 0.3 | 0.9 |  | 0/2, 2 diverged |") {
		t.Errorf("tables/parameters.md has no row `| 0.3 | 0.9 |  | 0/2, 2 diverged |`, as the README says:\n%s", table)
	}

	// Again: every result is stored, nothing trains, and status finds the sweep by its name.
	start := time.Now()
	run()
	if d := time.Since(start); d > 90*time.Second {
		t.Errorf("the second run took %v: it should find every result", d)
	}
	st := exec.Command(bin, "status", "-dir", ".sfsweep", "quickstart")
	st.Dir, st.Env = work, env
	if b, err := st.CombinedOutput(); err != nil || !strings.Contains(string(b), "16") {
		t.Errorf("sfsweep status -dir .sfsweep quickstart: %v\n%s", err, b)
	}
}
