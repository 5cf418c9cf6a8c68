package gemm

import (
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/sfsweep/sfsweep/internal/peak"
)

// Benchmarks report GFLOP/s (2·m·n·k per call) and, as peak%, the fraction of the machine's
// fp32 peak: SFSWEEP_PEAK_GFLOPS when set, else measured once per run by internal/peak on
// as many threads as the pool has workers (where the CPU has an FMA loop).
//
//	go test ./training/gemm -run '^$' -bench 'Gemm$' -count 3
//	go test ./training/gemm -run '^$' -bench 'Vs' -benchtime 5x -count 3
//
// and, with OpenBLAS as a peer (apt-get install -y libopenblas-dev; needs cgo):
//
//	OPENBLAS_CORETYPE=SkylakeX OPENBLAS_NUM_THREADS=2 \
//		go test ./training/gemm -tags openblas -run '^$' -bench 'Vs' -benchtime 5x -count 3
//
// BenchmarkGemm times each implementation alone, one after the other; BenchmarkVs
// alternates ours with a peer and reports ours/peer as the ratio metric, the fair
// comparison on a shared machine. Peers: gonum's pure-Go Sgemm, and OpenBLAS's
// cblas_sgemm with -tags openblas (package internal/openblas; cgo cannot live in this
// package, which has Go assembly).

// benchShape is one benchmarked product.
type benchShape struct {
	name           string
	transA, transB bool
	m, n, k        int
	beta           float32
	big            bool // too slow for gonum: left out of its runs
}

var benchShapes = []benchShape{
	// Square.
	{name: "square512", m: 512, n: 512, k: 512},
	{name: "square1024", m: 1024, n: 1024, k: 1024},
	{name: "square2048", m: 2048, n: 2048, k: 2048},
	// tiny-llama: BT 2048, d 128, SwiGLU hidden 344, vocab 512.
	{name: "tiny-fwd-up", transB: true, m: 2048, n: 344, k: 128},
	{name: "tiny-fwd-down", transB: true, m: 2048, n: 128, k: 344},
	{name: "tiny-fwd-head", transB: true, m: 2048, n: 512, k: 128},
	{name: "tiny-dX-up", m: 2048, n: 128, k: 344},
	{name: "tiny-dW-up", transA: true, m: 344, n: 128, k: 2048, beta: 1},
	// small-llama: BT 2048, d 384, SwiGLU hidden 1024, vocab 50304.
	{name: "small-fwd-attn", transB: true, m: 2048, n: 384, k: 384},
	{name: "small-fwd-up", transB: true, m: 2048, n: 1024, k: 384},
	{name: "small-fwd-down", transB: true, m: 2048, n: 384, k: 1024},
	{name: "small-dX-up", m: 2048, n: 384, k: 1024},
	{name: "small-dW-up", transA: true, m: 1024, n: 384, k: 2048, beta: 1},
	{name: "small-fwd-head", transB: true, m: 2048, n: 50304, k: 384, big: true},
	{name: "small-dX-head", m: 2048, n: 384, k: 50304, big: true},
	{name: "small-dW-head", transA: true, m: 50304, n: 384, k: 2048, beta: 1, big: true},
	// Attention, one head: scores Q·Kᵀ and P·V.
	{name: "attn-T128-hd32-QK", transB: true, m: 128, n: 128, k: 32},
	{name: "attn-T128-hd32-PV", m: 128, n: 32, k: 128},
	{name: "attn-T256-hd64-QK", transB: true, m: 256, n: 256, k: 64},
	{name: "attn-T256-hd64-PV", m: 256, n: 64, k: 256},
	{name: "attn-T512-hd64-QK", transB: true, m: 512, n: 512, k: 64},
	{name: "attn-T512-hd64-dV", transA: true, m: 512, n: 64, k: 512, beta: 1},
}

// sgemmFunc is a row-major sgemm with Gemm's argument order.
type sgemmFunc func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)

func gonumSgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	tr := func(t bool) blas.Transpose {
		if t {
			return blas.Trans
		}
		return blas.NoTrans
	}
	gonum.Implementation{}.Sgemm(tr(transA), tr(transB), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// openblasSgemm is cblas_sgemm where the benchmarks are built with -tags openblas.
var openblasSgemm sgemmFunc

// peers are the implementations compared with ours.
func peers() []struct {
	name string
	f    sgemmFunc
} {
	ps := []struct {
		name string
		f    sgemmFunc
	}{{"gonum", gonumSgemm}}
	if openblasSgemm != nil {
		ps = append(ps, struct {
			name string
			f    sgemmFunc
		}{"openblas", openblasSgemm})
	}
	return ps
}

// benchOperands returns random operands for s, the same for every implementation.
func benchOperands(s benchShape) (a, b, c []float32, lda, ldb int) {
	rng := rand.New(rand.NewPCG(uint64(s.m), uint64(s.n*s.k)))
	fill := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(2*rng.Float64() - 1)
		}
		return x
	}
	lda, ldb = s.k, s.n
	if s.transA {
		lda = s.m
	}
	if s.transB {
		ldb = s.k
	}
	return fill(s.m * s.k), fill(s.k * s.n), fill(s.m * s.n), lda, ldb
}

