package pytorch_test

import (
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/sfsweep/sfsweep/training/data"
)

// TestSamplerMatchesEngine checks that tokens.py draws the batches of sfsweep's engine:
// the offsets of data.Sampler for seeds up to 2⁶⁴−1, steps, micro-batches and rows.
func TestSamplerMatchesEngine(t *testing.T) {
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
