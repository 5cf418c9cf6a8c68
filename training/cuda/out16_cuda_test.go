//go:build cuda

package cuda

import (
	"slices"
	"testing"

	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/model"
)

// The paths that keep product outputs in bfloat16: logits16 (the logits) and act16 (the
// MLP's gu and dh).

// The logits16 kernels on bfloat16 logits against their float32 twins on the same values
// widened: the same losses, stats and bfloat16 gradient, bit for bit, the gradient written
// apart or over the logits.
func TestLogits16Kernels(t *testing.T) {
	st := testStream(t, needFast(t, fastCE|fastCE1|fastLogits16))
	defer st.lock()()
	for _, v := range []int{1, 5, 513, 50304} {
		const n = 7
		m := devMem{t, st}
		logits, targets := ceCase(n, v, uint64(v))
		l16 := toBF16(logits)
		wide := widened(l16)
		z32, z16, tg := up(m, wide, 4), up(m, l16, 2), up(m, targets, 4)
		inv := float32(1 / float64(n))
		r := &run{st: st}
		l32, s32, g32 := m.alloc(n, 8), m.alloc(2*n, 4), m.alloc(n*v, 2)
		r.launch("crossentropy_loss_online", dim{x: n}, dim{x: ceThreads}, z32, l32, s32, tg, n, v)
		r.launch("crossentropy_grad_bf16", dim{x: n}, dim{x: ceThreads}, g32, z32, s32, tg, n, v, inv)
		l, s, g := m.alloc(n, 8), m.alloc(2*n, 4), m.alloc(n*v, 2)
		r.launch("crossentropy_loss_online_bf16", dim{x: n}, dim{x: ceThreads}, z16, l, s, tg, n, v)
		r.launch("crossentropy_grad_from_bf16", dim{x: n}, dim{x: ceThreads}, g, z16, s, tg, n, v, inv)
		r.launch("crossentropy_grad_from_bf16", dim{x: n}, dim{x: ceThreads}, z16, z16, s, tg, n, v, inv) // over the logits
		r.do(st.sync)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if !slices.Equal(down[float64](m, l, n), down[float64](m, l32, n)) {
			t.Errorf("V=%d: losses differ from crossentropy_loss_online's on the widened logits", v)
		}
		if !slices.Equal(bits32(down[float32](m, s, 2*n)), bits32(down[float32](m, s32, 2*n))) {
			t.Errorf("V=%d: stats differ from crossentropy_loss_online's", v)
		}
		want := down[uint16](m, g32, n*v)
		if i := firstDiff(down[uint16](m, g, n*v), want); i >= 0 {
			t.Errorf("V=%d: gradient %d differs from crossentropy_grad_bf16's", v, i)
		}
		if i := firstDiff(down[uint16](m, z16, n*v), want); i >= 0 {
			t.Errorf("V=%d: gradient %d written over the logits differs from crossentropy_grad_bf16's", v, i)
		}
	}
}

// Engines on the logits16 path stay as close to float32 as the bf16 path without it (the
// losses within twice its distance plus 2·10⁻³, each tensor's gradient within twice its
// distance plus 10⁻²: the logits round to bfloat16 before the softmax, as under
// torch.autocast) and give the same bits run to run; alone, with the other paths of the
// head (ce, ce1) and with every path. In float32 the path changes nothing.
func TestLogits16Engine(t *testing.T) {
	needFast(t, allOn(t))
	for _, tc := range []engineShape{
		{"odd", oddConfig(), 3, 7},
		{"odd-vocab", model.Config{Arch: model.LLaMA, Vocab: 1000, Dim: 64, Layers: 2, Heads: 4, Context: 40, Hidden: 96, Batch: 3}.WithDefaults(), 3, 37},
		{"tiny-gpt2", preset(t, "tiny-gpt2"), 4, 100},
		{"llama-124m", preset(t, "llama-124m"), 2, 512},
	} {
		t.Run(tc.name, func(t *testing.T) {
			toks, p, exact := engineCase(t, tc.cfg, tc.batch, tc.seqLen, 61)
			_, with := trainFast(t, tc.cfg, tc.batch, tc.seqLen, backend.FP32, fastLogits16, p, toks)
			if !slices.Equal(with.losses, exact.losses) || firstDiff(bits32(with.grads), bits32(exact.grads)) >= 0 {
				t.Errorf("float32: logits16 changed the results")
			}
			for _, base := range []fastPaths{0, fastCE | fastCE1, allOn(t) &^ fastLogits16} {
				_, old := trainFast(t, tc.cfg, tc.batch, tc.seqLen, backend.BF16, base, p, toks)
				f := base | fastLogits16
				e, got := trainFast(t, tc.cfg, tc.batch, tc.seqLen, backend.BF16, f, p, toks)
				if !e.logits16 {
					t.Fatalf("%s: the engine does not run the logits16 path", f)
				}
				nearFloat32(t, f, tc.cfg, got, runFast(t, e, f, toks), exact, old, 2e-3, 1e-2)
			}
		})
	}
}

