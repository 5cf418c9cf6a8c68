//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/model"
)

// Engines sharing the GPU, each trained from a goroutine of its own, run at once on their
// own streams and cuBLAS handles: a trial's losses and parameters are the same bits beside
// others as alone.

// packStepsEnv names an environment variable that, set to a number of steps, makes
// TestPackedThroughput measure four twin-size engines trained at once against the same
// four one after another (bench/gpu/check.sh's pack stage).
const packStepsEnv = "SFSWEEP_CUDA_PACK_STEPS"

// The shape of a twin trial (sweeps/examples/*-tiny.yaml): twin-llama, one micro-batch of
// 16 sequences of 128 tokens per step.
const twinBatch, twinSeqLen = 16, 128

// packed is one engine of a packing check: its data, and what its training leaves.
type packed struct {
	e      *Engine
	seed   uint64
	toks   [][]int32 // per step, n+1 tokens
	losses []float64
	params []float32
	grads  []float32
	err    error
}

// newPacked makes count twin-size engines of precision p, each with parameters and data
// of its own seed (so that engines mixing their work up would be seen), for steps steps.
func newPacked(t *testing.T, p backend.Precision, count, steps int) []*packed {
	t.Helper()
	cfg := preset(t, "twin-llama")
	n := twinBatch * twinSeqLen
	out := make([]*packed, count)
	for i := range out {
		k := &packed{e: openEngine(t, cfg, twinBatch, twinSeqLen, p), seed: uint64(11 + i)}
		for s := range steps {
			k.toks = append(k.toks, randomTokens(n+1, cfg.Vocab, 1000*k.seed+uint64(s)))
		}
		out[i] = k
	}
	return out
}

// train initialises the engine from its seed and trains it with SF-AdamW (gradient
// clipping on, so each step also reads the gradient norm back), keeping the losses, the
// last gradients and the final parameters.
func (k *packed) train() {
	k.losses, k.params, k.grads = nil, nil, nil
	e := k.e
	size := e.NumParams()
	init := make([]float32, size)
	model.Init(e.Config(), k.seed, init)
	if k.err = e.WriteParams(init); k.err != nil {
		return
	}
	opt, err := e.NewSFAdamW(sfadamw.DefaultConfig())
	if err != nil {
		k.err = err
		return
	}
	n := e.n
	for _, tk := range k.toks {
		e.ZeroGrad()
		loss, err := e.Forward(tk[:n], tk[1:])
		if err == nil {
			err = e.Backward()
		}
		if err == nil {
			err = opt.Step()
		}
		if err != nil {
			k.err = err
			return
		}
		k.losses = append(k.losses, loss)
	}
	k.params, k.grads = make([]float32, size), make([]float32, size)
	if k.err = e.ReadParams(k.params); k.err == nil {
		k.err = e.ReadGrads(k.grads)
	}
}

// trainAll trains the engines one after another, or all at once from a goroutine each
// released together, and returns the wall time.
func trainAll(ks []*packed, atOnce bool) time.Duration {
	start := time.Now()
	if !atOnce {
		for _, k := range ks {
			k.train()
		}
		return time.Since(start)
	}
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for _, k := range ks {
		wg.Go(func() {
			<-gate
			k.train()
		})
	}
	start = time.Now()
	close(gate)
	wg.Wait()
	return time.Since(start)
}

// result is a copy of what the engine's training left.
type result struct {
	losses        []float64
	params, grads []float32
}

func results(t *testing.T, ks []*packed) []result {
	t.Helper()
	out := make([]result, len(ks))
	for i, k := range ks {
		if k.err != nil {
			t.Fatalf("engine %d: %v", i, k.err)
		}
		out[i] = result{slices.Clone(k.losses), slices.Clone(k.params), slices.Clone(k.grads)}
	}
	return out
}

// sameBits reports where alone and beside differ, or "".
func sameBits(alone, beside result) string {
	for s := range alone.losses {
		if math.Float64bits(alone.losses[s]) != math.Float64bits(beside.losses[s]) {
			return fmt.Sprintf("loss of step %d: %v beside the others, %v alone", s, beside.losses[s], alone.losses[s])
		}
	}
	if i := firstDiff(bits32(alone.params), bits32(beside.params)); i >= 0 {
		return fmt.Sprintf("parameter %d: %v beside the others, %v alone", i, beside.params[i], alone.params[i])
	}
	if i := firstDiff(bits32(alone.grads), bits32(beside.grads)); i >= 0 {
		return fmt.Sprintf("gradient %d: %v beside the others, %v alone", i, beside.grads[i], alone.grads[i])
	}
	return ""
}

// TestPackedBitwise: two and four twin-size engines of each precision, trained at once
// from goroutines of their own, give the losses, gradients and parameters of the same
// engines trained one after another, bit for bit.
func TestPackedBitwise(t *testing.T) {
	const steps = 8
	for _, b := range backend.Family(family) {
		for _, count := range []int{2, 4} {
			t.Run(fmt.Sprintf("%s/%d", b.Name, count), func(t *testing.T) {
				ks := newPacked(t, b.Precision, count, steps)
				trainAll(ks, false)
				alone := results(t, ks)
				for round := range 2 {
					trainAll(ks, true)
					beside := results(t, ks)
					for i := range ks {
						if d := sameBits(alone[i], beside[i]); d != "" {
							t.Errorf("round %d, engine %d of %d: %s", round, i, count, d)
						}
					}
				}
			})
		}
	}
}

// TestPackedThroughput measures, when packStepsEnv is set, four twin-size engines of each
// precision trained at once against the same four one after another: the throughput of
// a GPU that packs small trials. The results must still agree bit for bit.
func TestPackedThroughput(t *testing.T) {
	v := os.Getenv(packStepsEnv)
	if v == "" {
		t.Skipf("set %s to a number of steps to measure", packStepsEnv)
	}
	steps, err := strconv.Atoi(v)
	if err != nil || steps < 1 {
		t.Fatalf("%s = %q: want a number of steps ≥ 1", packStepsEnv, v)
	}
	const count = 4
	tokens := float64(count * steps * twinBatch * twinSeqLen)
	for _, b := range backend.Family(family) {
		t.Run(b.Name, func(t *testing.T) {
			ks := newPacked(t, b.Precision, count, steps)
			trainAll(ks, true) // warm-up: the kernels' first launches, cuBLAS's heuristics
			alone := trainAll(ks, false)
			want := results(t, ks)
			together := trainAll(ks, true)
			got := results(t, ks)
			for i := range ks {
				if d := sameBits(want[i], got[i]); d != "" {
					t.Errorf("engine %d: %s", i, d)
				}
			}
			// the line bench/gpu/check.sh's pack stage reads
			t.Logf("pack: %s: %d twin-llama engines of %d steps: one after another %.0f tok/s (%.2f s), at once %.0f tok/s (%.2f s): %.2fx",
				b.Name, count, steps, tokens/alone.Seconds(), alone.Seconds(), tokens/together.Seconds(), together.Seconds(),
				alone.Seconds()/together.Seconds())
		})
	}
}
