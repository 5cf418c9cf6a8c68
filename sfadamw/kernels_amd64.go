//go:build amd64 && !purego

package sfadamw

import (
	"os"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// SIMD kernels for amd64.
//
// The assembly in kernels_amd64.s implements sfAdamWGo and adamWGo with AVX-512F (16 float32
// lanes in ZMM registers, masked loads and stores for the tail) and with AVX2 (8 lanes in
// YMM registers, scalar SSE tail). Both perform exactly the operations of the Go reference
// kernels in the same order, with correctly rounded IEEE instructions only (VMULPS,
// VADDPS, VSUBPS, VDIVPS, VSQRTPS; no fused multiply-add, no approximate reciprocals), so
// their results are bitwise identical to the portable loops.
//
// At start-up the widest kernels the CPU and the operating system support are selected.
// The environment variable SFSWEEP_KERNELS overrides the choice:
//
//	SFSWEEP_KERNELS=go      the portable Go kernels
//	SFSWEEP_KERNELS=avx2    the AVX2 kernels, even where AVX-512 is available
//
// Any other value (or none) selects automatically. Building with -tags purego leaves out
// the assembly altogether.

// The assembly kernels process n elements starting at the given pointers; n ≥ 0 and every
// pointer must address at least n float32 values.

//go:noescape
func sfAdamWAVX512(grad, y, z, v *float32, n int, k *sfScalars)

//go:noescape
func sfAdamWAVX2(grad, y, z, v *float32, n int, k *sfScalars)

//go:noescape
func adamWAVX512(grad, p, m, v *float32, n int, k *adamScalars)

//go:noescape
func adamWAVX2(grad, p, m, v *float32, n int, k *adamScalars)

// sfAdamW512 is sfAdamWGo on AVX-512F.
func sfAdamW512(g, y, z, v []float32, k *sfScalars) {
	if len(g) == 0 {
		return
	}
	y, z, v = y[:len(g)], z[:len(g)], v[:len(g)] // bounds checks, as in sfAdamWGo
	sfAdamWAVX512(unsafe.SliceData(g), unsafe.SliceData(y), unsafe.SliceData(z), unsafe.SliceData(v), len(g), k)
}

// sfAdamW256 is sfAdamWGo on AVX2.
func sfAdamW256(g, y, z, v []float32, k *sfScalars) {
	if len(g) == 0 {
		return
	}
	y, z, v = y[:len(g)], z[:len(g)], v[:len(g)]
	sfAdamWAVX2(unsafe.SliceData(g), unsafe.SliceData(y), unsafe.SliceData(z), unsafe.SliceData(v), len(g), k)
}

// adamW512 is adamWGo on AVX-512F.
func adamW512(g, p, m, v []float32, k *adamScalars) {
	if len(g) == 0 {
		return
	}
	p, m, v = p[:len(g)], m[:len(g)], v[:len(g)]
	adamWAVX512(unsafe.SliceData(g), unsafe.SliceData(p), unsafe.SliceData(m), unsafe.SliceData(v), len(g), k)
}

// adamW256 is adamWGo on AVX2.
func adamW256(g, p, m, v []float32, k *adamScalars) {
	if len(g) == 0 {
		return
	}
	p, m, v = p[:len(g)], m[:len(g)], v[:len(g)]
	adamWAVX2(unsafe.SliceData(g), unsafe.SliceData(p), unsafe.SliceData(m), unsafe.SliceData(v), len(g), k)
}

// kernelSet is one implementation of both float32 kernels.
type kernelSet struct {
	name string // "go", "avx2" or "avx512"
	sf   func(g, y, z, v []float32, k *sfScalars)
	adam func(g, p, m, v []float32, k *adamScalars)
}

var (
	goKernels     = kernelSet{"go", sfAdamWGo, adamWGo}
	avx2Kernels   = kernelSet{"avx2", sfAdamW256, adamW256}
	avx512Kernels = kernelSet{"avx512", sfAdamW512, adamW512}
)

// kernelName is the name of the kernel set selected at start-up.
var kernelName = "go"

// chooseKernels returns the kernel set to use given the value of SFSWEEP_KERNELS and
// whether the CPU (with operating-system support) has AVX-512F and AVX2.
func chooseKernels(env string, hasAVX512F, hasAVX2 bool) kernelSet {
	switch {
	case env == "go":
		return goKernels
	case hasAVX512F && env != "avx2":
		return avx512Kernels
	case hasAVX2:
		return avx2Kernels
	}
	return goKernels
}

func init() {
	ks := chooseKernels(os.Getenv("SFSWEEP_KERNELS"), cpu.X86.HasAVX512F, cpu.X86.HasAVX2)
	sfAdamWKernel, adamWKernel, kernelName = ks.sf, ks.adam, ks.name
}