// The act16 kernels on bfloat16 gu, dh, dy and O against their float32 twins on the same
// values widened: the same bfloat16 h and dgu, dO and D, bit for bit; rows and widths not
// multiples of the block.
func TestAct16Kernels(t *testing.T) {
	st := testStream(t, needFast(t, fastRound|fastSwiGLU|fastFlash|fastAct16))
	defer st.lock()()
	for _, sh := range []struct{ n, f int }{{1, 1}, {7, 20}, {33, 344}, {512, 2048}} {
		n, f := sh.n, sh.f
		m := devMem{t, st}
		gu16, dh16 := toBF16(randn(n*2*f, 71)), toBF16(randn(n*f, 72))
		gu32, dh32 := up(m, widened(gu16), 4), up(m, widened(dh16), 4)
		gu, dh := up(m, gu16, 2), up(m, dh16, 2)
		h32, h, g32, g := m.alloc(n*f, 2), m.alloc(n*f, 2), m.alloc(n*2*f, 2), m.alloc(n*2*f, 2)
		r := &run{st: st}
		r.launch("swiglu_forward_to_bf16", lin(n*f), blk, h32, gu32, n, f)
		r.launch("swiglu_forward_from_bf16", lin(n*f), blk, h, gu, n, f)
		r.launch("swiglu_backward_to_bf16", lin(n*f), blk, g32, dh32, gu32, n, f)
		r.launch("swiglu_backward_from_bf16", lin(n*f), blk, g, dh, gu, n, f)
		r.do(st.sync)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if i := firstDiff(down[uint16](m, h, n*f), down[uint16](m, h32, n*f)); i >= 0 {
			t.Errorf("N=%d F=%d: h[%d] differs from swiglu_forward_to_bf16's", n, f, i)
		}
		if i := firstDiff(down[uint16](m, g, n*2*f), down[uint16](m, g32, n*2*f)); i >= 0 {
			t.Errorf("N=%d F=%d: dgu[%d] differs from swiglu_backward_to_bf16's", n, f, i)
		}
	}
	// flash_backward_pre on bfloat16 dy and O (B,T,C), C = 3 heads of 64
	for _, nt := range []int{1, 37, 130} {
		const b, nh = 2, 3
		m := devMem{t, st}
		n, nr := b*nt*nh*flashD, b*nh*nt
		dy16, y16 := toBF16(randn(n, uint64(nt)+73)), toBF16(randn(n, uint64(nt)+74))
		dyw, dyb, yw, yb := up(m, widened(dy16), 4), up(m, dy16, 2), up(m, widened(y16), 4), up(m, y16, 2)
		o32, o16, v32, v16 := m.alloc(n, 2), m.alloc(n, 2), m.alloc(nr, 4), m.alloc(nr, 4)
		r := &run{st: st}
		r.launch("flash_backward_pre", rows(nr), blk, o32, v32, dyw, yw, nr, nt, nh)
		r.launch("flash_backward_pre_bf16", rows(nr), blk, o16, v16, dyb, yb, nr, nt, nh)
		r.do(st.sync)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if i := firstDiff(down[uint16](m, o16, n), down[uint16](m, o32, n)); i >= 0 {
			t.Errorf("T=%d: dO[%d] differs from flash_backward_pre's", nt, i)
		}
		if i := firstDiff(bits32(down[float32](m, v16, nr)), bits32(down[float32](m, v32, nr))); i >= 0 {
			t.Errorf("T=%d: D[%d] differs from flash_backward_pre's", nt, i)
		}
	}
}

// LLaMA engines on the act16 path (with round and swiglu, which it needs) stay as close
// to float32 as the path without it (the losses within twice its distance plus 10⁻³,
// each tensor's gradient within twice its distance plus 10⁻²: gu and dh round to bfloat16
// before SwiGLU, as under torch.autocast) and give the same bits run to run; with the
// exact paths and with every path. With every path, the flash kernels reading qkv's rows
// (rows) give the bits of the permutation. Without round and swiglu, and in float32, it
// changes nothing.
func TestAct16Engine(t *testing.T) {
	needFast(t, allOn(t))
	for _, tc := range []engineShape{
		{"odd", oddConfig(), 3, 7},
		{"tiny-llama", preset(t, "tiny-llama"), 4, 128},
		{"llama-124m", preset(t, "llama-124m"), 2, 512},
	} {
		t.Run(tc.name, func(t *testing.T) {
			toks, p, exact := engineCase(t, tc.cfg, tc.batch, tc.seqLen, 81)
			for _, base := range []fastPaths{exactOn(t) &^ fastRows, allOn(t) &^ (fastAct16 | fastRows)} {
				_, old := trainFast(t, tc.cfg, tc.batch, tc.seqLen, backend.BF16, base, p, toks)
				f := base | fastAct16
				if !loaded(t, f) {
					continue
				}
				e, got := trainFast(t, tc.cfg, tc.batch, tc.seqLen, backend.BF16, f, p, toks)
				if !e.act16() || e.flashRows() {
					t.Fatalf("%s: the engine runs act16 %v, rows %v", f, e.act16(), e.flashRows())
				}
				nearFloat32(t, f, tc.cfg, got, runFast(t, e, f, toks), exact, old, 1e-3, 1e-2)
				if !e.qkv16() || !loaded(t, f|fastRows) {
					continue
				}
				e, rows := trainFast(t, tc.cfg, tc.batch, tc.seqLen, backend.BF16, f|fastRows, p, toks)
				if !e.flashRows() {
					t.Fatalf("%s: the engine does not read qkv's rows", f|fastRows)
				}
				if !slices.Equal(rows.losses, got.losses) || firstDiff(bits32(rows.grads), bits32(got.grads)) >= 0 {
					t.Errorf("%s: the results differ from %s's", f|fastRows, f)
				}
			}
			for _, c := range []struct {
				prec backend.Precision
				f    fastPaths
			}{{backend.BF16, fastCE}, {backend.FP32, exactOn(t)}} {
				_, old := trainFast(t, tc.cfg, tc.batch, tc.seqLen, c.prec, c.f, p, toks)
				_, got := trainFast(t, tc.cfg, tc.batch, tc.seqLen, c.prec, c.f|fastAct16, p, toks)
				if !slices.Equal(got.losses, old.losses) || firstDiff(bits32(got.grads), bits32(old.grads)) >= 0 {
					t.Errorf("%s, %s: act16 changed the results", c.prec, c.f)
				}
			}
		})
	}
}
