//go:build cuda

package cuda

import (
	"math"
	"slices"
	"testing"

	"gorgonia.org/cu"

	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/model"
)

// The flash kernels on their own, against the Go mirror and causal attention in float64,
// with T below, at, between and above multiples of the tiles; and each output bitwise the
// same on a second run.
func TestFlashKernels(t *testing.T) {
	st := testStream(t, needFast(t, fastFlash))
	defer st.lock()()
	const b, nh = 2, 3
	for _, nt := range []int{1, 37, 64, 100, 130} {
		bh := b * nh
		q, k, v, do := flashInputs(bh, nt, uint64(nt))
		a := newFlashArgs(bh, nt, q, k, v)
		runFlash(a, do, inOrder)
		o, dq, dk, dv := flashRef(a, do)
		pass := func() map[string][]float32 { return flashOnDevice(t, st, a, q, k, v, do, b, nh) }
		got := pass()
		for name, x := range pass() {
			if i := firstDiff(bits32(x), bits32(got[name])); i >= 0 {
				t.Errorf("T=%d: %s[%d] = %v, then %v on a second run", nt, name, i, got[name][i], x[i])
			}
		}
		for _, c := range []struct {
			name   string
			mirror []float32
			ref    []float64
			tol    float64
		}{{"O", a.o, o, flashTolO}, {"dQ", a.dq, dq, flashTolGrad}, {"dK", a.dk, dk, flashTolGrad}, {"dV", a.dv, dv, flashTolGrad}} {
			// the mirror differs in the tensor cores' order of a step's 16 products and in
			// ex2.approx, which moves a bfloat16 rounding of P or dS now and then
			em, er := maxRelErr(got[c.name], f64(c.mirror)), maxRelErr(got[c.name], c.ref)
			t.Logf("T=%d: %s against the mirror %.2g, against float64 %.2g", nt, c.name, em, er)
			if !(em <= c.tol/2) || !(er <= c.tol) {
				t.Errorf("T=%d: %s relative error %.2g against the mirror (tolerance %.0g), %.2g against float64 (%.0g)", nt, c.name, em, c.tol/2, er, c.tol)
			}
		}
		for i, x := range got["lse"] {
			if math.Abs(float64(x-a.lse[i])) > 1e-4*math.Max(1, math.Abs(float64(a.lse[i]))) {
				t.Fatalf("T=%d: lse[%d] = %v, the mirror's %v", nt, i, x, a.lse[i])
			}
		}
	}
}

