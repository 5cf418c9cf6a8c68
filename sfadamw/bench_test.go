package sfadamw

import (
	"math"
	"testing"
	"time"

	"github.com/sfsweep/sfsweep/internal/par"
)

// benchParams is the buffer size of the step benchmarks: 10M float32 parameters.
const benchParams = 10_000_000

// bytesPerParam is the memory traffic of one step of either optimizer: the gradient, the
// parameters and two state vectors are read (4 × 4 bytes) and three vectors written (3 × 4).
const bytesPerParam = 28

func benchBuffers() (p, g []float32) {
	p, g = make([]float32, benchParams), make([]float32, benchParams)
	for i := range g {
		g[i] = float32(math.Sin(float64(i))) * 1e-2
		p[i] = float32(math.Cos(float64(i))) * 1e-1
	}
	return p, g
}

// copyKernel copies three vectors with the runtime's SIMD memmove: 3 reads and 3 writes per
// element, the memory-bandwidth reference the optimizer steps are compared with.
type copyKernel struct{ src, dst [3][]float32 }

func (k *copyKernel) run(lo, hi int) {
	for j := range k.src {
		copy(k.dst[j][lo:hi], k.src[j][lo:hi])
	}
}

// copyBytesPerParam is the traffic of copyKernel per element.
const copyBytesPerParam = 24

// BenchmarkStep times one step of AdamW, SF-AdamW and a memmove of the same size over 10M
// float32 parameters, interleaved in the same loop so they see the same machine state, and
// reports ns per parameter, GB/s (and as a fraction of the memmove's), and the SF-AdamW /
// AdamW ratio.
func BenchmarkStep(b *testing.B) {
	p1, g := benchBuffers()
	p2, _ := benchBuffers()
	aw, _ := NewAdamW(AdamWConfig{Schedule: Schedule{Kind: Constant, Peak: 1e-3}, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1}, p1)
	sf, _ := New(DefaultConfig(), p2)
	ck := &copyKernel{}
	for j := range ck.src {
		ck.src[j], ck.dst[j] = make([]float32, benchParams), make([]float32, benchParams)
	}
	stream := ck.run
	pool := par.Default()
	// warm up: fault in all pages
	aw.Step(g)
	sf.Step(g)
	pool.For(benchParams, grain, stream)
	var tAW, tSF, tStream time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		aw.Step(g)
		t1 := time.Now()
		sf.Step(g)
		t2 := time.Now()
		pool.For(benchParams, grain, stream)
		t3 := time.Now()
		tAW += t1.Sub(t0)
		tSF += t2.Sub(t1)
		tStream += t3.Sub(t2)
	}
	n := float64(b.N) * benchParams
	gbps := func(d time.Duration) float64 { return n * bytesPerParam / d.Seconds() / 1e9 }
	b.ReportMetric(float64(tAW.Nanoseconds())/n, "adamw-ns/param")
	b.ReportMetric(float64(tSF.Nanoseconds())/n, "sfadamw-ns/param")
	b.ReportMetric(float64(tSF)/float64(tAW), "sf/adamw")
	b.ReportMetric(gbps(tAW), "adamw-GB/s")
	b.ReportMetric(gbps(tSF), "sfadamw-GB/s")
	copyGBps := n * copyBytesPerParam / tStream.Seconds() / 1e9
	b.ReportMetric(copyGBps, "memmove-GB/s")
	b.ReportMetric(gbps(tSF)/copyGBps, "sfadamw/memmove")
	b.ReportMetric(float64(sf.StateBytesPerParam()), "sf-state-B/param")
	b.ReportMetric(float64(aw.StateBytesPerParam()), "adamw-state-B/param")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkSFAdamWRefined times refined SF-AdamW with clipping on, the most expensive
// configuration (one more pass over the gradient for its norm).
func BenchmarkSFAdamWClipped(b *testing.B) {
	p, g := benchBuffers()
	cfg := DefaultConfig()
	cfg.C, cfg.GradClip = 200, 1
	sf, _ := New(cfg, p)
	sf.Step(g)
	b.ResetTimer()
	for range b.N {
		sf.Step(g)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchParams, "ns/param")
}
