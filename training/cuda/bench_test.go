//go:build cuda

package cuda

import (
	"fmt"
	"testing"

	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/model"
)

// Dense peak throughput of an H100 SXM (NVIDIA's datasheet), the denominators of the
// model-FLOPs utilisation reported by the benchmarks: float32 on CUDA cores, TF32 on tensor
// cores. On another GPU the TFLOP/s figure is the one to compare.
const (
	peakFP32 = 67e12
	peakTF32 = 495e12
)

// BenchmarkTrainStep times a full training step of llama-124m (and gpt2-124m) at context
// 512 — forward, backward and an AdamW step on the device, the step of the PyTorch peer
// bench/torch/torch_llama_cuda.py — and reports tokens/s, TFLOP/s by model.FLOPsPerStep and the
// model-FLOPs utilisation against the H100's dense peak.
func BenchmarkTrainStep(b *testing.B) {
	for _, tc := range []struct {
		preset string
		batch  int
	}{{"llama-124m", 16}, {"llama-124m", 32}, {"gpt2-124m", 16}} {
		cfg := preset(b, tc.preset)
		for _, tf32 := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/B=%d/T=512/tf32=%v", tc.preset, tc.batch, tf32), func(b *testing.B) {
				p := backend.FP32
				if tf32 {
					p = backend.TF32
				}
				benchStep(b, cfg, tc.batch, 512, p)
			})
		}
	}
}

func benchStep(b *testing.B, cfg model.Config, batch, seqLen int, p backend.Precision) {
	e, err := New(cfg, batch, seqLen, p)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	params := make([]float32, cfg.NumParams())
	model.Init(cfg, 1, params)
	if err := e.WriteParams(params); err != nil {
		b.Fatal(err)
	}
	aw := sfadamw.AdamWConfig{Schedule: sfadamw.Schedule{Kind: sfadamw.Constant, Peak: 1e-3},
		Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1}
	o, err := e.NewAdamW(aw)
	if err != nil {
		b.Fatal(err)
	}
	n := batch * seqLen
	toks := randomTokens(n+1, cfg.Vocab, 1)
	step := func() {
		e.ZeroGrad()
		if _, err := e.Forward(toks[:n], toks[1:]); err != nil {
			b.Fatal(err)
		}
		if err := e.Backward(); err != nil {
			b.Fatal(err)
		}
		if err := o.Step(); err != nil {
			b.Fatal(err)
		}
	}
	step() // warm-up: module load, cuBLAS heuristics
	b.ResetTimer()
	for b.Loop() {
		step()
	}
	// Forward synchronises on the loss and Backward at its end, so the clock saw all the work
	// but the last optimizer step, which the next Forward waits for.
	sec := b.Elapsed().Seconds() / float64(b.N)
	flops := cfg.FLOPsPerStep(batch, seqLen)
	peak := peakFP32
	if p == backend.TF32 {
		peak = peakTF32
	}
	b.ReportMetric(float64(n)/sec, "tokens/s")
	b.ReportMetric(flops/sec/1e12, "TFLOP/s")
	b.ReportMetric(flops/sec/peak, "MFU")
	b.ReportMetric(float64(e.DeviceBytes())/(1<<30), "GiB")
}