// flashOnDevice runs the flash kernels of an engine's layer on q, k, v and dO (head-major,
// float32; a holds them rounded) laid out as the engine holds them: flash_permute, the
// forward pass, the backward's three kernels. On the way it checks the permutation's bits
// and y16's; it returns O and the gradients head-major, and the log-sum-exp (base 2). Given
// RoPE's tables cos and nsin (T, D/2), it also runs the rope path's backward kernels and
// returns their dqkv16 (B,T,3C), widened.
func flashOnDevice(t *testing.T, st *stream, a *flashArgs, q, k, v, do []float32, b, nh int, rope ...[]float32) map[string][]float32 {
	t.Helper()
	nt, bh := a.t, a.bh
	scale, scaleLog2 := flashScale()
	n := bh * nt * flashD
	m := devMem{t, st}
	qkv, qkv16 := up(m, qkvRows(q, k, v, b, nt, nh), 4), m.alloc(3*n, 2)
	q16, k16, v16 := qkv16, qkv16+cu.DevicePtr(2*n), qkv16+cu.DevicePtr(4*n)
	dy := up(m, headsToRows(do, b, nt, nh), 4)
	y, y16, lse := m.alloc(n, 4), m.alloc(n, 2), m.alloc(bh*nt, 4)
	do16, dvec := m.alloc(n, 2), m.alloc(bh*nt, 4)
	gq, gk, gv := m.alloc(n, 4), m.alloc(n, 4), m.alloc(n, 4)
	r := &run{st: st}
	block := dim{x: flashThreads}
	r.launch("flash_permute", dim{x: blocks(n/2, threads), y: 3}, blk, qkv16, qkv, b, nt, nh)
	r.launch("flash_forward", dim{x: blocks(nt, flashBR), y: bh}, block, y, y16, lse, q16, k16, v16, nt, nh, scaleLog2)
	r.launch("flash_backward_pre", rows(bh*nt), blk, do16, dvec, dy, y, bh*nt, nt, nh)
	r.launch("flash_backward_dkdv", dim{x: blocks(nt, flashBC), y: bh}, block, gk, gv, q16, k16, v16, do16, lse, dvec, nt, scaleLog2, scale)
	r.launch("flash_backward_dq", dim{x: blocks(nt, flashBR), y: bh}, block, gq, q16, k16, v16, do16, lse, dvec, nt, scaleLog2, scale)
	var dqkv16 cu.DevicePtr
	if len(rope) == 2 {
		dqkv16 = m.alloc(3*n, 2)
		cos, nsin := up(m, rope[0], 4), up(m, rope[1], 4)
		r.launch("flash_backward_dkdv_rope16", dim{x: blocks(nt, flashBC), y: bh}, block, dqkv16, cos, nsin, nh, q16, k16, v16, do16, lse, dvec, nt, scaleLog2, scale)
		r.launch("flash_backward_dq_rope16", dim{x: blocks(nt, flashBR), y: bh}, block, dqkv16, cos, nsin, nh, q16, k16, v16, do16, lse, dvec, nt, scaleLog2, scale)
	}
	r.do(st.sync)
	if r.err != nil {
		t.Fatalf("T=%d: %v", nt, r.err)
	}
	if i := firstDiff(down[uint16](m, qkv16, 3*n), slices.Concat(a.q, a.k, a.v)); i >= 0 {
		t.Errorf("T=%d: flash_permute's element %d is not q, k, v rounded into the heads' layout", nt, i)
	}
	yr := down[float32](m, y, n)
	if i := firstDiff(toBF16(yr), down[uint16](m, y16, n)); i >= 0 {
		t.Errorf("T=%d: y16[%d] is not y rounded", nt, i)
	}
	out := map[string][]float32{"O": rowsToHeads(yr, b, nt, nh), "lse": down[float32](m, lse, bh*nt),
		"dQ": down[float32](m, gq, n), "dK": down[float32](m, gk, n), "dV": down[float32](m, gv, n)}
	if dqkv16 != 0 {
		out["dqkv16"] = widened(down[uint16](m, dqkv16, 3*n))
	}
	return out
}

// flashRowsPasses runs a layer's flash passes on the rope path with act16, from qkv16
// (B,T,3C) in bfloat16: with fromRows the kernels that read it, rotating q and k on the
// way, else the kernels on heads, q, k, v permuted and rotated from it; on the same dy,
// RoPE's tables cos and sin, and −sin for the rotation back. It returns the bits of O,
// its copy, the log-sum-exp and dqkv16.
func flashRowsPasses(t *testing.T, st *stream, m devMem, fromRows bool, qkv16 cu.DevicePtr, heads [3]cu.DevicePtr, cos, sin []float32, b, nh, nt int) map[string][]uint32 {
	t.Helper()
	n, bht := b*nh*nt*flashD, b*nh*nt
	nsin := make([]float32, len(sin))
	for i, x := range sin {
		nsin[i] = -x
	}
	dcos, dsin, dnsin := up(m, cos, 4), up(m, sin, 4), up(m, nsin, 4)
	dy := up(m, randn(n, uint64(nt)+9), 4)
	y, y16, lse := m.alloc(n, 4), m.alloc(n, 2), m.alloc(bht, 4)
	do16, dvec, dqkv16 := m.alloc(n, 2), m.alloc(bht, 4), m.alloc(3*n, 2)
	scale, scaleLog2 := flashScale()
	block, q, kv := dim{x: flashThreads}, dim{x: blocks(nt, flashBR), y: b * nh}, dim{x: blocks(nt, flashBC), y: b * nh}
	r := &run{st: st}
	if fromRows {
		r.launch("flash_forward_rows", q, block, y, y16, lse, qkv16, dcos, dsin, nt, nh, scaleLog2)
	} else {
		r.launch("flash_forward", q, block, y, y16, lse, heads[0], heads[1], heads[2], nt, nh, scaleLog2)
	}
	r.launch("flash_backward_pre", rows(bht), blk, do16, dvec, dy, y, bht, nt, nh)
	if fromRows {
		r.launch("flash_backward_dkdv_rows", kv, block, dqkv16, qkv16, dcos, dsin, dnsin, nh, do16, lse, dvec, nt, scaleLog2, scale)
		r.launch("flash_backward_dq_rows", q, block, dqkv16, qkv16, dcos, dsin, dnsin, nh, do16, lse, dvec, nt, scaleLog2, scale)
	} else {
		r.launch("flash_backward_dkdv_rope16", kv, block, dqkv16, dcos, dnsin, nh, heads[0], heads[1], heads[2], do16, lse, dvec, nt, scaleLog2, scale)
		r.launch("flash_backward_dq_rope16", q, block, dqkv16, dcos, dnsin, nh, heads[0], heads[1], heads[2], do16, lse, dvec, nt, scaleLog2, scale)
	}
	r.do(st.sync)
	if r.err != nil {
		t.Fatalf("T=%d: %v", nt, r.err)
	}
	return map[string][]uint32{"O": bits32(down[float32](m, y, n)), "O16": widen16(down[uint16](m, y16, n)),
		"lse": bits32(down[float32](m, lse, bht)), "dqkv16": widen16(down[uint16](m, dqkv16, 3*n))}
}

