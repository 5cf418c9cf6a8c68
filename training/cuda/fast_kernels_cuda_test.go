//go:build cuda

package cuda

import (
	"math"
	"slices"
	"testing"

	"gorgonia.org/cu"
)

// Each fast path's kernels, isolated: bitwise against the default kernels on the same
// inputs, and the cross-entropy within the GPU's expf of the Go mirror.

// devMem allocates device buffers for a test and frees them when it ends; copies go
// through the test's stream.
type devMem struct {
	t  testing.TB
	st *stream
}

func (m devMem) alloc(n, size int) cu.DevicePtr {
	m.t.Helper()
	p, err := alloc(n, size)
	if err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(func() {
		defer m.st.lock()()
		_ = cu.MemFree(p)
	})
	return p
}

func up[T any](m devMem, x []T, size int) cu.DevicePtr {
	m.t.Helper()
	p := m.alloc(len(x), size)
	if err := htod(m.st, p, x); err != nil {
		m.t.Fatal(err)
	}
	return p
}

func down[T any](m devMem, p cu.DevicePtr, n int) []T {
	m.t.Helper()
	x := make([]T, n)
	if err := dtoh(m.st, x, p); err != nil {
		m.t.Fatal(err)
	}
	return x
}

func TestFusedCrossEntropyKernels(t *testing.T) {
	st := testStream(t, needFast(t, fastCE))
	defer st.lock()()
	for _, v := range []int{1, 5, 513, 1000, 50304} {
		const n = 7
		m := devMem{t, st}
		logits, targets := ceCase(n, v, uint64(v))
		inv := float32(1 / float64(n))
		tg := up(m, targets, 4)
		r := &run{st: st}
		// the default path: probabilities, gradient in place, then to_bf16
		zOld, lossOld, g16Old := up(m, logits, 4), m.alloc(n, 8), m.alloc(n*v, 2)
		r.launch("crossentropy_forward", dim{x: n}, dim{x: ceThreads}, zOld, lossOld, tg, n, v)
		r.launch("crossentropy_backward", lin(n*v), blk, zOld, tg, n, v, inv)
		r.launch("to_bf16", lin(n*v), blk, g16Old, zOld, int64(n*v))
		// the fused path
		zNew, lossNew, stats, g16New := up(m, logits, 4), m.alloc(n, 8), m.alloc(2*n, 4), m.alloc(n*v, 2)
		r.launch("crossentropy_loss", dim{x: n}, dim{x: ceThreads}, zNew, lossNew, stats, tg, n, v)
		r.do(st.sync)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if !slices.Equal(bits32(down[float32](m, zNew, n*v)), bits32(logits)) {
			t.Errorf("V=%d: crossentropy_loss changed the logits", v)
		}
		r.launch("crossentropy_grad_bf16", dim{x: n}, dim{x: ceThreads}, g16New, zNew, stats, tg, n, v, inv)
		r.launch("crossentropy_grad", dim{x: n}, dim{x: ceThreads}, zNew, stats, tg, n, v, inv)
		r.do(st.sync)
		if r.err != nil {
			t.Fatal(r.err)
		}
		lo, ln := down[float64](m, lossOld, n), down[float64](m, lossNew, n)
		for i := range lo {
			if math.Float64bits(lo[i]) != math.Float64bits(ln[i]) {
				t.Errorf("V=%d: loss %d fused %v, default %v", v, i, ln[i], lo[i])
			}
		}
		gOld, gNew := down[float32](m, zOld, n*v), down[float32](m, zNew, n*v)
		if i := firstDiff(bits32(gOld), bits32(gNew)); i >= 0 {
			t.Errorf("V=%d: float32 gradient %d fused %v, default %v", v, i, gNew[i], gOld[i])
		}
		if i := firstDiff(down[uint16](m, g16Old, n*v), down[uint16](m, g16New, n*v)); i >= 0 {
			t.Errorf("V=%d: bf16 gradient %d differs", v, i)
		}
		// the Go mirror computes exp in float64 then rounds; CUDA's expf is within 2 ulp
		lm, gm, _ := fusedCE(logits, targets, v)
		for i := range lm {
			if math.Abs(ln[i]-lm[i]) > 1e-5*math.Max(1, math.Abs(lm[i])) {
				t.Errorf("V=%d: loss %d on the GPU %v, mirror %v", v, i, ln[i], lm[i])
			}
		}
		for i := range gm {
			if math.Abs(float64(gNew[i]-gm[i])) > 1e-5*math.Abs(float64(gm[i]))+1e-7/n {
				t.Fatalf("V=%d: gradient %d on the GPU %v, mirror %v", v, i, gNew[i], gm[i])
			}
		}
	}
}

