package native

import (
	"math/rand/v2"
	"testing"

	"github.com/sfsweep/sfsweep/sfadamw"
)

// BenchmarkStep times one training step (Forward and Backward, no optimizer) of tiny-llama
// in float32 at the PyTorch peer's shape: batch 16, sequence 128, once under each set of
// row kernels the machine runs (sub-benchmarks go, avx2, avx512), so that the portable
// loops are the baseline of the SIMD kernels in the same run. The matrix products use the
// gemm kernel selected at start-up in every set (SFSWEEP_KERNELS=go makes it portable too).
//
//	go test ./training/native -run '^$' -bench Step -benchtime 20x
func BenchmarkStep(b *testing.B) { benchKernelSets(b, "tiny-llama", false) }

// BenchmarkStepSmall is BenchmarkStep for small-llama (49M parameters, batch 8, sequence
// 256), where the matrix products weigh more than in tiny-llama.
//
//	go test ./training/native -run '^$' -bench StepSmall -benchtime 3x
func BenchmarkStepSmall(b *testing.B) { benchKernelSets(b, "small-llama", false) }

// BenchmarkStepGPT2 is BenchmarkStep for tiny-gpt2 (batch 16, sequence 128, float32).
func BenchmarkStepGPT2(b *testing.B) { benchKernelSets(b, "tiny-gpt2", false) }

// benchKernelSets runs benchStep as a sub-benchmark under each kernel set of the machine.
func benchKernelSets(b *testing.B, name string, withOptimizer bool) {
	for _, ks := range kernelSets() {
		b.Run(ks.name, func(b *testing.B) {
			ks.use(b)
			benchStep(b, name, withOptimizer)
		})
	}
}

// benchStep times Forward and Backward of a preset in float32 at its own batch and context,
// followed by an SF-AdamW step when withOptimizer is set.
func benchStep(b *testing.B, name string, withOptimizer bool) {
	cfg := preset(b, name)
	batch, seqLen := cfg.Batch, cfg.Context
	m := newModel[float32](b, cfg, batch, seqLen, 1)
	var opt *sfadamw.SFAdamW[float32]
	if withOptimizer {
		var err error
		if opt, err = sfadamw.New(sfadamw.DefaultConfig(), m.Params()); err != nil {
			b.Fatal(err)
		}
	}
	n := batch * seqLen
	tokens, targets := randomTokens(n, cfg.Vocab, 2), randomTokens(n, cfg.Vocab, 3)
	step(b, m, tokens, targets)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		m.ZeroGrad()
		if _, err := m.Forward(tokens, targets); err != nil {
			b.Fatal(err)
		}
		m.Backward()
		if opt != nil {
			opt.Step(m.Grads())
		}
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(sec*1e3, "ms/step")
	b.ReportMetric(float64(n)/sec, "tokens/s")
	b.ReportMetric(cfg.FLOPsPerStep(batch, seqLen)/sec/1e9, "GFLOP/s")
}

// BenchmarkTrainStep is BenchmarkStep plus an SF-AdamW step: the work the PyTorch peer
// times (forward, zero_grad, backward, optimizer step).
//
//	go test ./training/native -run '^$' -bench TrainStep -benchtime 20x
func BenchmarkTrainStep(b *testing.B) { benchStep(b, "tiny-llama", true) }

// kernelBench holds tiny-llama-shaped inputs (N = 2048 rows) for the kernel benchmarks.
type kernelBench struct {
	m              *Model[float32]
	x, y, z, w, gu []float32
	qkv, att, datt []float32
	tokens         []int32
}

