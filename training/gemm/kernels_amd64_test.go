//go:build amd64 && !purego

package gemm

import (
	"math"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/cpu"
)

// simdLevels lists the SIMD float32 kernels and whether this CPU runs them.
func simdLevels() []level {
	return []level{
		{avx512Kernel, cpu.X86.HasAVX512F},
		{avx2Kernel, cpu.X86.HasAVX2 && cpu.X86.HasFMA},
	}
}

func TestChooseKernel(t *testing.T) {
	for _, tc := range []struct {
		env          string
		avx512, avx2 bool
		want         string
	}{
		{"", true, true, "avx512"},
		{"", false, true, "avx2"},
		{"", false, false, "go"},
		{"go", true, true, "go"},
		{"avx2", true, true, "avx2"},
		{"avx2", false, false, "go"},
		{"other", true, true, "avx512"},
	} {
		if got := chooseKernel(tc.env, tc.avx512, tc.avx2).name; got != tc.want {
			t.Errorf("chooseKernel(%q, %v, %v) = %s, want %s", tc.env, tc.avx512, tc.avx2, got, tc.want)
		}
	}
}

// TestPackAVX512 compares the AVX-512 packing routines with the portable ones bit for bit,
// on blocks that exercise the in-register transpose, its scalar tails and the masked copies.
func TestPackAVX512(t *testing.T) {
	if !cpu.X86.HasAVX512F {
		t.Skip("CPU lacks AVX-512F")
	}
	rng := rand.New(rand.NewPCG(21, 22))
	const ld = 131
	x := make([]float32, 300*ld)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	goA, goB := packAGo[float32](14), packBGo[float32](32)
	for _, trans := range []bool{false, true} {
		for _, sz := range [][4]int{{0, 0, 28, 16}, {3, 5, 14, 37}, {14, 16, 41, 100}, {280, 0, 14, 48}, {280, 1, 17, 31}, {2, 7, 16, 1}} {
			off, p0, mc, kc := sz[0], sz[1], sz[2], sz[3]
			rows := 300 // rows of op(X) available
			if trans {
				rows = ld
			}
			if off+mc > rows {
				continue
			}
			n := (mc + 31) / 32 * (32*kc + 16)
			want, got := make([]float32, n), make([]float32, n)
			for i := range got {
				got[i] = float32(math.NaN())
			}
			goA(want, x, ld, trans, rows, off, p0, mc, kc)
			packAAVX512(got, x, ld, trans, rows, off, p0, mc, kc)
			for i := range (mc + 13) / 14 * aStride(14, kc) {
				if i%aStride(14, kc) >= 14*kc {
					continue // padding between slivers
				}
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("packA trans=%v %v: [%d] = %g, want %g", trans, sz, i, got[i], want[i])
				}
			}
			goB(want, x, ld, !trans, rows, p0, off, kc, mc)
			for i := range got {
				got[i] = float32(math.NaN())
			}
			packBAVX512(got, x, ld, !trans, rows, p0, off, kc, mc)
			for i := range (mc + 31) / 32 * 32 * kc {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("packB trans=%v %v: [%d] = %g, want %g", !trans, sz, i, got[i], want[i])
				}
			}
		}
	}
}

// TestKernelsBitwise checks that every float32 kernel the CPU runs (AVX-512, AVX2, the
// portable one) gives the same bits on every case of each one's blocking: each element of
// C is one chain of fused multiply-adds in increasing p over the same kc slices, scaled by
// alpha and added to beta·C by one fused multiply-add, whatever the tile shape. On a CPU
// with AVX2 alone it compares AVX2 with the portable kernel.
func TestKernelsBitwise(t *testing.T) {
	var kerns []*kernel[float32]
	for _, lv := range levels32() {
		if lv.ok {
			kerns = append(kerns, lv.kern)
		}
	}
	if len(kerns) < 2 {
		t.Skip("this CPU runs the portable kernel alone: nothing to compare it with")
	}
	rng := rand.New(rand.NewPCG(31, 32))
	for _, kern := range kerns {
		for _, cs := range cases(kern, testing.Short()) {
			o := cs.operands(rng).rounded()
			want := call32(kerns[0], nil, cs, o)
			for _, other := range kerns[1:] {
				got := call32(other, nil, cs, o)
				for i := range want {
					if math.Float64bits(want[i]) != math.Float64bits(got[i]) && !(math.IsNaN(want[i]) && math.IsNaN(got[i])) {
						t.Fatalf("%v: C[%d] = %g (%s), %g (%s)", cs, i, want[i], kerns[0].name, got[i], other.name)
					}
				}
			}
		}
	}
}
