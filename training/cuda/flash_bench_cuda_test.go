//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"testing"
	"time"

	"gorgonia.org/cu"
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
// attention (12 heads of 64) and T = 512 for micro-batches of 16 and 32, in the four
// layouts the engine runs them in, b.N times each, and reports milliseconds and TFLOP/s of
// the forward and the backward pass:
//   - heads: q, k, v already in the heads' layout (flash_forward; flash_backward_pre,
//     flash_backward_dkdv, flash_backward_dq), the kernels alone;
//   - rope16 (flash and rope with round): the permutation that rotates q and k
//     (flash_permute_rope) and flash_forward; flash_backward_pre and the backward kernels
//     that undo RoPE into dqkv's bfloat16 rows (flash_backward_*_rope16);
//   - perm16 (with act16 as well): the permutation that rotates q and k from qkv's
//     bfloat16 rows (flash_permute_rope_bf16) and flash_forward writing only O's bfloat16
//     copy; flash_backward_pre_bf16 and flash_backward_*_rope16;
//   - rows (with act16 and rows): q, k, v read from qkv's bfloat16 rows and rotated on the
//     way (flash_forward_rows); flash_backward_pre_bf16 and flash_backward_*_rows. Its
//     tiles hold perm16's bits, so the two differ only in time.
//
// bench/gpu/check.sh's attn stage sets them beside PyTorch's SDPA on the same shapes, in
// the same call (bench/gpu/attn_bench.py).
func BenchmarkFlashAttention(b *testing.B) {
	st := testStream(b, needFast(b, fastFlash|fastRope))
	// the kernels each layout needs beyond flash's and rope's
	needs := map[string]fastPaths{"perm16": fastFlash | fastRope | fastAct16, "rows": fastAct16 | fastRows}
	for _, batch := range []int{16, 32} {
		const nh, nt = 12, 512
		bh, n := batch*nh, batch*nh*nt*flashD
		for _, layout := range []string{"heads", "rope16", "perm16", "rows"} {
			b.Run(fmt.Sprintf("B=%d/H=%d/T=%d/%s", batch, nh, nt, layout), func(b *testing.B) {
				if f, ok := needs[layout]; ok && !loaded(b, f) {
					b.Skipf("the loaded PTX lacks the kernels of %s", layout)
				}
				defer st.lock()()
				scale, scaleLog2 := flashScale()
				m := devMem{b, st}
				// q, k, v in the heads' layout, and qkv's rows (B,T,3C) in float32 and bfloat16
				heads := up(m, toBF16(randn(3*n, 1)), 2)
				q16, k16, v16 := heads, heads+cu.DevicePtr(2*n), heads+cu.DevicePtr(4*n)
				qkv := randn(3*n, 2)
				qkv32, qkv16 := up(m, qkv, 4), up(m, toBF16(qkv), 2)
				h := flashD / 2
				cos, sin, nsin := make([]float32, nt*h), make([]float32, nt*h), make([]float32, nt*h)
				for p := range nt {
					for i := range h {
						a := float64(p) * math.Pow(10000, -float64(2*i)/flashD)
						cos[p*h+i], sin[p*h+i] = float32(math.Cos(a)), float32(math.Sin(a))
						nsin[p*h+i] = -sin[p*h+i]
					}
				}
				dcos, dsin, dnsin := up(m, cos, 4), up(m, sin, 4), up(m, nsin, 4)
				dy, dy16 := up(m, randn(n, 4), 4), up(m, toBF16(randn(n, 4)), 2)
				y, y16, lse := m.alloc(n, 4), m.alloc(n, 2), m.alloc(bh*nt, 4)
				do16, dvec := m.alloc(n, 2), m.alloc(bh*nt, 4)
				gq, gk, gv, dqkv16 := m.alloc(n, 4), m.alloc(n, 4), m.alloc(n, 4), m.alloc(3*n, 2)
				block, grid, gridBC := dim{x: flashThreads}, dim{x: blocks(nt, flashBR), y: bh}, dim{x: blocks(nt, flashBC), y: bh}
				r := &run{st: st}
				var forward, backward func()
				switch layout {
				case "heads":
					forward = func() {
						r.launch("flash_forward", grid, block, y, y16, lse, q16, k16, v16, nt, nh, scaleLog2)
					}
					backward = func() {
						r.launch("flash_backward_pre", rows(bh*nt), blk, do16, dvec, dy, y, bh*nt, nt, nh)
						r.launch("flash_backward_dkdv", gridBC, block, gk, gv, q16, k16, v16, do16, lse, dvec, nt, scaleLog2, scale)
						r.launch("flash_backward_dq", grid, block, gq, q16, k16, v16, do16, lse, dvec, nt, scaleLog2, scale)
					}
				case "rope16", "perm16":
					// the permutation that rotates q and k, from qkv in float32 (rope16) or
					// in bfloat16 with O and dy in bfloat16 too (perm16, act16)
					permute, src, yOut, pre, dyIn, yIn := "flash_permute_rope", qkv32, y, "flash_backward_pre", dy, y
					if layout == "perm16" {
						permute, src, yOut, pre, dyIn, yIn = "flash_permute_rope_bf16", qkv16, 0, "flash_backward_pre_bf16", dy16, y16
					}
					forward = func() {
						r.launch(permute, dim{x: blocks(batch*nt*nh*flashD/4, threads), y: 3}, blk, heads, src, dcos, dsin, batch, nt, nh)
						r.launch("flash_forward", grid, block, yOut, y16, lse, q16, k16, v16, nt, nh, scaleLog2)
					}
					backward = func() {
						r.launch(pre, rows(bh*nt), blk, do16, dvec, dyIn, yIn, bh*nt, nt, nh)
						r.launch("flash_backward_dkdv_rope16", gridBC, block, dqkv16, dcos, dnsin, nh, q16, k16, v16, do16, lse, dvec, nt, scaleLog2, scale)
						r.launch("flash_backward_dq_rope16", grid, block, dqkv16, dcos, dnsin, nh, q16, k16, v16, do16, lse, dvec, nt, scaleLog2, scale)
					}
				case "rows":
					forward = func() {
						r.launch("flash_forward_rows", grid, block, cu.DevicePtr(0), y16, lse, qkv16, dcos, dsin, nt, nh, scaleLog2)
					}
					backward = func() {
						r.launch("flash_backward_pre_bf16", rows(bh*nt), blk, do16, dvec, dy16, y16, bh*nt, nt, nh)
						r.launch("flash_backward_dkdv_rows", gridBC, block, dqkv16, qkv16, dcos, dsin, dnsin, nh, do16, lse, dvec, nt, scaleLog2, scale)
						r.launch("flash_backward_dq_rows", grid, block, dqkv16, qkv16, dcos, dsin, dnsin, nh, do16, lse, dvec, nt, scaleLog2, scale)
					}
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