func newKernelBench(b *testing.B) *kernelBench {
	cfg := preset(b, "tiny-llama")
	m := newModel[float32](b, cfg, cfg.Batch, cfg.Context, 1)
	n, c, f := m.n, cfg.Dim, cfg.Hidden
	rng := rand.New(rand.NewPCG(1, 2))
	r := func(k int) []float32 {
		v := make([]float32, k)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	att := m.b * cfg.Heads * m.t * m.t
	return &kernelBench{m: m, x: r(n * c), y: r(n * c), z: r(n * c), w: r(c), gu: r(n * 2 * f),
		qkv: r(n * 3 * c), att: make([]float32, att), datt: make([]float32, att),
		tokens: randomTokens(n, cfg.Vocab, 3)}
}

// The kernel benchmarks report ns per row (per token) of tiny-llama.

func benchRows(b *testing.B, k *kernelBench, fn func()) {
	b.ReportAllocs()
	for b.Loop() {
		fn()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(k.m.n), "ns/row")
}

func BenchmarkRMSNormForward(b *testing.B) {
	k := newKernelBench(b)
	rstd := make([]float32, k.m.n)
	benchRows(b, k, func() { k.m.k.rmsnormForward(k.y, rstd, k.x, k.w) })
}

func BenchmarkRMSNormBackward(b *testing.B) {
	k := newKernelBench(b)
	rstd := make([]float32, k.m.n)
	k.m.k.rmsnormForward(k.y, rstd, k.x, k.w)
	dw := make([]float32, len(k.w))
	benchRows(b, k, func() { k.m.k.rmsnormBackward(k.z, dw, k.y, k.x, k.w, rstd) })
}

func BenchmarkRoPE(b *testing.B) {
	k := newKernelBench(b)
	benchRows(b, k, func() { k.m.k.ropeForward(k.qkv) })
}

func BenchmarkAttentionForward(b *testing.B) {
	k := newKernelBench(b)
	benchRows(b, k, func() { k.m.k.attentionForward(k.y, k.att, k.qkv) })
}

func BenchmarkAttentionBackward(b *testing.B) {
	k := newKernelBench(b)
	k.m.k.attentionForward(k.y, k.att, k.qkv)
	dqkv := make([]float32, len(k.qkv))
	benchRows(b, k, func() { k.m.k.attentionBackward(dqkv, k.datt, k.z, k.att, k.qkv) })
}

func BenchmarkSwiGLUForward(b *testing.B) {
	k := newKernelBench(b)
	h := make([]float32, len(k.gu)/2)
	benchRows(b, k, func() { k.m.k.swigluForward(h, k.gu) })
}

func BenchmarkSwiGLUBackward(b *testing.B) {
	k := newKernelBench(b)
	dh, dgu := make([]float32, len(k.gu)/2), make([]float32, len(k.gu))
	benchRows(b, k, func() { k.m.k.swigluBackward(dgu, dh, k.gu) })
}

func BenchmarkCrossEntropy(b *testing.B) {
	k := newKernelBench(b)
	logits := k.m.act.logits
	src := make([]float32, len(logits))
	for i := range src {
		src[i] = float32(i%97) * 0.01
	}
	benchRows(b, k, func() {
		copy(logits, src)
		k.m.k.crossEntropyForward(logits, k.m.act.losses, k.tokens)
		k.m.k.crossEntropyBackward(logits, k.tokens)
	})
}

func BenchmarkEncoder(b *testing.B) {
	k := newKernelBench(b)
	demb := make([]float32, len(k.m.p.emb))
	benchRows(b, k, func() {
		k.m.k.encoderForward(k.x, k.tokens, k.m.p.emb)
		k.m.k.encoderBackward(demb, k.x, k.tokens)
	})
}

// BenchmarkAttentionMatmul times the small products of tiny-llama's attention (T = 128,
// D = 32) through vMatmul: the scores of a 16-row block against all keys, the values
// weighted by the probabilities, and a transposed-A product of the backward pass.
func BenchmarkAttentionMatmul(b *testing.B) {
	const nt, d, c = 128, 32, 128
	for _, s := range []struct {
		name                        string
		m, n, k, rsA, csA, ldb, ldc int
	}{
		{"scores 16x128x32", 16, nt, d, 3 * c, 1, nt, nt},
		{"PV 16x32x128", 16, d, nt, nt, 1, 3 * c, c},
		{"PtdY 16x32x128", 16, d, nt, 1, nt, c, 3 * c},
	} {
		b.Run(s.name, func(b *testing.B) {
			a, bb, cc := make([]float32, nt*3*c), make([]float32, nt*3*c), make([]float32, nt*3*c)
			for i := range a {
				a[i], bb[i] = float32(i%7)*0.1, float32(i%5)*0.1
			}
			for b.Loop() {
				vMatmul(cc, s.ldc, a, s.rsA, s.csA, bb, s.ldb, s.m, s.n, s.k, 1)
			}
			b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
