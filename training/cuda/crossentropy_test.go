package cuda

import (
	"math"
	"math/rand/v2"
	"testing"
)

// A Go mirror of the cross-entropy kernels (kernels.cu): the same block of ceThreads
// threads per row, the same strided loops, the same tree of warp shuffles and per-warp
// partials in blockMax and blockSum, the same per-element sequence and an explicit
// float32 → bfloat16 rounding to nearest, ties to even. With Go's float32 exp in place of
// the GPU's expf, the fused kernels must give bitwise what the default path gives: the
// losses, the float32 gradient, and the bfloat16 operand that the head products read. A
// product that feeds a sum is converted to float32, so Go never fuses the two (nvcc runs
// with -fmad=false).

const warp = 32

// mexp is the mirror's expf: any deterministic float32 exp serves, since both paths call
// it on the same arguments.
func mexp(x float32) float32 { return float32(math.Exp(float64(x))) }

// roundBF16 rounds f to bfloat16 (to nearest, ties to even) as __float2bfloat16_rn does, NaN
// aside.
func roundBF16(f float32) uint16 {
	b := math.Float32bits(f)
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// warpReduce is warpSum or warpMax over the 32 lanes of one warp: each lane combines its
// value with lane l^o's for o = 16, 8, 4, 2, 1; every lane ends with the result.
func warpReduce(v []float32, op func(a, b float32) float32) {
	var old [warp]float32
	for o := 16; o > 0; o >>= 1 {
		copy(old[:], v)
		for l := range v {
			v[l] = op(old[l], old[l^o])
		}
	}
}

// blockReduce is blockSum or blockMax: per-thread values v (len ceThreads) reduced per
// warp, the warps' results gathered by warp 0's lanes (the rest padded with pad), and
// reduced again.
func blockReduce(v []float32, op func(a, b float32) float32, pad float32) float32 {
	nw := len(v) / warp
	sh := make([]float32, warp)
	for w := range nw {
		warpReduce(v[w*warp:(w+1)*warp], op)
		sh[w] = v[w*warp]
	}
	for l := nw; l < warp; l++ {
		sh[l] = pad
	}
	warpReduce(sh, op)
	return sh[0]
}

func add(a, b float32) float32 { return a + b }

// fmaxf is CUDA's fmaxf on numbers (no NaN reaches it here).
func fmaxf(a, b float32) float32 {
	if a > b {
		return a
	}
	return b
}

// rowMaxSum is the first two passes of crossentropy_forward and crossentropy_loss over one
// row: its max and Σexp(z − max), each thread striding over the row.
func rowMaxSum(z []float32) (mx, sum float32) {
	part := make([]float32, ceThreads)
	for t := range part {
		part[t] = float32(math.Inf(-1))
		for j := t; j < len(z); j += ceThreads {
			part[t] = fmaxf(part[t], z[j])
		}
	}
	mx = blockReduce(part, fmaxf, float32(math.Inf(-1)))
	for t := range part {
		part[t] = 0
		for j := t; j < len(z); j += ceThreads {
			part[t] += mexp(z[j] - mx)
		}
	}
	return mx, blockReduce(part, add, 0)
}

// oldCE is the default path: crossentropy_forward (probabilities in place), then
// crossentropy_backward (their gradient in place), then to_bf16 as a product's operand.
func oldCE(logits []float32, targets []int32, v int) (losses []float64, grad []float32, grad16 []uint16) {
	n := len(targets)
	z := append([]float32(nil), logits...)
	losses = make([]float64, n)
	for r, y := range targets {
		row := z[r*v : (r+1)*v]
		zy := row[y]
		mx, sum := rowMaxSum(row)
		for j := range row {
			row[j] = mexp(row[j] - mx)
		}
		inv := 1 / sum
		for j := range row {
			row[j] *= inv
		}
		losses[r] = math.Log(float64(sum)) + float64(mx) - float64(zy)
	}
	inv := float32(1 / float64(n))
	for idx := range z {
		p := float32(z[idx] * inv)
		if int32(idx%v) == targets[idx/v] {
			p -= inv
		}
		z[idx] = p
	}
	grad16 = make([]uint16, len(z))
	for i, g := range z {
		grad16[i] = roundBF16(g)
	}
	return losses, z, grad16
}

// fusedCE is the fused path: crossentropy_loss (losses and stats, logits unchanged), then
// crossentropy_grad and crossentropy_grad_bf16 from the logits and the stats.
func fusedCE(logits []float32, targets []int32, v int) (losses []float64, grad []float32, grad16 []uint16) {
	return statsCE(logits, targets, v, rowMaxSum)
}

// statsCE is a loss kernel that takes each row's max and sum with maxSum and writes the
// losses and the stats, then crossentropy_grad and crossentropy_grad_bf16.
func statsCE(logits []float32, targets []int32, v int, maxSum func([]float32) (float32, float32)) (losses []float64, grad []float32, grad16 []uint16) {
	n := len(targets)
	losses, stats := make([]float64, n), make([]float32, 2*n)
	for r, y := range targets {
		z := logits[r*v : (r+1)*v]
		mx, sum := maxSum(z)
		stats[2*r], stats[2*r+1] = mx, 1/sum
		losses[r] = math.Log(float64(sum)) + float64(mx) - float64(z[y])
	}
	grad, grad16 = ceGradMirror(logits, stats, targets, v)
	return losses, grad, grad16
}

// ceGradMirror is crossentropy_grad and crossentropy_grad_bf16: the gradient of the mean
// loss from the logits and each row's max and 1/Σexp (stats).
func ceGradMirror(logits, stats []float32, targets []int32, v int) (grad []float32, grad16 []uint16) {
	inv := float32(1 / float64(len(targets)))
	grad, grad16 = make([]float32, len(logits)), make([]uint16, len(logits))
	for r, y := range targets {
		z := logits[r*v : (r+1)*v]
		mx, rs := stats[2*r], stats[2*r+1]
		for t := range ceThreads {
			for j := t; j < v; j += ceThreads {
				p := mexp(z[j]-mx) * rs
				g := float32(p * inv)
				if j == int(y) {
					g -= inv
				}
				grad[r*v+j], grad16[r*v+j] = g, roundBF16(g)
			}
		}
	}
	return grad, grad16
}

// refCE is the cross-entropy in float64: the losses and the gradient of their mean.
func refCE(logits []float32, targets []int32, v int) (losses, grad []float64) {
	n := len(targets)
	losses, grad = make([]float64, n), make([]float64, len(logits))
	for r, y := range targets {
		z := logits[r*v : (r+1)*v]
		mx := math.Inf(-1)
		for _, x := range z {
			mx = math.Max(mx, float64(x))
		}
		var sum float64
		for _, x := range z {
			sum += math.Exp(float64(x) - mx)
		}
		losses[r] = math.Log(sum) + mx - float64(z[y])
		for j, x := range z {
			g := math.Exp(float64(x)-mx) / sum
			if j == int(y) {
				g--
			}
			grad[r*v+j] = g / float64(n)
		}
	}
	return losses, grad
}

func ceCase(n, v int, seed uint64) ([]float32, []int32) {
	rng := rand.New(rand.NewPCG(seed, 3))
	logits := make([]float32, n*v)
	for i := range logits {
		logits[i] = float32(3 * rng.NormFloat64())
	}
	targets := make([]int32, n)
	for r := range targets {
		targets[r] = int32(rng.IntN(v))
	}
	// targets at both edges of the vocabulary, a row with a logit that would overflow exp
	// without the max, one with a huge logit, and one of equal logits
	targets[0] = 0
	targets[n-1] = int32(v - 1)
	if n > 3 {
		logits[1*v+v/2] = 120
		logits[2*v+v-1] = 1e30
		targets[2] = int32(v - 1)
		for j := range v {
			logits[3*v+j] = 0.25
		}
	}
	return logits, targets
}

func TestFusedCrossEntropyMirror(t *testing.T) {
	for _, v := range []int{1, 5, 31, 511, 512, 513, 1000, 1537, 50304} {
		for _, n := range []int{1, 2, 7} {
			logits, targets := ceCase(n, v, uint64(v*10+n))
			lo, go32, go16 := oldCE(logits, targets, v)
			lf, gf32, gf16 := fusedCE(logits, targets, v)
			for r := range lo {
				if math.Float64bits(lf[r]) != math.Float64bits(lo[r]) {
					t.Errorf("V=%d N=%d: loss of row %d fused %v, default %v", v, n, r, lf[r], lo[r])
				}
			}
			for i := range go32 {
				if math.Float32bits(gf32[i]) != math.Float32bits(go32[i]) || gf16[i] != go16[i] {
					t.Fatalf("V=%d N=%d: gradient %d fused %v (bf16 %#04x), default %v (bf16 %#04x)", v, n, i, gf32[i], gf16[i], go32[i], go16[i])
				}
			}
			// against float64: the losses within 1e-5 (relative, or absolute below 1), the
			// bfloat16 gradient within its rounding (2⁻⁸ relative) and float32's error in
			// the probabilities (1e-6 of 1/N)
			lr, gr := refCE(logits, targets, v)
			for r := range lr {
				if d := math.Abs(lf[r] - lr[r]); d > 1e-5*math.Max(1, math.Abs(lr[r])) {
					t.Errorf("V=%d N=%d: loss of row %d %v, float64 %v", v, n, r, lf[r], lr[r])
				}
			}
			for i, g := range gr {
				got := float64(math.Float32frombits(uint32(gf16[i]) << 16))
				if d := math.Abs(got - g); d > math.Abs(g)/256+1e-6/float64(n) {
					t.Fatalf("V=%d N=%d: bf16 gradient %d = %v, float64 %v", v, n, i, got, g)
				}
			}
		}
	}
}

// The mirror's pieces against plain loops: the reductions give the exact max, a sum
// within float32's rounding, and bf16 rounds to nearest with ties to even.
func TestMirrorPieces(t *testing.T) {
	x := make([]float32, ceThreads)
	for i := range x {
		x[i] = float32(i%37) - 3
	}
	if got := blockReduce(append([]float32(nil), x...), fmaxf, float32(math.Inf(-1))); got != 33 {
		t.Errorf("blockMax = %v, want 33", got)
	}
	var want float32
	for _, v := range x {
		want += v
	}
	if got := blockReduce(append([]float32(nil), x...), add, 0); got != want {
		t.Errorf("blockSum = %v, want %v (integers: exact)", got, want)
	}
	for _, tc := range []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1
		{0x3f808000, 0x3f80}, // tie, even below
		{0x3f818000, 0x3f82}, // tie, even above
		{0x3f808001, 0x3f81}, // above the tie
		{0xbf807fff, 0xbf80}, // below the tie, negative
		{0x7f7fffff, 0x7f80}, // overflows to infinity
	} {
		if got := roundBF16(math.Float32frombits(tc.in)); got != tc.want {
			t.Errorf("roundBF16(%#08x) = %#04x, want %#04x", tc.in, got, tc.want)
		}
	}
}
