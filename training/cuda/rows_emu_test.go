package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"testing"
)

// The source of rmsnorm_backward_fused, rmsnorm_backward_fused_bf16 and
// crossentropy_loss_online (rmsnorm.cu, crossentropy.cu), run on the CPU by
// flashemu/rows.cc, gives the Go mirrors' bits: every index, chunk edge, shuffle and merge
// of the kernels is the mirrors'. In both block orders, with rows that fill no chunk and
// blocks of several sizes. Needs g++ (C++20); skipped without it.
func TestRowKernelsEmulated(t *testing.T) {
	bin := buildEmulator(t, "flashemu/rows.cc")
	for _, tc := range []struct {
		n, c, threads int
		reverse       bool
		nce, v        int
	}{
		{5, 12, normThreads(12), false, 1, 5},
		{70, 100, normThreads(100), true, 4, 1000},
		{70, 100, 64, false, 2, 513},
		{33, 768, normThreads(768), true, 5, 50304},
	} {
		n, c := tc.n, tc.c
		x, w, dout, dx := randn(n*c, 1), randn(c, 2), randn(n*c, 3), randn(n*c, 4)
		_, _, rstd := rmsnormMirror(x, w, c, 1e-5)
		logits, targets := ceCase(tc.nce, tc.v, uint64(tc.v))
		out := runEmulator(t, bin, []int32{int32(n), int32(c), int32(tc.threads), flag(tc.reverse), int32(tc.nce), int32(tc.v)},
			dx, dout, x, w, rstd, logits, targets)
		chunks := (n + normRows - 1) / normRows
		dx1, part1, dx2 := make([]float32, n*c), make([]float32, chunks*c), make([]float32, n*c)
		dx16, part2 := make([]uint16, n*c), make([]float32, chunks*c)
		losses, stats := make([]float64, tc.nce), make([]float32, 2*tc.nce)
		losses16, stats16, grad16 := make([]float64, tc.nce), make([]float32, 2*tc.nce), make([]uint16, tc.nce*tc.v)
		dx3, dx3h, part3 := make([]float32, n*c), make([]uint16, n*c), make([]float32, chunks*c)
		dx4, dx4h, part4 := make([]float32, n*c), make([]uint16, n*c), make([]float32, chunks*c)
		for _, a := range []any{dx1, part1, dx2, dx16, part2, losses, stats, losses16, stats16, grad16, dx3, dx3h, part3, dx4, dx4h, part4} {
			if err := binary.Read(out, binary.LittleEndian, a); err != nil {
				t.Fatalf("emulator output: %v", err)
			}
		}
		if out.Len() != 0 {
			t.Fatalf("emulator wrote %d bytes more than expected", out.Len())
		}

		order := make([]int, chunks)
		for i := range order {
			order[i] = i
		}
		mdx := slices.Clone(dx)
		mdx16, mpart := rmsnormBackwardFusedMirror(mdx, dout, x, w, rstd, c, tc.threads, order)
		what := fmt.Sprintf("%+v", tc)
		sameNorm(t, what, dx1, part1, dx2, dx16, part2, mdx, mpart, mdx16)
		// on dout in bfloat16 (the act16 path): rmsnorm_backward_fused_from_bf16, and the
		// bf16 kernel on the values widened, against the mirror on them
		wdx := slices.Clone(dx)
		wdx16, wpart := rmsnormBackwardFusedMirror(wdx, widened(toBF16(dout)), x, w, rstd, c, tc.threads, order)
		sameNorm(t, what+", bfloat16 dout", dx4, part4, dx3, dx3h, part3, wdx, wpart, wdx16)
		if i := firstDiff(dx4h, wdx16); i >= 0 {
			t.Errorf("%s, bfloat16 dout: dx16[%d] of the bf16 kernel = %#04x, the mirror's %#04x", what, i, dx4h[i], wdx16[i])
		}

		sameCE(t, fmt.Sprintf("%+v", tc), logits, targets, tc.v, losses, stats, nil)
		// the logits16 kernels on the logits rounded to bfloat16: the mirror of the float32
		// kernels on the same values, bit for bit
		sameCE(t, fmt.Sprintf("%+v, bfloat16 logits", tc), widened(toBF16(logits)), targets, tc.v, losses16, stats16, grad16)
	}
}

// sameNorm checks the emulated RMSNorm backward kernels' outputs against the Go mirror's,
// bit for bit: dx and part of a float32-only kernel, dx, dx16 and part of a kernel that
// writes the copy.
func sameNorm(t *testing.T, what string, dx, part, dxc []float32, dxc16 []uint16, partc, mdx, mpart []float32, mdx16 []uint16) {
	t.Helper()
	for _, g := range []struct {
		name      string
		got, want []uint32
	}{
		{"dx", bits32(dx), bits32(mdx)}, {"partial sum", bits32(part), bits32(mpart)},
		{"dx (with the copy)", bits32(dxc), bits32(mdx)}, {"partial sum (with the copy)", bits32(partc), bits32(mpart)},
	} {
		if i := firstDiff(g.got, g.want); i >= 0 {
			t.Errorf("%s: %s[%d] = %#08x, the mirror's %#08x", what, g.name, i, g.got[i], g.want[i])
		}
	}
	if i := firstDiff(dxc16, mdx16); i >= 0 {
		t.Errorf("%s: dx16[%d] = %#04x, the mirror's %#04x", what, i, dxc16[i], mdx16[i])
	}
}

// sameCE checks the emulated online cross-entropy's losses, stats and (where given) bf16
// gradient of logits against the Go mirror's.
func sameCE(t *testing.T, what string, logits []float32, targets []int32, v int, losses []float64, stats []float32, grad16 []uint16) {
	t.Helper()
	ml, _, mg16 := onlineCE(logits, targets, v)
	for r := range targets {
		mx, sum := onlineRowMaxSum(logits[r*v : (r+1)*v])
		if math.Float32bits(stats[2*r]) != math.Float32bits(mx) || math.Float32bits(stats[2*r+1]) != math.Float32bits(1/sum) {
			t.Errorf("%s: stats of row %d = %v, %v; the mirror's %v, %v", what, r, stats[2*r], stats[2*r+1], mx, 1/sum)
		}
		// C's log and Go's may differ in a double's last bit
		if d := math.Abs(losses[r] - ml[r]); d > 1e-14*math.Max(1, math.Abs(ml[r])) {
			t.Errorf("%s: loss of row %d = %v, the mirror's %v", what, r, losses[r], ml[r])
		}
	}
	if grad16 == nil {
		return
	}
	if i := firstDiff(grad16, mg16); i >= 0 {
		t.Errorf("%s: bf16 gradient %d = %#04x, the mirror's %#04x", what, i, grad16[i], mg16[i])
	}
}
