//go:build cuda

package training

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/sfsweep/sfsweep/internal/blob"
	_ "github.com/sfsweep/sfsweep/training/cuda" // registers "cuda"
	"github.com/sfsweep/sfsweep/training/data"
)

// deviceCorpus is the test corpus on a machine without a Go toolchain: a prepared copy
// (sfsweep data default -max-bytes 400000 -out DIR) named by SFSWEEP_TEST_DATA.
func deviceCorpus(t *testing.T) *data.Dataset {
	if dir := os.Getenv("SFSWEEP_TEST_DATA"); dir != "" {
		ds, err := data.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	return testCorpus(t)
}

// A training run on the cuda backend follows the cpu backend's run: the same curves at
// x, y and their EWAs to float32 accuracy, through the training loop, its accumulation,
// its evaluation and a resume.
func TestRunCUDAMatchesCPU(t *testing.T) {
	ds := deviceCorpus(t)
	for _, opt := range []string{SFAdamW, AdamW} {
		t.Run(opt, func(t *testing.T) {
			cfg := testConfig(opt)
			var res [2]*Result
			for i, be := range []string{"cpu", "cuda"} {
				cfg.Backend = be
				b, err := NewBatches(cfg, ds)
				if err != nil {
					t.Fatal(err)
				}
				store, _ := blob.NewDir(t.TempDir())
				res[i] = runKilledAt(t, cfg, Options{Store: store, Prefix: "t", Data: b}, be == "cuda")
			}
			worst := 0.0
			for k, c := range res[0].Curves {
				for it, v := range c.Val {
					g := res[1].Curves[k].Val[it]
					worst = max(worst, math.Abs(g-v)/v)
				}
			}
			t.Logf("%s: worst relative difference of a validation loss, cuda vs cpu: %.2e; test ppl at %s: cpu %.4f cuda %.4f; resumed from %d",
				opt, worst, res[0].Primary, res[0].TestPPL[res[0].Primary], res[1].TestPPL[res[1].Primary], res[1].Resumed)
			if worst > 1e-4 || res[1].Resumed != 20 {
				t.Errorf("cuda run differs from the cpu run by %.2e (bound 1e-4), resumed from %d", worst, res[1].Resumed)
			}
		})
	}
}

// The training loop on llama-124m with the paper's micro-batch and accumulation, on the
// cuda backend: tokens per second through Run (the host-side optimizer step included).
func TestRunCUDA124M(t *testing.T) {
	if os.Getenv("SFSWEEP_RUN_124M") == "" {
		t.Skip("set SFSWEEP_RUN_124M=1 to time llama-124m through the training loop")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	split := func(n int) []uint16 {
		s := make([]uint16, n)
		for i := range s {
			s[i] = uint16(rng.IntN(50257))
		}
		return s
	}
	store, _ := blob.NewDir(t.TempDir())
	meta := data.Meta{Format: 1, Tokenizer: "gpt2", Vocab: 50257, EOT: 50256, Source: "random tokens"}
	ds, err := data.Write(context.Background(), store, "d", meta,
		map[string][]uint16{"train": split(4 << 20), "val": split(1 << 20), "test": split(1 << 20)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Setup: Setup{Model: "llama-124m", Backend: "cuda"}, Optimizer: OptimizerConfig{Name: SFAdamW, LR: 2e-3, Beta1: 0.95, Beta2: 0.99},
		BatchTokens: 524288, Loop: Loop{SeqLen: 512, MicroBatch: 16, Steps: 3, EvalSeqs: 64, TestSeqs: 64}, Seed: 1}.WithDefaults()
	b, err := NewBatches(cfg, ds)
	if err != nil {
		t.Fatal(err)
	}
	var times []time.Duration
	last := time.Now()
	res, err := Run(context.Background(), cfg, Options{Data: b, Progress: func(p Progress) {
		times = append(times, time.Since(last))
		last = time.Now()
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range times {
		t.Logf("step %d: %.2f s, %.0f tokens/s", i+1, d.Seconds(), float64(cfg.BatchTokens)/d.Seconds())
	}
	t.Logf("llama-124m, 0.5M-token batch (64 micro-batches of 16×512): %d steps, test loss at x %.4f", res.Steps, res.Test["x"])
}

// runKilledAt runs cfg to the end; if kill, it first interrupts a run after step 25 and
// then resumes it (from the checkpoint at step 20).
func runKilledAt(t *testing.T, cfg Config, opts Options, kill bool) *Result {
	t.Helper()
	if kill {
		o := opts
		o.AfterStep = func(s int) error {
			if s == 25 {
				return errKilled
			}
			return nil
		}
		if _, err := Run(context.Background(), cfg, o); err != errKilled {
			t.Fatalf("interrupted run: %v", err)
		}
	}
	res, err := Run(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The training loop's step on the device (backend.DeviceLoop: the gradients' mean, the
// optimizer and the averages) gives bitwise the run it gives on the host, through an
// interruption and a resume; so do bf16 runs, run twice.
func TestRunDeviceLoopBitwise(t *testing.T) {
	ds := deviceCorpus(t)
	for _, tc := range []struct {
		name, opt, backend string
		c                  float64
	}{{"sfadamw", SFAdamW, "cuda", 0}, {"sfadamw-refined", SFAdamW, "cuda", 50}, {"adamw", AdamW, "cuda", 0}, {"sfadamw-bf16", SFAdamW, "cuda-bf16", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(tc.opt)
			cfg.Backend, cfg.Optimizer.C = tc.backend, tc.c
			b, err := NewBatches(cfg, ds)
			if err != nil {
				t.Fatal(err)
			}
			var res [2]*Result
			for i, host := range []bool{true, false} {
				store, _ := blob.NewDir(t.TempDir())
				res[i] = runKilledAt(t, cfg, Options{Store: store, Prefix: "t", Data: b, HostOptimizer: host}, !host)
			}
			h, d := res[0], res[1]
			if d.Resumed != 20 || h.ParamsHash != d.ParamsHash || !reflect.DeepEqual(h.Curves, d.Curves) || !reflect.DeepEqual(h.Test, d.Test) {
				t.Errorf("device loop (resumed from %d) differs from the host loop: params %.12s vs %.12s, test %v vs %v",
					d.Resumed, d.ParamsHash, h.ParamsHash, d.Test, h.Test)
			}
			t.Logf("%s: host and device loops agree bitwise; test loss %v", tc.name, d.Test)
		})
	}
}

// A bf16 run follows the float32 run of the same config within bfloat16's rounding: the
// operands of every product carry 8 significant bits (relative rounding 2⁻⁹ ≈ 2e-3),
// and the validation losses of the small model after 40 steps stay within 2% of float32's.
func TestRunBF16FollowsFP32(t *testing.T) {
	ds := deviceCorpus(t)
	cfg := testConfig(SFAdamW)
	var res [2]*Result
	for i, be := range []string{"cuda", "cuda-bf16"} {
		cfg.Backend = be
		b, err := NewBatches(cfg, ds)
		if err != nil {
			t.Fatal(err)
		}
		if res[i], err = Run(context.Background(), cfg, Options{Data: b}); err != nil {
			t.Fatal(err)
		}
	}
	worst := 0.0
	for k, c := range res[0].Curves {
		for it, v := range c.Val {
			worst = max(worst, math.Abs(res[1].Curves[k].Val[it]-v)/v)
		}
	}
	t.Logf("bf16 vs fp32: worst relative difference of a validation loss %.2e; final val at x %.4f vs %.4f",
		worst, res[1].Val[IterX], res[0].Val[IterX])
	if worst > 0.02 || worst == 0 || res[1].Engine.Precision != "bf16" {
		t.Errorf("bf16 run differs from fp32 by %.2e (want (0, 0.02]); engine %+v", worst, res[1].Engine)
	}
}
