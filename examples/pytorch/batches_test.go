package pytorch_test

import (
	"encoding/json"
	"os/exec"
	"slices"
	"testing"

	"github.com/sfsweep/sfsweep/training/data"
)

// TestSamplerMatchesEngine checks that tokens.py draws the batches of sfsweep's engine:
// the offsets of data.Sampler for seeds up to 2⁶⁴−1, steps, micro-batches and rows.
func TestSamplerMatchesEngine(t *testing.T) {
	t.Parallel()
	needTorch(t)
	const script = `
import json, sys
import numpy as np
import tokens
out = []
for seed in (1, 2, 12345, 2**63 + 5, 2**64 - 1):
    s = tokens.Sampler(np.zeros(100003, dtype=np.uint16), 17, seed)
    out.append([s.offset(step, micro, row) for step in (1, 2, 1000) for micro in (0, 3) for row in (0, 1, 15)])
json.dump(out, sys.stdout)
`
	out, err := exec.Command(python, "-B", "-c", script).Output()
	if err != nil {
		t.Fatalf("tokens.py: %v", err)
	}
	var got [][]int
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	seeds := []uint64{1, 2, 12345, 1<<63 + 5, 1<<64 - 1}
	if len(got) != len(seeds) {
		t.Fatalf("%d seeds, want %d", len(got), len(seeds))
	}
	for i, seed := range seeds {
		s, err := data.NewSampler(make([]uint16, 100003), 17, seed)
		if err != nil {
			t.Fatal(err)
		}
		j := 0
		for _, step := range []int{1, 2, 1000} {
			for _, micro := range []int{0, 3} {
				for _, row := range []int{0, 1, 15} {
					if want := s.Offset(step, micro, row); got[i][j] != want {
						t.Errorf("seed %d step %d micro %d row %d: offset %d, the engine's %d", seed, step, micro, row, got[i][j], want)
					}
					j++
				}
			}
		}
	}
}

// TestBatchTokensAverages checks one step of two micro-batches (batch_tokens = 2 ×
// micro_batch × seq_len) against the gradient computed here: the optimizer is given the mean
// of the two micro-batches' gradients (clipping off, so that .grad after the step is what it
// was given), and the step's loss is their mean loss.
func TestBatchTokensAverages(t *testing.T) {
	t.Parallel()
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
    idx, tgt = t.sampler.batch(1, micro, a.micro_batch, "cpu")
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
