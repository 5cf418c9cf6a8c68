//go:build cuda

package cuda

import (
	"fmt"
	"testing"
)

// The kernels on the GPU against PyTorch (bench/gpu/torch_ref.py) on the same inputs:
// flash attention's forward and backward passes, T below, at, between and above the tiles
// and llama-124m's heads at T = 512; and each cross-entropy path (the default kernels,
// ce's fused ones in float32 and bfloat16, ce1's online loss, logits16's bfloat16 logits)
// for vocabularies from 5 to GPT-2's 50,304, outliers included. Each against float64 and,
// where the machine's PyTorch has the GPU, against PyTorch's own flash attention and
// cross-entropy.
func TestKernelsAgainstTorch(t *testing.T) {
	py := needTorchRef(t)
	st := testStream(t, needFast(t, fastFlash|fastCE|fastCE1|fastLogits16))
	defer st.lock()()
	dir := t.TempDir()
	for _, c := range []struct{ b, nh, nt int }{{2, 3, 1}, {2, 3, 37}, {2, 3, 64}, {2, 3, 100}, {2, 3, 130}, {2, 12, 512}} {
		q, k, v, do := flashInputs(c.b*c.nh, c.nt, uint64(c.nt)+7)
		a := newFlashArgs(c.b*c.nh, c.nt, q, k, v)
		writeAttentionCase(t, dir, fmt.Sprintf("flash-T%d", c.nt), a, do, flashOnDevice(t, st, a, q, k, v, do, c.b, c.nh))
	}
	for _, v := range []int{5, 513, 50304} {
		const n = 7
		logits, targets := ceCase(n, v, uint64(v)+7)
		for _, path := range []string{"default", "ce-f32", "ce", "ce1", "logits16"} {
			z, losses, grad := ceOnDevice(t, st, path, logits, targets, v)
			writeCECase(t, dir, fmt.Sprintf("%s-V%d", path, v), z, targets, v, losses, grad)
		}
	}
	out, ok := runTorchRef(t, py, dir)
	t.Log(out)
	if !ok {
		t.Error("the kernels fail PyTorch's checks")
	}
}

// ceOnDevice runs a cross-entropy path's loss and gradient kernels, as lossForward and
// lossBackward launch them, on logits: the logits as the kernels read them (float32, or
// bfloat16 on logits16), the losses, and the gradient of their mean as the head products
// take it (float32 on the default path and ce-f32, bfloat16 on the others).
func ceOnDevice(t *testing.T, st *stream, path string, logits []float32, targets []int32, v int) (z any, losses []float64, grad any) {
	t.Helper()
	n := len(targets)
	inv := float32(1 / float64(n))
	m := devMem{t, st}
	z32, tg := up(m, logits, 4), up(m, targets, 4)
	l, s, g16 := m.alloc(n, 8), m.alloc(2*n, 4), m.alloc(n*v, 2)
	ce, one := dim{x: n}, dim{x: ceThreads}
	r := &run{st: st}
	z = logits
	switch path {
	case "default":
		r.launch("crossentropy_forward", ce, one, z32, l, tg, n, v)
		r.launch("crossentropy_backward", lin(n*v), blk, z32, tg, n, v, inv)
	case "ce-f32":
		r.launch("crossentropy_loss", ce, one, z32, l, s, tg, n, v)
		r.launch("crossentropy_grad", ce, one, z32, s, tg, n, v, inv)
	case "ce", "ce1":
		loss := map[string]string{"ce": "crossentropy_loss", "ce1": "crossentropy_loss_online"}[path]
		r.launch(loss, ce, one, z32, l, s, tg, n, v)
		r.launch("crossentropy_grad_bf16", ce, one, g16, z32, s, tg, n, v, inv)
	case "logits16":
		l16 := toBF16(logits)
		z = l16
		d16 := up(m, l16, 2)
		r.launch("crossentropy_loss_online_bf16", ce, one, d16, l, s, tg, n, v)
		r.launch("crossentropy_grad_from_bf16", ce, one, g16, d16, s, tg, n, v, inv)
	default:
		t.Fatalf("cross-entropy path %q", path)
	}
	r.do(st.sync)
	if r.err != nil {
		t.Fatalf("%s, V=%d: %v", path, v, r.err)
	}
	losses = down[float64](m, l, n)
	if path == "default" || path == "ce-f32" {
		return z, losses, down[float32](m, z32, n*v)
	}
	return z, losses, down[uint16](m, g16, n*v)
}
