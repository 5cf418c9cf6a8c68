package sfadamw

import (
	"math"
	"unsafe"
)

// The float32 training path runs its hot loops through the kernels below, which have an
// exactly specified order of operations (no fused multiply-add, IEEE square root and
// division), so every implementation of them — the portable Go loops here and the SIMD
// versions where the CPU has them — gives bitwise-identical results.

// sfScalars are the per-step constants of the SF-AdamW kernel.
type sfScalars struct {
	b2, omb2 float32 // β2, 1−β2
	rs       float32 // 1/√(1−β2^t): √v̂ = √v · rs
	eps, wd  float32 // ε, λ
	gs       float32 // gradient scale (clipping), 1 when off
	c        float32 // c_{t+1}
	lr       float32 // γ_t
	coef     float32 // γ_t(β1(1−c_{t+1}) − 1)
}

// sfAdamWGo is the reference SF-AdamW kernel over equal-length g, y, z, v:
//
//	g' = g·gs
//	v  = β2·v + ((1−β2)·g')·g'
//	d  = g'/(√v·rs + ε) + λ·y
//	y  = (y + c·(z − y)) + coef·d
//	z  = z − γ·d
func sfAdamWGo(g, y, z, v []float32, k *sfScalars) {
	y, z, v = y[:len(g)], z[:len(g)], v[:len(g)]
	for i, gi := range g {
		// The explicit float32 conversions round each product, so a compiler that fuses
		// multiply-add (which the Go spec allows) cannot change the result.
		gi *= k.gs
		vi := float32(k.b2*v[i]) + float32(k.omb2*gi*gi)
		v[i] = vi
		d := gi/(float32(float32(math.Sqrt(float64(vi)))*k.rs)+k.eps) + float32(k.wd*y[i])
		yi, zi := y[i], z[i]
		y[i] = (yi + float32(k.c*(zi-yi))) + float32(k.coef*d)
		z[i] = zi - float32(k.lr*d)
	}
}

// adamScalars are the per-step constants of the AdamW kernel.
type adamScalars struct {
	decay    float32 // 1 − γ_t λ
	b1, omb1 float32 // β1, 1−β1
	b2, omb2 float32 // β2, 1−β2
	step     float32 // γ_t/(1−β1^t)
	rs       float32 // 1/√(1−β2^t)
	eps      float32
	gs       float32 // gradient scale (clipping), 1 when off
}

// adamWGo is the reference AdamW kernel over equal-length g, p, m, v:
//
//	g' = g·gs
//	m  = β1·m + (1−β1)·g'
//	v  = β2·v + ((1−β2)·g')·g'
//	p  = p·decay − (step·m)/(√v·rs + ε)
func adamWGo(g, p, m, v []float32, k *adamScalars) {
	p, m, v = p[:len(g)], m[:len(g)], v[:len(g)]
	for i, gi := range g {
		// Explicit float32 conversions round each product: no fused multiply-add.
		gi *= k.gs
		mi := float32(k.b1*m[i]) + float32(k.omb1*gi)
		vi := float32(k.b2*v[i]) + float32(k.omb2*gi*gi)
		m[i], v[i] = mi, vi
		p[i] = float32(p[i]*k.decay) - float32(k.step*mi)/(float32(float32(math.Sqrt(float64(vi)))*k.rs)+k.eps)
	}
}

// sfAdamWKernel and adamWKernel are the kernels in use: the Go loops above, or SIMD
// versions selected at start-up where the CPU supports them.
var (
	sfAdamWKernel = sfAdamWGo
	adamWKernel   = adamWGo
)

// as32 reinterprets a []T as []float32 when T is float32-sized (T is float32 or a type
// defined on it); it returns nil for float64.
func as32[T Float](s []T) []float32 {
	var zero T
	if unsafe.Sizeof(zero) != 4 || s == nil {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}
