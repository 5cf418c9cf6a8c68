package pytorch_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/sfsweep/sfsweep/training"
)

// The probed run: probedSteps steps, checkpointed at from; the probe: k steps from there.
const probedSteps, from, k = 20, 10, 4

// TestDecayProbe trains a run, then probes its checkpoint of step 10 as sfsweep does
// (SFSWEEP_MODE=probe): K more steps whose learning rate decays from the run's at step 10
// (within SF-AdamW's warmup, so not its peak) to 0 in the probe's shape, a line per step,
// the last with val_loss, and no checkpoint written.
func TestDecayProbe(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		opt    training.OptimizerConfig
		shapes []string
	}{
		{training.OptimizerConfig{Name: training.SFAdamW, LR: 1e-2, Beta1: 0.9, Beta2: 0.99, C: 50, WarmupFrac: ptr(0.6)}, []string{"linear", "sqrt"}},
		{training.OptimizerConfig{Name: training.AdamW, LR: 1e-2, Beta1: 0.9, Beta2: 0.95, Schedule: "cosine"}, []string{"linear"}},
	} {
		t.Run(c.opt.Name, func(t *testing.T) {
			tr := newTrial(t)
			args := append(slices.Clone(tiny), fmt.Sprintf("--steps=%d", probedSteps), fmt.Sprintf("--checkpoint_every=%d", from),
				"--optimizer="+c.opt.Name, fmt.Sprintf("--lr=%g", c.opt.LR), fmt.Sprintf("--beta1=%g", c.opt.Beta1),
				fmt.Sprintf("--beta2=%g", c.opt.Beta2), fmt.Sprintf("--c=%g", c.opt.C))
			if c.opt.WarmupFrac != nil {
				args = append(args, fmt.Sprintf("--warmup_frac=%g", *c.opt.WarmupFrac))
			}
			if code, _, stderr := tr.run(t, "run.jsonl", nil, args...); code != 0 {
				t.Fatalf("run: exit %d:\n%s", code, stderr)
			}
			for _, shape := range c.shapes {
				checkProbe(t, tr, c.opt, shape, args)
			}
		})
	}
}

// checkProbe runs the decay probe of shape from the trial's checkpoint of step 10 and checks
// its lines against the learning rate sfsweep's engine gives opt at that step.
func checkProbe(t *testing.T, tr *trial, opt training.OptimizerConfig, shape string, args []string) {
	t.Helper()
	before := tr.checkpoints(t)
	spec := fmt.Sprintf(`SFSWEEP_PROBE={"kind": "lr_decay", "step": %d, "steps": %d, "shape": %q}`, from, k, shape)
	metrics := "probe-" + shape + ".jsonl"
	code, _, stderr := tr.run(t, metrics, []string{"SFSWEEP_MODE=probe", spec}, args...)
	if code != 0 {
		t.Fatalf("probe %s: exit %d:\n%s", shape, code, stderr)
	}
	if after := tr.checkpoints(t); !slices.Equal(after, before) {
		t.Errorf("checkpoints %v after the probe, %v before: a probe writes none", after, before)
	}

	cfg := training.Config{Optimizer: opt, Loop: training.Loop{Steps: probedSteps}}.WithDefaults()
	var peak float64
	if opt.Name == training.SFAdamW {
		peak = opt.LR * min(1, float64(from)/float64(cfg.SFAdamWConfig().WarmupSteps))
	} else {
		peak = cfg.AdamWConfig().Schedule.At(from)
	}
	if peak == opt.LR {
		t.Fatalf("the run's learning rate at step %d is its peak: the probe would not show where it starts", from)
	}
	got := parseLines(t, tr.lines(t, metrics))
	if len(got) != k {
		t.Fatalf("%d lines of the %s probe, want %d", len(got), shape, k)
	}
	for i, l := range got {
		p := float64(i+1) / k
		if shape == "sqrt" {
			p = math.Sqrt(p)
		}
		want := peak * (1 - p)
		if l.Step != from+i+1 || l.LR == nil || math.Abs(*l.LR-want) > 1e-15 || l.TrainLoss == nil {
			t.Errorf("%s line %d: %+v, want step %d, lr %v and train_loss", shape, i+1, l, from+i+1, want)
		}
		if last := i == k-1; (l.ValLoss != nil) != last {
			t.Errorf("%s line %d: val_loss %v, want one on the last line only", shape, i+1, l.ValLoss)
		}
	}
}

func ptr[T any](v T) *T { return &v }
