package sfadamw

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/sfsweep/sfsweep/fielderr"
)

// SFAdamW is Schedule-Free AdamW: Algorithm 1 of the paper, or Algorithm 2 (refined
// SF-AdamW) when Config.C > 0. The parameters hold y; the state is z and v (see the
// package documentation for the memory layout).
type SFAdamW[T Float] struct {
	iterates[T]
	cfg Config
	v   []T
	clipper[T]

	// per-step scalars read by the kernel
	kgrad                   []T
	kb2, komb2, krsb2, keps T
	kwd, kgs                T
	kernel                  func(lo, hi int)
	k32, k32nd              sfScalars // k32nd: without weight decay
}

// New returns SF-AdamW over params, which hold y and are updated in place. At
// construction x_1 = z_1 = y_1 = params and v_0 = 0.
func New[T Float](cfg Config, params []T) (*SFAdamW[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if n := len(cfg.Decayed); n > 0 && cfg.Decayed[n-1].Hi > len(params) {
		return nil, &fielderr.Error{Field: "decayed", Value: cfg.Decayed[n-1].Hi, Reason: fmt.Sprintf("ends beyond the %d parameters", len(params))}
	}
	o := &SFAdamW[T]{cfg: cfg, v: make([]T, len(params))}
	o.init(SFConfig{LR: cfg.LR, Beta: cfg.Beta1, WarmupSteps: cfg.WarmupSteps, C: cfg.C, KeepX: cfg.KeepX}, params)
	o.clipper = clipper[T]{maxNorm: cfg.GradClip}
	o.normer.init(o.pool, len(params))
	o.kernel = o.stepRange
	return o, nil
}

// Config returns the configuration the optimizer was made with.
func (o *SFAdamW[T]) Config() Config { return o.cfg }

// Step takes one step with the gradient g_t = ∇f(y_t) taken at the current params, which
// become y_{t+1}.
func (o *SFAdamW[T]) Step(grad []T) {
	checkLen("gradient", len(grad), len(o.y))
	gs := o.scale(grad)
	gamma, c := o.avg.advance()
	o.setStep(gamma, c)
	b2 := o.cfg.Beta2
	o.kb2, o.komb2 = T(b2), T(1-b2)
	o.krsb2 = T(1 / math.Sqrt(1-math.Pow(b2, float64(o.avg.step)))) // √v̂ = √v / √(1−β2^t)
	o.keps, o.kwd, o.kgs = T(o.cfg.Eps), T(o.cfg.WeightDecay), T(gs)
	o.k32 = sfScalars{b2: float32(o.kb2), omb2: float32(o.komb2), rs: float32(o.krsb2), eps: float32(o.keps),
		wd: float32(o.kwd), gs: float32(o.kgs), c: float32(o.kc), lr: float32(o.klr), coef: float32(o.kcoef)}
	o.k32nd = o.k32
	o.k32nd.wd = 0
	o.kgrad = grad
	o.pool.For(len(grad), grain, o.kernel)
	o.kgrad = nil
}

// stepRange runs the kernel over [lo, hi), each run with weight decay or without as
// Config.Decayed says.
func (o *SFAdamW[T]) stepRange(lo, hi int) { ForDecay(o.cfg.Decayed, lo, hi, o.stepSpan) }

// stepSpan is the fused kernel: second moment, direction Δ = g/(√v̂+ε) + λy (λ = 0 where
// decay is off), then the Schedule-Free move of y and z (and of x where it is stored).
func (o *SFAdamW[T]) stepSpan(lo, hi int, decay bool) {
	g, v, y := o.kgrad[lo:hi], o.v[lo:hi], o.y[lo:hi]
	b2, omb2, rs, eps, wd, gs := o.kb2, o.komb2, o.krsb2, o.keps, o.kwd, o.kgs
	c, lr, coef := o.kc, o.klr, o.kcoef
	k32 := &o.k32
	if !decay {
		wd, k32 = 0, &o.k32nd
	}
	if o.z != nil && o.x == nil { // the common case, kept free of branches
		if g32 := as32(g); g32 != nil {
			sfAdamWKernel(g32, as32(y), as32(o.z[lo:hi]), as32(v), k32)
			return
		}
		z := o.z[lo:hi]
		z = z[:len(g)]
		v = v[:len(g)]
		y = y[:len(g)]
		for i, gi := range g {
			gi *= gs
			vi := b2*v[i] + omb2*gi*gi
			v[i] = vi
			d := gi/(T(math.Sqrt(float64(vi)))*rs+eps) + wd*y[i]
			y[i], z[i] = sfMove(y[i], z[i], d, c, lr, coef)
		}
		return
	}
	x := o.x[lo:hi] // the general case stores x
	for i, gi := range g {
		gi *= gs
		vi := b2*v[i] + omb2*gi*gi
		v[i] = vi
		d := gi/(T(math.Sqrt(float64(vi)))*rs+eps) + wd*y[i]
		var zn T
		if o.z != nil {
			y[i], o.z[lo+i] = sfMove(y[i], o.z[lo+i], d, c, lr, coef)
			zn = o.z[lo+i]
		} else { // β1 = 0: y = z
			y[i] -= lr * d
			zn = y[i]
		}
		x[i] = (1-c)*x[i] + c*zn
	}
}

// Precond writes the diagonal preconditioner of the last step, √v̂_t + ε, into dst: the P of
// the preconditioned sharpness λ1(P⁻¹H) that governs stability (Proposition 4.2).
func (o *SFAdamW[T]) Precond(dst []T) {
	checkLen("precond destination", len(dst), len(o.v))
	bc := 1 - math.Pow(o.cfg.Beta2, float64(o.avg.step))
	for i, vi := range o.v {
		if bc == 0 {
			dst[i] = T(o.cfg.Eps)
			continue
		}
		dst[i] = T(math.Sqrt(float64(vi)/bc) + o.cfg.Eps)
	}
}

// StateBytesPerParam is the optimizer state held per parameter, in bytes, beyond the
// parameters themselves: z and v (as AdamW's m and v), plus x where it is stored.
func (o *SFAdamW[T]) StateBytesPerParam() int {
	var zero T
	size := int(unsafe.Sizeof(zero))
	n := 1 // v
	if o.z != nil {
		n++
	}
	if o.x != nil {
		n++
	}
	return n * size
}

// State returns a deep copy of the full state (the parameters y excluded).
func (o *SFAdamW[T]) State() State[T] {
	st := State[T]{Algorithm: "sfadamw"}
	o.exportScalars(&st)
	st.Vectors = copyVectors(o.stateVectors())
	return st
}

// Restore replaces the state with st, which must come from an SFAdamW over a buffer of the
// same length and layout. The parameters y are restored by the caller.
func (o *SFAdamW[T]) Restore(st State[T]) error {
	if err := restoreVectors("sfadamw", st, o.stateVectors()); err != nil {
		return err
	}
	o.importScalars(st)
	return nil
}

func (o *SFAdamW[T]) stateVectors() []Vector[T] {
	return append(o.vectors(), Vector[T]{Name: "v", Data: o.v})
}
