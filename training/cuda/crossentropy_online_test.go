package cuda

import (
	"math"
	"testing"
)

// A Go mirror of crossentropy_loss_online (crossentropy.cu): ceThreads threads striding
// over the row, each with a running max and a running sum rescaled when the max grows,
// then the pairs merged in blockSum's tree of shuffles and per-warp partials. With Go's
// exp in place of the GPU's expf it gives the exact max and a sum within float32's error
// of the two-pass kernels', so losses within 10⁻⁵ and gradients within float32's error,
// while the bits differ.

// softmaxPair is a partial (max, sum of exp(z − max)) of a row.
type softmaxPair struct{ m, s float32 }

// combineMirror is softmaxCombine.
func combineMirror(a, b softmaxPair) softmaxPair {
	mx := fmaxf(a.m, b.m)
	if mx == float32(math.Inf(-1)) {
		return a
	}
	x, y := a.s, b.s
	if a.m != mx {
		x = float32(a.s * mexp(a.m-mx))
	}
	if b.m != mx {
		y = float32(b.s * mexp(b.m-mx))
	}
	return softmaxPair{mx, x + y}
}

// warpCombine is warpSoftmax over 32 lanes: every lane ends with the result.
func warpCombine(v []softmaxPair) {
	var old [warp]softmaxPair
	for o := 16; o > 0; o >>= 1 {
		copy(old[:], v)
		for l := range v {
			v[l] = combineMirror(old[l], old[l^o])
		}
	}
}

// onlineRowMaxSum is crossentropy_loss_online's max and sum over one row.
func onlineRowMaxSum(z []float32) (mx, sum float32) {
	part := make([]softmaxPair, ceThreads)
	for t := range part {
		p := softmaxPair{float32(math.Inf(-1)), 0}
		for j := t; j < len(z); j += ceThreads {
			if x := z[j]; x > p.m {
				p.s = float32(p.s*mexp(p.m-x)) + 1
				p.m = x
			} else {
				p.s += mexp(x - p.m)
			}
		}
		part[t] = p
	}
	sh := make([]softmaxPair, warp)
	for w := range ceThreads / warp {
		warpCombine(part[w*warp : (w+1)*warp])
		sh[w] = part[w*warp]
	}
	for l := ceThreads / warp; l < warp; l++ {
		sh[l] = softmaxPair{float32(math.Inf(-1)), 0}
	}
	warpCombine(sh)
	return sh[0].m, sh[0].s
}

// onlineCE is the online path: crossentropy_loss_online, then the fused path's gradient
// kernels.
func onlineCE(logits []float32, targets []int32, v int) (losses []float64, grad []float32, grad16 []uint16) {
	return statsCE(logits, targets, v, onlineRowMaxSum)
}

func TestOnlineCrossEntropyMirror(t *testing.T) {
	differ := 0
	for _, v := range []int{1, 5, 31, 511, 512, 513, 1000, 1537, 50304} {
		for _, n := range []int{1, 2, 7} {
			logits, targets := ceCase(n, v, uint64(v*10+n))
			lf, gf32, _ := fusedCE(logits, targets, v)
			lo, go32, go16 := onlineCE(logits, targets, v)
			lr, gr := refCE(logits, targets, v)
			for r := range lo {
				mxF, sumF := rowMaxSum(logits[r*v : (r+1)*v])
				mxO, sumO := onlineRowMaxSum(logits[r*v : (r+1)*v])
				if mxO != mxF {
					t.Errorf("V=%d N=%d: max of row %d online %v, two passes %v", v, n, r, mxO, mxF)
				}
				if math.Abs(float64(sumO-sumF)) > 1e-6*float64(sumF) {
					t.Errorf("V=%d N=%d: sum of row %d online %v, two passes %v", v, n, r, sumO, sumF)
				}
				if sumO != sumF {
					differ++
				}
				if d := math.Abs(lo[r] - lr[r]); d > 1e-5*math.Max(1, math.Abs(lr[r])) {
					t.Errorf("V=%d N=%d: loss of row %d online %v, float64 %v", v, n, r, lo[r], lr[r])
				}
				if d := math.Abs(lo[r] - lf[r]); d > 1e-6*math.Max(1, math.Abs(lf[r])) {
					t.Errorf("V=%d N=%d: loss of row %d online %v, two passes %v", v, n, r, lo[r], lf[r])
				}
			}
			for i, g := range gr {
				if d := math.Abs(float64(go32[i]) - float64(gf32[i])); d > 1e-6*math.Abs(float64(gf32[i]))+1e-12 {
					t.Fatalf("V=%d N=%d: gradient %d online %v, two passes %v", v, n, i, go32[i], gf32[i])
				}
				got := float64(math.Float32frombits(uint32(go16[i]) << 16))
				if d := math.Abs(got - g); d > math.Abs(g)/256+1e-6/float64(n) {
					t.Fatalf("V=%d N=%d: bf16 gradient %d = %v, float64 %v", v, n, i, got, g)
				}
			}
		}
	}
	// the sums take other roundings: some rows must differ, or the test shows nothing
	if differ == 0 {
		t.Error("the online sums equal the two-pass sums in every row")
	}
}

// A block's threads merge their pairs in any order of lanes to the same bits: the merge
// is commutative, so the two lanes of each shuffle agree.
func TestSoftmaxCombineCommutes(t *testing.T) {
	z := randn(4096, 11)
	for i := range z {
		z[i] *= 5
	}
	for i := 0; i+3 < len(z); i += 4 {
		a := softmaxPair{z[i], float32(math.Abs(float64(z[i+1])))}
		b := softmaxPair{z[i+2], float32(math.Abs(float64(z[i+3])))}
		if x, y := combineMirror(a, b), combineMirror(b, a); x != y {
			t.Fatalf("combine(%v, %v) = %v, reversed %v", a, b, x, y)
		}
	}
	empty := softmaxPair{float32(math.Inf(-1)), 0}
	if p := combineMirror(empty, empty); p != empty {
		t.Errorf("two empty pairs merge to %v", p)
	}
	if p := combineMirror(empty, softmaxPair{2, 3}); p != (softmaxPair{2, 3}) {
		t.Errorf("an empty pair changes (2, 3) to %v", p)
	}
}