// widen16 is bfloat16 bits as uint32s, to compare with bits32's.
func widen16(h []uint16) []uint32 {
	w := make([]uint32, len(h))
	for i, x := range h {
		w[i] = uint32(x)
	}
	return w
}

// gradErrs returns, per tensor of the layout, relErr of grads against ref.
func gradErrs(cfg model.Config, grads, ref []float32) map[string]float64 {
	errs := map[string]float64{}
	for _, ts := range cfg.Layout().Tensors {
		errs[ts.Name] = relErr(grads[ts.Offset:ts.Offset+ts.Size], ref[ts.Offset:ts.Offset+ts.Size])
	}
	return errs
}

// An engine on the flash path, LLaMA or GPT-2, stays about as close to float32 as today's
// bf16 path (its losses and each tensor's gradient within twice that path's distance,
// plus 10⁻³ of the loss or 2·10⁻³ of the gradient's norm: both round attention's operands
// to bfloat16, at other points), and gives the same bits run to run; with the other fast
// paths on too. A wrong tile or mask gives errors of order one. Heads of another size, and
// other precisions, keep the materialised path.
func TestFlashEngine(t *testing.T) {
	needFast(t, allOn(t))
	d64 := model.Config{Arch: model.LLaMA, Vocab: 1000, Dim: 128, Layers: 2, Heads: 2, Context: 160, Hidden: 256, Batch: 2}.WithDefaults()
	for _, tc := range []struct {
		name          string
		cfg           model.Config
		batch, seqLen int
	}{
		{"D64/T100", d64, 3, 100},
		{"D64/T160", d64, 2, 160},
		{"llama-124m", preset(t, "llama-124m"), 2, 512},
		{"gpt2/D64/T100", model.Config{Arch: model.GPT2, Vocab: 1000, Dim: 128, Layers: 2, Heads: 2, Context: 160, Hidden: 512, Batch: 2}.WithDefaults(), 3, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			toks, p, exact := engineCase(t, tc.cfg, tc.batch, tc.seqLen, 31)
			train := func(prec backend.Precision, f fastPaths) (*Engine, fastRun) {
				return trainFast(t, tc.cfg, tc.batch, tc.seqLen, prec, f, p, toks)
			}
			_, old := train(backend.BF16, 0)
			// with the exact paths and ce1 too; the other paths' own tests run them with flash
			for _, f := range []fastPaths{fastFlash, exactOn(t) | fastFlash | fastCE1} {
				e, got := train(backend.BF16, f)
				if !e.flash {
					t.Fatalf("%s: the engine does not run the flash path", f)
				}
				nearFloat32(t, f, tc.cfg, got, runFast(t, e, f, toks), exact, old, 1e-3, 2e-3)
			}
		})
	}
	// the materialised path where the flash kernels do not apply
	for _, c := range []struct {
		cfg  model.Config
		prec backend.Precision
	}{{d64, backend.FP32}, {d64, backend.TF32}, {preset(t, "tiny-llama"), backend.BF16}} {
		e, err := newEngine(c.cfg, 2, 16, c.prec, fastFlash)
		if err != nil {
			t.Fatal(err)
		}
		if e.flash || e.act.layers[0].att == 0 {
			t.Errorf("%s, head size %d: flash %v, probabilities %v; want the materialised path", c.prec, c.cfg.HeadDim(), e.flash, e.act.layers[0].att)
		}
		e.Close()
	}
}

