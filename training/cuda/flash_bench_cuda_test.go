//go:build cuda

package cuda

import (
	"fmt"
	"testing"
	"time"
)

// flashFLOPs is causal attention's FLOPs over b·h heads of t rows, as FlashAttention's
// and PyTorch's benchmarks count them: the forward pass's two products over the causal
// half, 4·b·h·t²·D / 2, and the backward pass 2.5 times that. bench/gpu/attn_bench.py
// counts the same for PyTorch's SDPA.
func flashFLOPs(b, h, t int) (fwd, bwd float64) {
	fwd = 4 * float64(b*h) * float64(t) * float64(t) * flashD / 2
	return fwd, 2.5 * fwd
}

// BenchmarkFlashAttention times the flash path's kernels on their own at llama-124m's
// attention (12 heads of 64) and T = 512 for micro-batches of 16 and 32: the forward pass
// (flash_forward) and the backward pass (flash_backward_pre, flash_backward_dkdv,
// flash_backward_dq), each b.N times, and reports milliseconds and TFLOP/s of each.
// bench/gpu/check.sh's attn stage sets them beside PyTorch's SDPA on the same shapes, in
// the same call (bench/gpu/attn_bench.py).
func BenchmarkFlashAttention(b *testing.B) {
	st := testStream(b, needFast(b, fastFlash))
	for _, batch := range []int{16, 32} {
		const nh, nt = 12, 512
		b.Run(fmt.Sprintf("B=%d/H=%d/T=%d", batch, nh, nt), func(b *testing.B) {
			defer st.lock()()
			bh, n := batch*nh, batch*nh*nt*flashD
			scale, scaleLog2 := flashScale()
			m := devMem{b, st}
			q16, k16, v16 := up(m, toBF16(randn(n, 1)), 2), up(m, toBF16(randn(n, 2)), 2), up(m, toBF16(randn(n, 3)), 2)
			dy := up(m, randn(n, 4), 4)
			y, y16, lse := m.alloc(n, 4), m.alloc(n, 2), m.alloc(bh*nt, 4)
			do16, dvec := m.alloc(n, 2), m.alloc(bh*nt, 4)
			gq, gk, gv := m.alloc(n, 4), m.alloc(n, 4), m.alloc(n, 4)
			block := dim{x: flashThreads}
			r := &run{st: st}
			forward := func() {
				r.launch("flash_forward", dim{x: blocks(nt, flashBR), y: bh}, block, y, y16, lse, q16, k16, v16, nt, nh, scaleLog2)
			}
			backward := func() {
				r.launch("flash_backward_pre", rows(bh*nt), blk, do16, dvec, dy, y, bh*nt, nt, nh)
				r.launch("flash_backward_dkdv", dim{x: blocks(nt, flashBC), y: bh}, block, gk, gv, q16, k16, v16, do16, lse, dvec, nt, scaleLog2, scale)
				r.launch("flash_backward_dq", dim{x: blocks(nt, flashBR), y: bh}, block, gq, q16, k16, v16, do16, lse, dvec, nt, scaleLog2, scale)
			}
			fwdFLOPs, bwdFLOPs := flashFLOPs(batch, nh, nt)
			for _, pass := range []struct {
				name  string
				run   func()
				flops float64
			}{{"forward", forward, fwdFLOPs}, {"backward", backward, bwdFLOPs}} {
				// warm-up, outside the clock: module load, and the forward's outputs
				forward()
				r.do(st.sync)
				ms := timeOnDevice(b, st, pass.run)
				b.ReportMetric(ms, pass.name+"-ms")
				b.ReportMetric(pass.flops/ms/1e9, pass.name+"-TFLOP/s")
			}
			if r.err != nil {
				b.Fatal(r.err)
			}
		})
	}
}

// timeOnDevice runs f b.N times on the stream and returns the milliseconds per run, from
// the wall clock around the runs and a wait for the stream's work. It keeps its own clock:
// the benchmark's timer cannot be reset between passes without losing the metrics
// already reported.
func timeOnDevice(b *testing.B, st *stream, f func()) float64 {
	b.Helper()
	start := time.Now()
	for range b.N {
		f()
	}
	if err := st.sync(); err != nil {
		b.Fatal(err)
	}
	return float64(time.Since(start).Microseconds()) / 1e3 / float64(b.N)
}