// peakGFLOPS returns the machine's fp32 peak in GFLOP/s, 0 when unknown (see the comment
// at the top of the file).
var peakGFLOPS = sync.OnceValue(func() float64 {
	if s := os.Getenv("SFSWEEP_PEAK_GFLOPS"); s != "" {
		g, _ := strconv.ParseFloat(s, 64)
		return g
	}
	p, _ := peak.Measure(pool().Workers())
	return p.GFLOPS
})

func report(b *testing.B, flops float64, d time.Duration) {
	g := flops / d.Seconds() / 1e9
	b.ReportMetric(g, "GFLOP/s")
	if p := peakGFLOPS(); p > 0 {
		b.ReportMetric(100*g/p, "peak%")
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkGemm times ours (fast), gonum and, with -tags openblas, OpenBLAS at each shape.
func BenchmarkGemm(b *testing.B) {
	for _, s := range benchShapes {
		a, bb, c, lda, ldb := benchOperands(s)
		flops := 2 * float64(s.m) * float64(s.n) * float64(s.k)
		impls := append([]struct {
			name string
			f    sgemmFunc
		}{{"fast", Gemm[float32]}}, peers()...)
		for _, im := range impls {
			if s.big && im.name == "gonum" {
				continue
			}
			b.Run(s.name+"/"+im.name, func(b *testing.B) {
				im.f(s.transA, s.transB, s.m, s.n, s.k, 1, a, lda, bb, ldb, s.beta, c, s.n) // warm up
				b.ResetTimer()
				start := time.Now()
				for range b.N {
					im.f(s.transA, s.transB, s.m, s.n, s.k, 1, a, lda, bb, ldb, s.beta, c, s.n)
				}
				report(b, flops*float64(b.N), time.Since(start))
			})
		}
	}
}

// BenchmarkVs alternates ours with each peer in pairs of blocks of about blockTime each
// (b.N pairs), and reports both speeds over all pairs and, as ratio, the median over the
// pairs of ours/peer. The machine is a shared virtual one whose speed changes from one
// second to the next, so the median of ratios taken a fraction of a second apart is the
// robust figure. Each block starts alike for both: a pause (OpenBLAS's threads spin for
// about 0.1 s after a call and would slow down whatever ran next), then untimed calls for
// warmTime (after an idle spell the host takes tens of milliseconds to give both virtual
// CPUs full speed again).
func BenchmarkVs(b *testing.B) {
	const blockTime, warmTime = 100 * time.Millisecond, 60 * time.Millisecond
	for _, s := range benchShapes {
		a, bb, c, lda, ldb := benchOperands(s)
		flops := 2 * float64(s.m) * float64(s.n) * float64(s.k)
		for _, pe := range peers() {
			if s.big && pe.name == "gonum" {
				continue
			}
			settle := 5 * time.Millisecond
			if pe.name == "openblas" {
				settle = 120 * time.Millisecond
			}
			b.Run(s.name+"/"+pe.name, func(b *testing.B) {
				call := func(f sgemmFunc) {
					f(s.transA, s.transB, s.m, s.n, s.k, 1, a, lda, bb, ldb, s.beta, c, s.n)
				}
				block := func(f sgemmFunc, reps int) time.Duration {
					time.Sleep(settle)
					for start := time.Now(); time.Since(start) < warmTime; {
						call(f)
					}
					start := time.Now()
					for range reps {
						call(f)
					}
					return time.Since(start)
				}
				reps := func(f sgemmFunc) int {
					d := block(f, 1)
					return max(1, int(blockTime/max(d, time.Microsecond)))
				}
				ourReps, peerReps := reps(Gemm[float32]), reps(pe.f)
				var ours, theirs time.Duration
				ratios := make([]float64, b.N)
				for i := range b.N {
					o, t := block(Gemm[float32], ourReps), block(pe.f, peerReps)
					ours, theirs = ours+o, theirs+t
					ratios[i] = t.Seconds() / float64(peerReps) / (o.Seconds() / float64(ourReps))
				}
				slices.Sort(ratios)
				n := float64(b.N)
				b.ReportMetric(flops*n*float64(ourReps)/ours.Seconds()/1e9, "GFLOP/s")
				b.ReportMetric(flops*n*float64(peerReps)/theirs.Seconds()/1e9, pe.name+"-GFLOP/s")
				b.ReportMetric((ratios[(b.N-1)/2]+ratios[b.N/2])/2, "ratio")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// BenchmarkGemm64 times the float64 path.
func BenchmarkGemm64(b *testing.B) {
	for _, n := range []int{64, 256} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			x := make([]float64, n*n)
			for i := range x {
				x[i] = float64(i%7) - 3
			}
			c := make([]float64, n*n)
			start := time.Now()
			for range b.N {
				Gemm(false, true, n, n, n, 1, x, n, x, n, 0, c, n)
			}
			b.ReportMetric(2*float64(n*n*n)*float64(b.N)/time.Since(start).Seconds()/1e9, "GFLOP/s")
		})
	}
}