// NeedBytes follows the flash path's buffers: per layer the bfloat16 q, k, v and the
// log-sum-exp, dO and D once, and no scores or probabilities.
func TestFlashNeedBytes(t *testing.T) {
	needFast(t, allOn(t))
	cfg := model.Config{Arch: model.LLaMA, Vocab: 1000, Dim: 128, Layers: 2, Heads: 2, Context: 160, Hidden: 256, Batch: 2}.WithDefaults()
	for _, f := range []fastPaths{0, fastFlash, fastFlash | fastRound, allOn(t)} {
		e, err := newEngine(cfg, 3, 100, backend.BF16, f)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := needBytes(cfg, 3, 100, backend.BF16, f), int64(e.DeviceBytes()); got != want {
			t.Errorf("%s: NeedBytes %d, the engine holds %d", f, got, want)
		}
		e.Close()
	}
	// at llama-124m's shape: the probabilities of every layer and the scores' gradient go,
	// the copies come
	big := preset(t, "llama-124m")
	nl, bht, nc := int64(big.Layers), int64(16*12*512), int64(16*512*768)
	saved := (nl+1)*bht*512*4 - nl*(3*nc*2+bht*4) - (nc*2 + bht*4)
	if on, off := needBytes(big, 16, 512, backend.BF16, fastFlash), needBytes(big, 16, 512, backend.BF16, 0); off-on != saved {
		t.Errorf("llama-124m at 16×512: NeedBytes %d with flash, %d without; want %d less", on, off, saved)
	}
}

