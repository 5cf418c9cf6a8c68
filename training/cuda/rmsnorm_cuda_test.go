//go:build cuda

package cuda

import (
	"slices"
	"testing"

	"gorgonia.org/cu"
)

// The norm and swiglu paths' kernels (rmsnorm.cu and kernels.cu), isolated: bitwise the kernels they
// replace on the same inputs, and RMSNorm's backward pass bitwise its Go mirror; rows
// that fill no chunk of normRows, fewer rows than a chunk, and llama-124m's width.
func TestNormKernels(t *testing.T) {
	st := testStream(t, needFast(t, fastNorm|fastSwiGLU|fastRound))
	defer st.lock()()
	for _, s := range []struct{ n, c, f int }{{1, 12, 20}, {31, 64, 96}, {33, 768, 2048}, {100, 1000, 100}, {1024, 768, 2048}} {
		n, c, f := s.n, s.c, s.f
		m := devMem{t, st}
		r := &run{st: st}
		xh := randn(n*c, 1)
		for i := range xh {
			xh[i] *= 4
		}
		wh, douth, dx0 := randn(c, 2), randn(n*c, 3), randn(n*c, 4)
		x, w, dout := up(m, xh, 4), up(m, wh, 4), up(m, douth, 4)
		eq16 := func(what string, a, b cu.DevicePtr, size int) {
			t.Helper()
			r.do(st.sync)
			if r.err != nil {
				t.Fatal(r.err)
			}
			if i := firstDiff(down[uint16](m, a, size), down[uint16](m, b, size)); i >= 0 {
				t.Errorf("%+v: %s %d differs", s, what, i)
			}
		}
		eq32 := func(what string, a, b cu.DevicePtr, size int) []float32 {
			t.Helper()
			r.do(st.sync)
			if r.err != nil {
				t.Fatal(r.err)
			}
			av, bv := down[float32](m, a, size), down[float32](m, b, size)
			if i := firstDiff(bits32(av), bits32(bv)); i >= 0 {
				t.Errorf("%+v: %s %d = %v, the default kernels' %v", s, what, i, bv[i], av[i])
			}
			return bv
		}

		// forward: the round path's kernel against the one that writes the copy alone
		o32, o16, rstd := m.alloc(n*c, 4), m.alloc(n*c, 2), m.alloc(n, 4)
		n16, nrstd := m.alloc(n*c, 2), m.alloc(n, 4)
		r.launch("rmsnorm_forward_bf16", rows(n), blk, o32, o16, rstd, x, w, n, c, float32(1e-5))
		r.launch("rmsnorm_forward_to_bf16", rows(n), blk, n16, nrstd, x, w, n, c, float32(1e-5))
		eq16("rmsnorm_forward_to_bf16 output", o16, n16, n*c)
		rs := eq32("rmsnorm_forward_to_bf16 rstd", rstd, nrstd, n)

		// backward, with and without dx's copy
		chunks := blocks(n, normRows)
		for _, copy16 := range []bool{false, true} {
			dxOld, dxNew := up(m, dx0, 4), up(m, dx0, 4)
			d16Old, d16New := m.alloc(n*c, 2), m.alloc(n*c, 2)
			pOld, pNew := m.alloc(chunks*c, 4), m.alloc(chunks*c, 4)
			if copy16 {
				r.launch("rmsnorm_backward_dx_bf16", rows(n), blk, dxOld, d16Old, dout, x, w, rstd, n, c)
				r.launch("rmsnorm_backward_fused_bf16", dim{x: chunks}, dim{x: normThreads(c)}, dxNew, d16New, pNew, dout, x, w, rstd, n, c)
				eq16("rmsnorm_backward_fused_bf16 dx16", d16Old, d16New, n*c)
			} else {
				r.launch("rmsnorm_backward_dx", rows(n), blk, dxOld, dout, x, w, rstd, n, c)
				r.launch("rmsnorm_backward_fused", dim{x: chunks}, dim{x: normThreads(c)}, dxNew, pNew, dout, x, w, rstd, n, c)
			}
			r.launch("rmsnorm_backward_dw_part", dim{x: blocks(c, threads), y: chunks}, blk, pOld, dout, x, rstd, n, c, normRows)
			dx := eq32("rmsnorm_backward_fused dx", dxOld, dxNew, n*c)
			part := eq32("rmsnorm_backward_fused partial sum", pOld, pNew, chunks*c)
			// the Go mirror, on the GPU's rstd: no transcendental, so the same bits
			mdx := slices.Clone(dx0)
			order := make([]int, chunks)
			for i := range order {
				order[i] = i
			}
			_, mpart := rmsnormBackwardFusedMirror(mdx, douth, xh, wh, rs, c, normThreads(c), order)
			if i := firstDiff(bits32(mdx), bits32(dx)); i >= 0 {
				t.Errorf("%+v: dx %d on the GPU %v, the mirror's %v", s, i, dx[i], mdx[i])
			}
			if i := firstDiff(bits32(mpart), bits32(part)); i >= 0 {
				t.Errorf("%+v: partial sum %d on the GPU %v, the mirror's %v", s, i, part[i], mpart[i])
			}
		}

		// SwiGLU, forward and backward
		gu, dh := up(m, randn(n*2*f, 5), 4), up(m, randn(n*f, 6), 4)
		h32, h16, hNew := m.alloc(n*f, 4), m.alloc(n*f, 2), m.alloc(n*f, 2)
		r.launch("swiglu_forward_bf16", lin(n*f), blk, h32, h16, gu, n, f)
		r.launch("swiglu_forward_to_bf16", lin(n*f), blk, hNew, gu, n, f)
		eq16("swiglu_forward_to_bf16 output", h16, hNew, n*f)
		g32, g16, gNew := m.alloc(n*2*f, 4), m.alloc(n*2*f, 2), m.alloc(n*2*f, 2)
		r.launch("swiglu_backward_bf16", lin(n*f), blk, g32, g16, dh, gu, n, f)
		r.launch("swiglu_backward_to_bf16", lin(n*f), blk, gNew, dh, gu, n, f)
		eq16("swiglu_backward_to_bf16 gradient", g16, gNew, n*2*f)
	}
}
