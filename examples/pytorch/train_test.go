package pytorch_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/training"
)

// metric is one line train.py prints per evaluation.
type metric struct {
	Step      int     `json:"step"`
	TrainLoss float64 `json:"train_loss"`
	ValLoss   float64 `json:"val_loss"`
	LR        float64 `json:"lr"`
}

// writeTokens writes train.bin and val.bin, flat little-endian uint16 as `sfsweep data`
// writes them, of a sequence a small model learns in a few dozen steps.
func writeTokens(t *testing.T, dir string, vocab int) {
	t.Helper()
	writeSplit(t, dir, "train", 20000, vocab)
	writeSplit(t, dir, "val", 3000, vocab)
}

// writeSplit writes split.bin of n tokens of the sequence i·7 mod vocab.
func writeSplit(t *testing.T, dir, split string, n, vocab int) {
	t.Helper()
	toks := make([]uint16, n)
	for i := range toks {
		toks[i] = uint16(i * 7 % vocab)
	}
	var b bytes.Buffer
	if err := binary.Write(&b, binary.LittleEndian, toks); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, split+".bin"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTrainLearns trains a small LLaMA with train.py on token files, with refined SF-AdamW
// (in fp32 and under bf16 autocast) and with AdamW on a cosine and a WSD schedule, and
// checks that it learns, reports every
// evaluation, and follows the learning rate sfsweep's engine derives from the same run
// config. Needs Debian's python3-torch and python3-numpy; skips, saying so, without them.
func TestTrainLearns(t *testing.T) {
	t.Parallel()
	needTorch(t)
	const vocab, steps, every = 31, 60, 20
	dir := t.TempDir()
	writeTokens(t, dir, vocab)
	for _, tc := range []struct {
		opt       training.OptimizerConfig
		precision string
	}{
		{training.OptimizerConfig{Name: training.SFAdamW, LR: 1e-2, Beta1: 0.9, Beta2: 0.99, C: 50}, "fp32"},
		{training.OptimizerConfig{Name: training.SFAdamW, LR: 1e-2, Beta1: 0.9, Beta2: 0.99, C: 50}, "bf16"},
		{training.OptimizerConfig{Name: training.AdamW, LR: 1e-2, Beta1: 0.9, Beta2: 0.95, Schedule: "cosine"}, "fp32"},
		{training.OptimizerConfig{Name: training.AdamW, LR: 1e-2, Beta1: 0.9, Beta2: 0.95, Schedule: "wsd", DecayFrac: 0.2}, "fp32"},
	} {
		opt := tc.opt
		t.Run(strings.TrimSpace(opt.Name+" "+opt.Schedule+" "+tc.precision), func(t *testing.T) {
			args := []string{"-B", "train.py", "--data=" + dir, "--dim=32", "--layers=2", "--heads=2", "--hidden=64",
				fmt.Sprintf("--vocab=%d", vocab), "--context=16", "--micro_batch=8", "--eval_seqs=16",
				fmt.Sprintf("--steps=%d", steps), fmt.Sprintf("--eval_every=%d", every),
				"--optimizer=" + opt.Name, fmt.Sprintf("--lr=%g", opt.LR), fmt.Sprintf("--beta1=%g", opt.Beta1),
				fmt.Sprintf("--beta2=%g", opt.Beta2), fmt.Sprintf("--c=%g", opt.C), "--precision=" + tc.precision}
			if opt.Schedule != "" {
				args = append(args, "--schedule="+opt.Schedule, fmt.Sprintf("--decay_frac=%g", opt.DecayFrac))
			}
			var stderr bytes.Buffer
			cmd := exec.Command(python, args...)
			cmd.Env = baseEnv()
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("train.py: %v\n%s", err, stderr.String())
			}
			cfg := training.Config{Optimizer: opt, Loop: training.Loop{Steps: steps}}.WithDefaults()
			var got []metric
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				var m metric
				if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
					t.Fatalf("metrics line %q: %v", sc.Text(), err)
				}
				got = append(got, m)
			}
			if len(got) != steps/every {
				t.Fatalf("%d metrics lines, want %d:\n%s", len(got), steps/every, out)
			}
			for i, m := range got {
				if m.Step != (i+1)*every {
					t.Errorf("line %d: step %d, want %d", i+1, m.Step, (i+1)*every)
				}
				var want float64
				if opt.Name == training.SFAdamW {
					want = opt.LR * min(1, float64(m.Step)/float64(cfg.SFAdamWConfig().WarmupSteps))
				} else {
					want = cfg.AdamWConfig().Schedule.At(m.Step)
				}
				if math.Abs(m.LR-want) > 1e-15 {
					t.Errorf("step %d: lr %v, the engine's %v", m.Step, m.LR, want)
				}
			}
			// ln 31 ≈ 3.4 is the loss of a uniform guess; the sequence is fully predictable.
			if last := got[len(got)-1]; !(last.ValLoss < 0.3 && last.TrainLoss < 0.3) {
				t.Errorf("after %d steps: train loss %v, val loss %v, want both < 0.3", steps, last.TrainLoss, last.ValLoss)
			}
			t.Logf("%s", out)
		})
	}
}
