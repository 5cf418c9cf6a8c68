//go:build cuda

package cuda

import (
	"math"
	"strconv"
	"testing"

	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/model"
)

// The host side's checks on the device: a step taken through Accumulate and Losses (and,
// in graph_cuda_test.go, replayed from a CUDA graph) against the step taken through Forward
// and Backward, bitwise, over several steps of a device optimizer.

// trace is what a few training steps leave: each step's micro-batch losses, the gradients
// each step summed, and the parameters at the end.
type trace struct {
	losses [][]float64
	grads  [][]float32
	params []float32
}

// traceSteps trains e for steps steps of micro micro-batches from toks (cycled), with
// AdamW on the device after each: queued takes each step through Accumulate and Losses,
// else through Forward and Backward.
func traceSteps(t *testing.T, e *Engine, queued bool, toks [][]int32, steps, micro int) trace {
	t.Helper()
	o, err := e.NewAdamW(sfadamw.DefaultAdamWConfig(steps))
	if err != nil {
		t.Fatal(err)
	}
	var tr trace
	for s := range steps {
		e.ZeroGrad()
		var ls []float64
		for m := range micro {
			tk := toks[(s*micro+m)%len(toks)]
			if queued {
				err = e.Accumulate(tk[:e.n], tk[1:])
			} else {
				var l float64
				if l, err = e.Forward(tk[:e.n], tk[1:]); err == nil {
					ls = append(ls, l)
					err = e.Backward()
				}
			}
			if err != nil {
				t.Fatalf("step %d, micro-batch %d: %v", s, m, err)
			}
		}
		if queued {
			if ls, err = e.Losses(nil); err != nil {
				t.Fatal(err)
			}
		}
		g := make([]float32, e.NumParams())
		if err := e.ReadGrads(g); err != nil {
			t.Fatal(err)
		}
		tr.losses, tr.grads = append(tr.losses, ls), append(tr.grads, g)
		if err := o.Step(); err != nil {
			t.Fatal(err)
		}
	}
	tr.params = make([]float32, e.NumParams())
	if err := e.ReadParams(tr.params); err != nil {
		t.Fatal(err)
	}
	return tr
}

// sameTrace fails unless got is bitwise want, naming the first difference.
func sameTrace(t *testing.T, name string, cfg model.Config, got, want trace) {
	t.Helper()
	if len(got.losses) != len(want.losses) {
		t.Fatalf("%s: %d steps, want %d", name, len(got.losses), len(want.losses))
	}
	for s := range want.losses {
		if len(got.losses[s]) != len(want.losses[s]) {
			t.Fatalf("%s: step %d has %d losses, want %d", name, s, len(got.losses[s]), len(want.losses[s]))
		}
		for m, l := range want.losses[s] {
			if math.Float64bits(got.losses[s][m]) != math.Float64bits(l) {
				t.Errorf("%s: step %d, micro-batch %d: loss %v, want %v", name, s, m, got.losses[s][m], l)
			}
		}
		if i := firstDiff(bits32(got.grads[s]), bits32(want.grads[s])); i >= 0 {
			t.Errorf("%s: step %d: gradient of %s differs: %v, want %v", name, s, tensorAt(cfg, i), got.grads[s][i], want.grads[s][i])
		}
	}
	if i := firstDiff(bits32(got.params), bits32(want.params)); i >= 0 {
		t.Errorf("%s: parameter of %s differs after the steps: %v, want %v", name, tensorAt(cfg, i), got.params[i], want.params[i])
	}
}

// tensorAt names the tensor and index of the flat parameter i.
func tensorAt(cfg model.Config, i int) string {
	for _, ts := range cfg.Layout().Tensors {
		if i >= ts.Offset && i < ts.Offset+ts.Size {
			return ts.Name + "[" + strconv.Itoa(i-ts.Offset) + "]"
		}
	}
	return "?"
}

// hostCases are the engines the host-side checks run on: both architectures, bf16 and
// float32, with FastEnv's paths.
var hostCases = []struct {
	name          string
	preset        string
	batch, seqLen int
	prec          backend.Precision
}{
	{"micro-llama/bf16", "micro-llama", 2, 8, backend.BF16},
	{"micro-gpt2/fp32", "micro-gpt2", 2, 8, backend.FP32},
	{"tiny-llama/bf16", "tiny-llama", 4, 128, backend.BF16},
	{"tiny-gpt2/tf32", "tiny-gpt2", 4, 100, backend.TF32},
}

// A step's losses read once at its end are bitwise the losses Forward returns, and the
// gradients and the parameters after a device optimizer's steps are bitwise those of the
// steps taken through Forward and Backward; a step longer than the loss queue reads it
// more than once and still gives them all, in order. Accumulate waits for no micro-batch,
// so the host runs ahead of the device and refills the two pinned staging buffers while
// earlier copies are queued: were one refilled before its copy ran, a micro-batch would
// train on the tokens of the one two after it (the token sets cycle with period three).
func TestAccumulateBitwise(t *testing.T) {
	for _, tc := range hostCases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := preset(t, tc.preset)
			toks := tokenSets(cfg, tc.batch*tc.seqLen, 3, 31)
			steps, micro := 3, 3
			if tc.preset == "micro-llama" {
				micro = lossSlots + 2
			}
			var tr [2]trace
			for i, queued := range []bool{false, true} {
				e := hostEngine(t, cfg, tc.batch, tc.seqLen, tc.prec)
				tr[i] = traceSteps(t, e, queued, toks, steps, micro)
			}
			sameTrace(t, "Accumulate", cfg, tr[1], tr[0])
		})
	}
}

// Losses after ZeroGrad gives nothing, and an Accumulate refused for its input keeps no
// loss.
func TestAccumulateForgets(t *testing.T) {
	cfg := preset(t, "micro-llama")
	e := hostEngine(t, cfg, 2, 8, backend.FP32)
	tk := randomTokens(17, cfg.Vocab, 3)
	if err := e.Accumulate(tk[:16], tk[1:]); err != nil {
		t.Fatal(err)
	}
	e.ZeroGrad()
	bad := append([]int32{int32(cfg.Vocab)}, tk[1:16]...)
	if err := e.Accumulate(bad, tk[1:]); err == nil {
		t.Error("Accumulate took a token outside the vocabulary")
	}
	if ls, err := e.Losses(nil); err != nil || len(ls) != 0 {
		t.Errorf("Losses after ZeroGrad and a refused micro-batch = %v, %v; want none", ls, err)
	}
}

// tokenSets returns k micro-batches of n tokens and their n targets, each n+1 random ids
// from seed on.
func tokenSets(cfg model.Config, n, k int, seed uint64) [][]int32 {
	toks := make([][]int32, k)
	for i := range toks {
		toks[i] = randomTokens(n+1, cfg.Vocab, seed+uint64(i))
	}
	return toks
}

// hostEngine is an engine with FastEnv's paths and parameters initialised from seed 7,
// closed when the test ends.
func hostEngine(t *testing.T, cfg model.Config, batch, seqLen int, prec backend.Precision) *Engine {
	t.Helper()
	f, err := fastFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	return fastEngine(t, cfg, batch, seqLen, prec, f)
}
