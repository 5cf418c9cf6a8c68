package pytorch_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/sfsweep/sfsweep/training"
)

// TestDecayProbe trains a run, then probes its checkpoint of step 10 as sfsweep does
// (SFSWEEP_MODE=probe): K more steps whose learning rate decays from the run's at step 10
// (within SF-AdamW's warmup, so not its peak) to 0 in the probe's shape, a line per step,
// the last with val_loss, and no checkpoint written.
func TestDecayProbe(t *testing.T) {
	const from, k, steps = 10, 4, 20
	for _, c := range []struct {
		opt   training.OptimizerConfig
		shape string
	}{
		{training.OptimizerConfig{Name: training.SFAdamW, LR: 1e-2, Beta1: 0.9, Beta2: 0.99, WarmupFrac: ptr(0.6)}, "linear"},
		{training.OptimizerConfig{Name: training.SFAdamW, LR: 1e-2, Beta1: 0.9, Beta2: 0.99, C: 50, WarmupFrac: ptr(0.6)}, "sqrt"},
		{training.OptimizerConfig{Name: training.AdamW, LR: 1e-2, Beta1: 0.9, Beta2: 0.95, Schedule: "cosine"}, "linear"},
	} {
		t.Run(c.opt.Name+" "+c.shape, func(t *testing.T) {
			tr := newTrial(t)
			args := append(slices.Clone(tiny), fmt.Sprintf("--steps=%d", steps), "--checkpoint_every=10",
				"--optimizer="+c.opt.Name, fmt.Sprintf("--lr=%g", c.opt.LR), fmt.Sprintf("--beta1=%g", c.opt.Beta1),
				fmt.Sprintf("--beta2=%g", c.opt.Beta2), fmt.Sprintf("--c=%g", c.opt.C))
			if c.opt.WarmupFrac != nil {
				args = append(args, fmt.Sprintf("--warmup_frac=%g", *c.opt.WarmupFrac))
			}
			if code, _, stderr := tr.run(t, "run.jsonl", nil, args...); code != 0 {
				t.Fatalf("run: exit %d:\n%s", code, stderr)
			}
			before := tr.checkpoints(t)
			spec := fmt.Sprintf(`SFSWEEP_PROBE={"kind": "decay", "step": %d, "steps": %d, "shape": %q}`, from, k, c.shape)
			code, _, stderr := tr.run(t, "probe.jsonl", []string{"SFSWEEP_MODE=probe", spec}, args...)
			if code != 0 {
				t.Fatalf("probe: exit %d:\n%s", code, stderr)
			}
			if after := tr.checkpoints(t); !slices.Equal(after, before) {
				t.Errorf("checkpoints %v after the probe, %v before: a probe writes none", after, before)
			}

			cfg := training.Config{Optimizer: c.opt, Loop: training.Loop{Steps: steps}}.WithDefaults()
			var peak float64
			if c.opt.Name == training.SFAdamW {
				peak = c.opt.LR * min(1, float64(from)/float64(cfg.SFAdamWConfig().WarmupSteps))
			} else {
				peak = cfg.AdamWConfig().Schedule.At(from)
			}
			if peak == c.opt.LR {
				t.Fatalf("the run's learning rate at step %d is its peak: the probe would not show where it starts", from)
			}
			got := parseLines(t, tr.lines(t, "probe.jsonl"))
			if len(got) != k {
				t.Fatalf("%d probe lines, want %d", len(got), k)
			}
			for i, l := range got {
				p := float64(i+1) / k
				if c.shape == "sqrt" {
					p = math.Sqrt(p)
				}
				want := peak * (1 - p)
				if l.Step != from+i+1 || l.LR == nil || math.Abs(*l.LR-want) > 1e-15 || l.TrainLoss == nil {
					t.Errorf("line %d: %+v, want step %d, lr %v and train_loss", i+1, l, from+i+1, want)
				}
				if last := i == k-1; (l.ValLoss != nil) != last {
					t.Errorf("line %d: val_loss %v, want one on the last line only", i+1, l.ValLoss)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestBatchTokensAverages checks one step of two micro-batches (batch_tokens = 2 ×
// micro_batch × seq_len) against the gradient computed here: the optimizer is given the mean
// of the two micro-batches' gradients (clipping off, so that .grad after the step is what it
// was given), and the step's loss is their mean loss.
func TestBatchTokensAverages(t *testing.T) {
	needTorch(t)
	const script = `
import copy, sys, torch
import train
a = train.parse_args(sys.argv[1:])
assert a.accum == 2, a.accum
t = train.Trainer(a)
ref = copy.deepcopy(t.model)
params = list(ref.parameters())
losses, grads = [], []
for micro in range(2):
    idx, tgt = t.train.batch(1, micro, a.micro_batch, "cpu")
    loss = ref(idx, tgt)
    losses.append(loss.item())
    grads.append(torch.autograd.grad(loss, params))
assert losses[0] != losses[1], "the micro-batches are the same"
got = t.step(1)
assert abs(got - sum(losses) / 2) < 1e-6, (got, losses)
for p, g0, g1 in zip(t.params, *grads):
    want = (g0 + g1) / 2
    assert torch.allclose(p.grad, want, rtol=1e-5, atol=1e-7), (p.grad - want).abs().max()
print("ok")
`
	tr := newTrial(t)
	tr.env = append(tr.env, "SFSWEEP_CHECKPOINT_DIR=")
	cmd := tr.command(t, "unused.jsonl", nil, append(slices.Clone(tiny), "--batch_tokens=128", "--optimizer=adamw", "--grad_clip=0")...)
	cmd.Args = append([]string{python, "-B", "-c", script}, cmd.Args[3:]...)
	cmd.Dir = "."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
}