// The rope path's kernels on their own: flash_permute_rope is bitwise rope then
// flash_permute; the backward kernels that write dqkv16 themselves bitwise the default ones
// followed by the gather; with act16 too, flash_permute_rope_bf16 on qkv in bfloat16
// bitwise flash_permute_rope on it widened, and the kernels that read q, k, v straight
// from it (rotating on the way, the rows path) bitwise the kernels on the heads' layout
// after that permutation; T not a multiple of anything. Small shapes, so that check.sh
// runs it under compute-sanitizer too.
func TestRopeKernels(t *testing.T) {
	st := testStream(t, needFast(t, fastFlash|fastRope|fastRows))
	perm := loaded(t, fastFlash|fastRope|fastAct16)
	defer st.lock()()
	const b, nh = 2, 3
	for _, nt := range []int{1, 37, 100} {
		m := devMem{t, st}
		n := b * nh * nt * flashD
		qkv, cos, sin := randn(3*n, uint64(nt)), randn(nt*flashD/2, 5), randn(nt*flashD/2, 6)
		q16 := toBF16(qkv)
		dq, dqr, dq16 := up(m, qkv, 4), up(m, qkv, 4), up(m, q16, 2)
		dw := up(m, widened(q16), 4)
		dcos, dsin := up(m, cos, 4), up(m, sin, 4)
		old, fused, wide, perm16 := m.alloc(3*n, 2), m.alloc(3*n, 2), m.alloc(3*n, 2), m.alloc(3*n, 2)
		r := &run{st: st}
		grid := dim{x: blocks(n/4, threads), y: 3}
		r.launch("rope", lin(b*nt*2*nh*flashD/2), blk, dqr, dcos, dsin, b*nt, nt, nh*flashD, nh)
		r.launch("flash_permute", dim{x: blocks(n/2, threads), y: 3}, blk, old, dqr, b, nt, nh)
		r.launch("flash_permute_rope", grid, blk, fused, dq, dcos, dsin, b, nt, nh)
		r.launch("flash_permute_rope", grid, blk, wide, dw, dcos, dsin, b, nt, nh)
		if perm {
			r.launch("flash_permute_rope_bf16", grid, blk, perm16, dq16, dcos, dsin, b, nt, nh)
		}
		r.do(st.sync)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if i := firstDiff(down[uint16](m, fused, 3*n), down[uint16](m, old, 3*n)); i >= 0 {
			t.Errorf("T=%d: flash_permute_rope's element %d is not rope then flash_permute", nt, i)
		}
		if i := firstDiff(down[uint16](m, fused, 3*n), ropeHeads(qkv, cos, sin, b, nt, nh)); i >= 0 {
			t.Errorf("T=%d: flash_permute_rope's element %d is not the Go mirror's", nt, i)
		}
		if i := firstDiff(down[uint16](m, perm16, 3*n), down[uint16](m, wide, 3*n)); perm && i >= 0 {
			t.Errorf("T=%d: flash_permute_rope_bf16's element %d is not flash_permute_rope's on qkv widened", nt, i)
		}
		heads := [3]cu.DevicePtr{wide, wide + cu.DevicePtr(2*n), wide + cu.DevicePtr(4*n)}
		a, b16 := flashRowsPasses(t, st, m, false, dq16, heads, cos, sin, b, nh, nt), flashRowsPasses(t, st, m, true, dq16, heads, cos, sin, b, nh, nt)
		for name, x := range a {
			if i := firstDiff(b16[name], x); i >= 0 {
				t.Errorf("T=%d: %s[%d] of the kernels reading qkv differs from the permuted path's", nt, name, i)
			}
		}
		// the backward kernels that write dqkv16 themselves: bitwise the default ones,
		// then the gather with the inverse rotation and the rounding
		q, k, v, do := flashInputs(b*nh, nt, uint64(nt)+3)
		nsin := make([]float32, len(sin))
		for i, s := range sin {
			nsin[i] = -s
		}
		got := flashOnDevice(t, st, newFlashArgs(b*nh, nt, q, k, v), q, k, v, do, b, nh, cos, nsin)
		_, gathered := gatherRopeFused(got["dQ"], got["dK"], got["dV"], cos, nsin, b, nt, nh, flashD)
		if i := firstDiff(toBF16Bits(got["dqkv16"]), gathered); i >= 0 {
			t.Errorf("T=%d: dqkv16[%d] of flash_backward_*_rope16 is not flash_backward_* then the gather", nt, i)
		}
	}
}

// Engines with flash and the rope path give the same bits as with flash alone, LLaMA and
// GPT-2 (which has no RoPE); TestRopeKernels checks its kernels.
func TestRopeInPermute(t *testing.T) {
	needFast(t, fastFlash|fastRope)
	d64 := model.Config{Arch: model.LLaMA, Vocab: 1000, Dim: 128, Layers: 2, Heads: 2, Context: 160, Hidden: 256, Batch: 2}.WithDefaults()
	for _, tc := range []engineShape{
		{"D64/T100", d64, 3, 100},
		{"llama-124m", preset(t, "llama-124m"), 2, 512},
		{"gpt2/D64/T100", model.Config{Arch: model.GPT2, Vocab: 1000, Dim: 128, Layers: 2, Heads: 2, Context: 160, Hidden: 512, Batch: 2}.WithDefaults(), 3, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			toks, p, _ := engineCase(t, tc.cfg, tc.batch, tc.seqLen, 91)
			for _, base := range []fastPaths{fastFlash, exactOn(t)&^fastRope | fastFlash} {
				_, old := trainFast(t, tc.cfg, tc.batch, tc.seqLen, backend.BF16, base, p, toks)
				e, got := trainFast(t, tc.cfg, tc.batch, tc.seqLen, backend.BF16, base|fastRope, p, toks)
				if e.ropeInPermute() == e.gpt2 {
					t.Fatalf("%s: ropeInPermute %v for GPT-2 %v", base|fastRope, e.ropeInPermute(), e.gpt2)
				}
				if !slices.Equal(got.losses, old.losses) || firstDiff(bits32(got.grads), bits32(old.grads)) >= 0 {
					t.Errorf("%s: the results differ from %s's", base|fastRope, base)
				}
			}
		})
	}
}
