package native

import (
	"math"
	"slices"
	"testing"
)

// Accumulate and Losses give bitwise what Forward and Backward give micro-batch by
// micro-batch: the losses, in order, and the summed gradients; ZeroGrad and Losses forget
// the losses read or dropped, a refused micro-batch keeps none, and a step allocates
// nothing once the first has run.
func TestAccumulate(t *testing.T) {
	for _, name := range []string{"micro-llama", "micro-gpt2"} {
		cfg := preset(t, name)
		const batch, seqLen, micro = 2, 8, 3
		n := batch * seqLen
		queued := newModel[float32](t, cfg, batch, seqLen, 1)
		direct := newModel[float32](t, cfg, batch, seqLen, 1)
		tokens, targets := randomTokens(micro*n, cfg.Vocab, 2), randomTokens(micro*n, cfg.Vocab, 3)
		var want []float64
		for k := range micro {
			tok, tgt := tokens[k*n:(k+1)*n], targets[k*n:(k+1)*n]
			if err := queued.Accumulate(tok, tgt); err != nil {
				t.Fatal(err)
			}
			want = append(want, step(t, direct, tok, tgt))
		}
		bad := slices.Clone(tokens[:n])
		bad[0] = int32(cfg.Vocab)
		if err := queued.Accumulate(bad, targets[:n]); err == nil {
			t.Errorf("%s: Accumulate took a token outside the vocabulary", name)
		}
		got, err := queued.Losses([]float64{-1})
		if err != nil || len(got) != micro+1 || got[0] != -1 {
			t.Fatalf("%s: Losses = %v, %v: want the %d losses after dst's one", name, got, err, micro)
		}
		for k, l := range got[1:] {
			if math.Float64bits(l) != math.Float64bits(want[k]) {
				t.Errorf("%s: micro-batch %d: Losses gives %v, Forward %v", name, k, l, want[k])
			}
		}
		if !slices.Equal(queued.Grads(), direct.Grads()) {
			t.Errorf("%s: the accumulated gradients differ from Forward and Backward's", name)
		}
		if again, _ := queued.Losses(nil); len(again) != 0 {
			t.Errorf("%s: a second Losses gives %v, want none", name, again)
		}
		if err := queued.Accumulate(tokens[:n], targets[:n]); err != nil {
			t.Fatal(err)
		}
		queued.ZeroGrad()
		if dropped, _ := queued.Losses(nil); len(dropped) != 0 {
			t.Errorf("%s: Losses after ZeroGrad gives %v, want none", name, dropped)
		}
		dst := make([]float64, 0, micro)
		allocs := testing.AllocsPerRun(3, func() {
			queued.ZeroGrad()
			for k := range micro {
				if err := queued.Accumulate(tokens[k*n:(k+1)*n], targets[k*n:(k+1)*n]); err != nil {
					t.Fatal(err)
				}
			}
			dst, _ = queued.Losses(dst[:0])
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per step, want 0", name, allocs)
		}
	}
}
