package pytorch_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// runArgs is a run of 30 steps of two micro-batches each, evaluated every 5 steps and
// checkpointed every 10.
func runArgs(optimizer string) []string {
	return append(slices.Clone(tiny), "--steps=30", "--eval_every=5", "--checkpoint_every=10", "--batch_tokens=128",
		"--optimizer="+optimizer, "--lr=0.01", "--schedule=wsd", "--decay_frac=0.3")
}

// after returns the lines of lines whose step is above step.
func after(t *testing.T, lines []string, step int) []string {
	t.Helper()
	var out []string
	for i, l := range parseLines(t, lines) {
		if l.Step > step {
			out = append(out, lines[i])
		}
	}
	return out
}

// TestUntilAndResume stops a run at SFSWEEP_UNTIL and starts it again, and checks that the
// metrics lines after the checkpoint are those of an uninterrupted run, byte for byte.
func TestUntilAndResume(t *testing.T) {
	t.Parallel()
	for _, opt := range []string{"sfadamw", "adamw"} {
		t.Run(opt, func(t *testing.T) {
			whole := newTrial(t)
			if code, _, stderr := whole.run(t, "metrics.jsonl", nil, append(runArgs(opt), "--keep_checkpoints=2")...); code != 0 {
				t.Fatalf("uninterrupted run: exit %d:\n%s", code, stderr)
			}
			want := whole.lines(t, "metrics.jsonl")
			if names := whole.checkpoints(t); !slices.Equal(names, []string{"step-20.pt", "step-30.pt"}) {
				t.Errorf("checkpoints %v, want the newest 2: [step-20.pt step-30.pt]", names)
			}

			// Step 12 is neither an evaluation nor a checkpoint of the run: stopping there
			// evaluates and checkpoints it all the same, and the run must not feel it.
			tr := newTrial(t)
			code, _, stderr := tr.run(t, "until.jsonl", []string{"SFSWEEP_UNTIL=12"}, runArgs(opt)...)
			if code != 0 {
				t.Fatalf("SFSWEEP_UNTIL=12: exit %d:\n%s", code, stderr)
			}
			got := tr.lines(t, "until.jsonl")
			if len(got) != 3 || !slices.Equal(got[:2], want[:2]) {
				t.Fatalf("SFSWEEP_UNTIL=12 wrote\n%s\nwant the uninterrupted run's lines of steps 5 and 10\n%s\nand one of step 12",
					strings.Join(got, "\n"), strings.Join(want[:2], "\n"))
			}
			if l := parseLines(t, got[2:])[0]; l.Step != 12 || l.ValLoss == nil {
				t.Errorf("SFSWEEP_UNTIL=12: last line %s, want step 12 with val_loss", got[2])
			}
			if names := tr.checkpoints(t); !slices.Equal(names, []string{"step-10.pt", "step-12.pt"}) {
				t.Fatalf("checkpoints %v after SFSWEEP_UNTIL=12, want [step-10.pt step-12.pt]", names)
			}
			if opt == "sfadamw" { // started again at its rung, it writes that line again and stops
				code, _, stderr = tr.run(t, "again.jsonl", []string{"SFSWEEP_UNTIL=12"}, runArgs(opt)...)
				if again := tr.lines(t, "again.jsonl"); code != 0 || len(again) != 1 {
					t.Fatalf("SFSWEEP_UNTIL=12 again: exit %d, lines %q, want 0 and one line:\n%s", code, again, stderr)
				} else if l, rung := parseLines(t, again)[0], parseLines(t, got[2:])[0]; l.Step != 12 || l.ValLoss == nil || *l.ValLoss != *rung.ValLoss {
					t.Errorf("SFSWEEP_UNTIL=12 again: %s, want step 12 and the rung's val_loss %v", again[0], *rung.ValLoss)
				}
			}
			code, _, stderr = tr.run(t, "resumed.jsonl", []string{"SFSWEEP_UNTIL=0"}, runArgs(opt)...)
			if code != 0 || !strings.Contains(stderr, "resumed from") {
				t.Fatalf("resumed run: exit %d, want 0, resumed:\n%s", code, stderr)
			}
			if got := tr.lines(t, "resumed.jsonl"); !slices.Equal(got, after(t, want, 12)) {
				t.Errorf("resumed at step 12:\n%s\nuninterrupted:\n%s", strings.Join(got, "\n"), strings.Join(after(t, want, 12), "\n"))
			}
		})
	}
}

// TestResumeAfterKill SIGKILLs a run once its first checkpoint is in place and starts it
// again: it goes on from its newest checkpoint, and its lines after it are those of an
// uninterrupted run, byte for byte.
func TestResumeAfterKill(t *testing.T) {
	t.Parallel()
	args := append(runArgs("sfadamw"), "--steps=60")
	whole := newTrial(t)
	if code, _, stderr := whole.run(t, "metrics.jsonl", nil, args...); code != 0 {
		t.Fatalf("uninterrupted run: exit %d:\n%s", code, stderr)
	}
	want := whole.lines(t, "metrics.jsonl")

	tr := newTrial(t)
	cmd := tr.command(t, "killed.jsonl", nil, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(tr.ckpt, "step-10.pt")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(first); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no %s after 30 s", first)
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()
	newest := 0
	for _, name := range tr.checkpoints(t) {
		if s, ok := strings.CutPrefix(name, "step-"); ok {
			if n, err := strconv.Atoi(strings.TrimSuffix(s, ".pt")); err == nil && strings.HasSuffix(s, ".pt") {
				newest = max(newest, n)
			}
		}
	}
	if newest < 10 || newest >= 60 {
		t.Fatalf("newest checkpoint at the kill: step %d, want one in [10, 60)", newest)
	}
	code, _, stderr := tr.run(t, "resumed.jsonl", nil, args...)
	if code != 0 || !strings.Contains(stderr, fmt.Sprintf("step-%d.pt", newest)) {
		t.Fatalf("resumed run: exit %d, want 0, resumed from step %d:\n%s", code, newest, stderr)
	}
	if got := tr.lines(t, "resumed.jsonl"); !slices.Equal(got, after(t, want, newest)) {
		t.Errorf("resumed at step %d:\n%s\nuninterrupted:\n%s", newest, strings.Join(got, "\n"), strings.Join(after(t, want, newest), "\n"))
	}
}
