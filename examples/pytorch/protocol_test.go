package pytorch_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/training/model"
)

// needTorch skips t, saying so, where python cannot import torch and numpy.
func needTorch(t *testing.T) {
	t.Helper()
	if err := exec.Command(python, "-c", "import torch, numpy").Run(); err != nil {
		t.Skipf("%s cannot import torch and numpy (apt-get install python3-torch python3-numpy): %v", python, err)
	}
}

// baseEnv is the environment every run of train.py gets: one thread, so that its floating
// point is the same in every process, which bitwise resume needs.
func baseEnv() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "OMP_NUM_THREADS=1", "PYTHONUNBUFFERED=1"}
}

// tiny is a LLaMA small enough to take a few milliseconds a step, on tokens of vocab 31.
var tiny = []string{"--dim=32", "--layers=2", "--heads=2", "--hidden=64", "--vocab=31", "--context=16",
	"--micro_batch=4", "--eval_seqs=16"}

// trial is the directories sfsweep gives a program: a run directory (its working
// directory), token files, a checkpoint directory.
type trial struct {
	dir, ckpt string
	env       []string
}

func newTrial(t *testing.T) *trial {
	t.Helper()
	needTorch(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTokens(t, data, 31)
	ckpt := filepath.Join(dir, "checkpoints")
	return &trial{dir: dir, ckpt: ckpt, env: append(baseEnv(), "SFSWEEP_DATA="+data, "SFSWEEP_CHECKPOINT_DIR="+ckpt)}
}

// command is train.py with args, its metrics appended to the run directory's file metrics
// and env added to the trial's environment.
func (tr *trial) command(t *testing.T, metrics string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	prog, err := filepath.Abs("train.py")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, append([]string{"-B", prog}, args...)...)
	cmd.Dir = tr.dir
	cmd.Env = append(slices.Clone(tr.env), "SFSWEEP_RUN_DIR="+tr.dir, "SFSWEEP_METRICS="+filepath.Join(tr.dir, metrics))
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// run runs train.py to its end and returns its exit status, stdout and stderr.
func (tr *trial) run(t *testing.T, metrics string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := tr.command(t, metrics, env, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	case err != nil:
		t.Fatal(err)
	}
	return 0, stdout.String(), stderr.String()
}

// lines returns the lines of the run directory's file name.
func (tr *trial) lines(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(tr.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// checkpoints returns the names in the checkpoint directory.
func (tr *trial) checkpoints(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(tr.ckpt)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// line is a metrics line; absent fields stay nil.
type line struct {
	Step      int      `json:"step"`
	Tokens    int64    `json:"tokens"`
	LR        *float64 `json:"lr"`
	TrainLoss *float64 `json:"train_loss"`
	ValLoss   *float64 `json:"val_loss"`
	TestLoss  *float64 `json:"test_loss"`
}

func parseLines(t *testing.T, raw []string) []line {
	t.Helper()
	out := make([]line, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal([]byte(r), &out[i]); err != nil {
			t.Fatalf("metrics line %d %q: %v", i+1, r, err)
		}
	}
	return out
}

func stepsOf(ls []line) []int {
	out := make([]int, len(ls))
	for i, l := range ls {
		out[i] = l.Step
	}
	return out
}

// TestMetricsAndEnvironment runs train.py as sfsweep does: the model card of
// $SFSWEEP_CONFIG, the token files of $SFSWEEP_DATA (with a test split), the steps of
// $SFSWEEP_STEPS, metrics appended to $SFSWEEP_METRICS, two micro-batches a step, and checks
// every line.
func TestMetricsAndEnvironment(t *testing.T) {
	t.Parallel()
	tr := newTrial(t)
	writeSplit(t, filepath.Join(tr.dir, "data"), "test", 2000, 31)
	card := model.Config{Arch: model.LLaMA, Vocab: 31, Dim: 32, Layers: 2, Heads: 2, Context: 8, Hidden: 64, Batch: 4}.WithDefaults()
	if err := card.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg, err := json.Marshal(map[string]any{"trial_id": "t", "config": map[string]any{}, "params": map[string]any{}, "model": card})
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(tr.dir, "trial.json")
	if err := os.WriteFile(cfgFile, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	// batch_tokens 64 is two micro-batches of the card's batch (4) × context (8): without the
	// card, micro_batch 16 × seq_len 128 would make it invalid.
	const batchTokens = 64
	env := []string{"SFSWEEP_CONFIG=" + cfgFile, "SFSWEEP_STEPS=12", "SFSWEEP_SEED=7"}
	code, stdout, stderr := tr.run(t, "metrics.jsonl", env, "--eval_every=4", "--eval_seqs=8", "--test_seqs=8", "--batch_tokens=64", "--lr=0.01")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	if strings.Contains(stdout, "step") {
		t.Errorf("metrics on stdout with $SFSWEEP_METRICS set:\n%s", stdout)
	}
	got := parseLines(t, tr.lines(t, "metrics.jsonl"))
	if !slices.Equal(stepsOf(got), []int{4, 8, 12}) {
		t.Fatalf("steps %v, want [4 8 12]", stepsOf(got))
	}
	for i, l := range got {
		if l.Tokens != int64(l.Step)*batchTokens {
			t.Errorf("step %d: tokens %d, want %d", l.Step, l.Tokens, l.Step*batchTokens)
		}
		if l.LR == nil || l.TrainLoss == nil || l.ValLoss == nil {
			t.Errorf("step %d: want lr, train_loss and val_loss: %+v", l.Step, l)
		}
		if last := i == len(got)-1; (l.TestLoss != nil) != last {
			t.Errorf("step %d: test_loss %v, want one on the last line only", l.Step, l.TestLoss)
		}
	}
	if names := tr.checkpoints(t); !slices.Equal(names, []string{"step-12.pt"}) {
		t.Errorf("checkpoints %v, want the end's only (checkpoint_every unset)", names)
	}
}

// TestExitStatus checks the documented statuses: 2 for what argparse or the config refuses,
// 3 for divergence, after the line with the non-finite loss.
func TestExitStatus(t *testing.T) {
	t.Parallel()
	tr := newTrial(t)
	gpt2 := filepath.Join(tr.dir, "gpt2.json")
	if err := os.WriteFile(gpt2, []byte(`{"model": {"arch": "gpt2", "vocab": 31, "dim": 32, "layers": 1, "heads": 2, "context": 16, "hidden": 128, "batch": 4}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		env    []string
		args   []string
		code   int
		stderr string
	}{
		{"unknown argument", nil, []string{"--dropout=0.1"}, 2, "unrecognized arguments: --dropout=0.1"},
		{"abbreviated argument", nil, []string{"--step=5"}, 2, "unrecognized arguments: --step=5"},
		{"batch_tokens", nil, []string{"--batch_tokens=100"}, 2, "batch_tokens = 100"},
		{"c for adamw", nil, []string{"--optimizer=adamw", "--c=50"}, 2, "c = 50.0: applies to sfadamw only"},
		{"gpt2 card", []string{"SFSWEEP_CONFIG=" + gpt2}, nil, 2, "model.arch = gpt2"},
		{"probe kind", []string{"SFSWEEP_MODE=probe", `SFSWEEP_PROBE={"kind": "interpolate", "step": 5, "steps": 3}`}, nil, 2, "kind must be"},
		{"diverged", nil, []string{"--lr=1e30"}, 3, "diverged"},
	} {
		t.Run(c.name, func(t *testing.T) {
			metrics := strings.ReplaceAll(c.name, " ", "-") + ".jsonl"
			code, _, stderr := tr.run(t, metrics, c.env, append(slices.Clone(tiny), append([]string{"--steps=10"}, c.args...)...)...)
			if code != c.code || !strings.Contains(stderr, c.stderr) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit %d, stderr with %q", code, stderr, c.code, c.stderr)
			}
			if c.code == 3 {
				lines := tr.lines(t, metrics)
				if len(lines) == 0 || !strings.Contains(lines[len(lines)-1], "NaN") {
					t.Errorf("metrics %q: want a last line with NaN", lines)
				}
			}
		})
	}
}