// The round path's kernels write the default kernels' float32 values and, bit for bit,
// what to_bf16 makes of them.
func TestRoundKernels(t *testing.T) {
	st := testStream(t, needFast(t, fastRound))
	defer st.lock()()
	m := devMem{t, st}
	const b, nt, nh, hd, f = 3, 37, 3, 12, 100
	n, c := b*nt, nh*hd
	x, w, gu, dout, qkv := up(m, randn(n*c, 1), 4), up(m, randn(c, 2), 4), up(m, randn(n*2*f, 3), 4), up(m, randn(n*f, 4), 4), up(m, randn(n*3*c, 5), 4)
	rstd := m.alloc(n, 4)
	r := &run{st: st}
	// check runs a default kernel into old and the round kernel into nw and nw16, then
	// compares: nw = old bitwise, nw16 = to_bf16(old) bitwise.
	check := func(name string, size int, old, nw, nw16 cu.DevicePtr) {
		t.Helper()
		ref16 := m.alloc(size, 2)
		r.launch("to_bf16", lin(size), blk, ref16, old, int64(size))
		r.do(st.sync)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if i := firstDiff(bits32(down[float32](m, old, size)), bits32(down[float32](m, nw, size))); i >= 0 {
			t.Errorf("%s: float32 output %d differs", name, i)
		}
		if i := firstDiff(down[uint16](m, ref16, size), down[uint16](m, nw16, size)); i >= 0 {
			t.Errorf("%s: bf16 copy %d differs", name, i)
		}
	}
	o1, o2, o16 := m.alloc(n*c, 4), m.alloc(n*c, 4), m.alloc(n*c, 2)
	r.launch("rmsnorm_forward", rows(n), blk, o1, rstd, x, w, n, c, float32(1e-5))
	r.launch("rmsnorm_forward_bf16", rows(n), blk, o2, o16, rstd, x, w, n, c, float32(1e-5))
	check("rmsnorm_forward", n*c, o1, o2, o16)

	dx0 := randn(n*c, 6)
	dx1, dx2, dx16 := up(m, dx0, 4), up(m, dx0, 4), m.alloc(n*c, 2)
	r.launch("rmsnorm_backward_dx", rows(n), blk, dx1, o1, x, w, rstd, n, c)
	r.launch("rmsnorm_backward_dx_bf16", rows(n), blk, dx2, dx16, o1, x, w, rstd, n, c)
	check("rmsnorm_backward_dx", n*c, dx1, dx2, dx16)

	h1, h2, h16 := m.alloc(n*f, 4), m.alloc(n*f, 4), m.alloc(n*f, 2)
	r.launch("swiglu_forward", lin(n*f), blk, h1, gu, n, f)
	r.launch("swiglu_forward_bf16", lin(n*f), blk, h2, h16, gu, n, f)
	check("swiglu_forward", n*f, h1, h2, h16)

	g1, g2, g16 := m.alloc(n*2*f, 4), m.alloc(n*2*f, 4), m.alloc(n*2*f, 2)
	r.launch("swiglu_backward", lin(n*f), blk, g1, dout, gu, n, f)
	r.launch("swiglu_backward_bf16", lin(n*f), blk, g2, g16, dout, gu, n, f)
	check("swiglu_backward", n*2*f, g1, g2, g16)

	var qs [2][3]cu.DevicePtr
	var q16 [3]cu.DevicePtr
	for i := range 3 {
		qs[0][i], qs[1][i], q16[i] = m.alloc(n*c, 4), m.alloc(n*c, 4), m.alloc(n*c, 2)
	}
	r.launch("permute", lin(n*c), blk, qs[0][0], qs[0][1], qs[0][2], qkv, b, nt, nh, hd)
	r.launch("permute_bf16", lin(n*c), blk, qs[1][0], qs[1][1], qs[1][2], q16[0], q16[1], q16[2], qkv, b, nt, nh, hd)
	for i, name := range []string{"permute q", "permute k", "permute v"} {
		check(name, n*c, qs[0][i], qs[1][i], q16[i])
	}
	// the causal softmax and its backward pass, on (BH,T,T) scores
	bht := b * nh * nt
	sc := randn(bht*nt, 9)
	a1, a2, a16 := up(m, sc, 4), up(m, sc, 4), m.alloc(bht*nt, 2)
	r.launch("softmax_causal", rows(bht), blk, a1, bht, nt)
	r.launch("softmax_causal_bf16", rows(bht), blk, a2, a16, bht, nt)
	check("softmax_causal", bht*nt, a1, a2, a16)
	dp := randn(bht*nt, 10)
	s1, s2, s16 := up(m, dp, 4), up(m, dp, 4), m.alloc(bht*nt, 2)
	r.launch("softmax_causal_backward", rows(bht), blk, s1, a1, bht, nt, float32(0.25))
	r.launch("softmax_causal_backward_bf16", rows(bht), blk, s2, s16, a1, bht, nt, float32(0.25))
	check("softmax_causal_backward", bht*nt, s1, s2, s16)

	// dq, dk, dv gathered, rotated back and rounded in one pass
	cosT, nsinT := up(m, randn(nt*hd/2, 7), 4), up(m, randn(nt*hd/2, 8), 4)
	p1, p2, p16 := m.alloc(n*3*c, 4), m.alloc(n*3*c, 4), m.alloc(n*3*c, 2)
	r.launch("permute_backward", lin(n*c), blk, p1, qs[0][0], qs[0][1], qs[0][2], b, nt, nh, hd)
	r.launch("rope", lin(n*c), blk, p1, cosT, nsinT, n, nt, c, nh)
	r.launch("permute_backward_rope_bf16", lin(n*c/2), blk, p2, p16, qs[0][0], qs[0][1], qs[0][2], cosT, nsinT, b, nt, nh, hd)
	check("permute_backward_rope", n*3*c, p1, p2, p16)
	for back := range 2 {
		u1, u2, u16 := m.alloc(n*c, 4), m.alloc(n*c, 4), m.alloc(n*c, 2)
		r.launch("unpermute", lin(n*c), blk, u1, o1, b, nt, nh, hd, back)
		r.launch("unpermute_bf16", lin(n*c), blk, u2, u16, o1, b, nt, nh, hd, back)
		check("unpermute", n*c, u1, u2, u16)
	}
}
