package pytorch_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"testing"

	"github.com/sfsweep/sfsweep/program"
)

// Two ranks under torchrun (gloo, Debian's torch) train what one process trains: the same
// losses at every evaluation to float64 rounding, each step's micro-batches split between
// them, and rank 0's metrics lines alone. A batch that does not split evenly over the ranks
// is refused.
func TestTrainRanks(t *testing.T) {
	t.Parallel()
	needTorch(t)
	if err := exec.Command(python, "-c", "import torch.distributed.run").Run(); err != nil {
		t.Skipf("%s cannot import torch.distributed.run: %v", python, err)
	}
	const vocab, steps, every = 31, 12, 4
	dir := t.TempDir()
	writeTokens(t, dir, vocab)
	args := []string{"train.py", "--data=" + dir, "--dim=32", "--layers=2", "--heads=2", "--hidden=64",
		fmt.Sprintf("--vocab=%d", vocab), "--context=16", "--micro_batch=4", "--batch_tokens=256", "--eval_seqs=32",
		fmt.Sprintf("--steps=%d", steps), fmt.Sprintf("--eval_every=%d", every), "--dtype=float64", "--lr=1e-2"}
	run := func(ranks int, extra ...string) ([]metric, string, error) {
		argv := append([]string{python, "-B"}, append(args, extra...)...)
		if ranks > 1 {
			var err error
			if argv, err = (program.Spec{Name: "train", Program: "train.py", Launcher: program.LauncherTorchrun, Interpreter: python}).Launch(argv, ranks); err != nil {
				t.Fatal(err)
			}
		}
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env, cmd.Stdout, cmd.Stderr = baseEnv(), &stdout, &stderr
		err := cmd.Run()
		var got []metric
		for sc := bufio.NewScanner(&stdout); sc.Scan(); {
			var m metric
			if json.Unmarshal(sc.Bytes(), &m) == nil && m.Step > 0 {
				got = append(got, m)
			}
		}
		return got, stderr.String(), err
	}
	one, msg, err := run(1)
	if err != nil || len(one) != steps/every {
		t.Fatalf("one process: %v, %d lines\n%s", err, len(one), msg)
	}
	two, msg, err := run(2)
	if err != nil {
		t.Fatalf("two ranks: %v\n%s", err, msg)
	}
	if len(two) != len(one) {
		t.Fatalf("two ranks wrote %d metrics lines, want rank 0's %d", len(two), len(one))
	}
	for i := range one {
		for _, v := range [][2]float64{{one[i].TrainLoss, two[i].TrainLoss}, {one[i].ValLoss, two[i].ValLoss}} {
			if math.Abs(v[0]-v[1]) > 1e-10*math.Abs(v[0]) {
				t.Errorf("step %d: one process %+v, two ranks %+v: want the same losses to rounding", one[i].Step, one[i], two[i])
			}
		}
	}
	if one[len(one)-1].ValLoss >= one[0].ValLoss {
		t.Errorf("val loss %v → %v: the run did not learn", one[0].ValLoss, one[len(one)-1].ValLoss)
	}
	if _, msg, err := run(3); err == nil || !bytes.Contains([]byte(msg), []byte("must split evenly over the 3 ranks")) {
		t.Errorf("4 micro-batches over 3 ranks: %v\n%s", err, msg)
	}
	t.Logf("one process %+v\ntwo ranks   %+v", one, two)
}
