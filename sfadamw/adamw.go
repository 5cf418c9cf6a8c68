package sfadamw

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/internal/par"
)

// AdamW is AdamW with decoupled weight decay, as torch.optim.AdamW, with a learning-rate
// schedule and optional global gradient-norm clipping.
type AdamW[T Float] struct {
	cfg  AdamWConfig
	p    []T
	m, v []T
	step int64
	lr   float64
	pool *par.Pool
	clipper[T]

	kgrad                          []T
	kdecay, kb1, komb1, kb2, komb2 T
	kstep, krsb2, keps, kgs        T
	kernel                         func(lo, hi int)
	k32, k32nd                     adamScalars // k32nd: without weight decay
}

// NewAdamW returns AdamW over params, updated in place; m_0 = v_0 = 0.
func NewAdamW[T Float](cfg AdamWConfig, params []T) (*AdamW[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if n := len(cfg.Decayed); n > 0 && cfg.Decayed[n-1].Hi > len(params) {
		return nil, &fielderr.Error{Field: "decayed", Value: cfg.Decayed[n-1].Hi, Reason: fmt.Sprintf("ends beyond the %d parameters", len(params))}
	}
	o := &AdamW[T]{cfg: cfg, p: params, m: make([]T, len(params)), v: make([]T, len(params)), pool: par.Default()}
	o.clipper = clipper[T]{maxNorm: cfg.GradClip}
	o.normer.init(o.pool, len(params))
	o.kernel = o.stepRange
	return o, nil
}

// Config returns the configuration the optimizer was made with.
func (o *AdamW[T]) Config() AdamWConfig { return o.cfg }

// Step takes one step with the gradient at the current params.
func (o *AdamW[T]) Step(grad []T) {
	checkLen("gradient", len(grad), len(o.p))
	gs := o.scale(grad)
	o.step++
	t := float64(o.step)
	o.lr = o.cfg.Schedule.At(int(o.step))
	b1, b2 := o.cfg.Beta1, o.cfg.Beta2
	o.kdecay = T(1 - o.lr*o.cfg.WeightDecay)
	o.kb1, o.komb1, o.kb2, o.komb2 = T(b1), T(1-b1), T(b2), T(1-b2)
	o.kstep = T(o.lr / (1 - math.Pow(b1, t)))
	o.krsb2 = T(1 / math.Sqrt(1-math.Pow(b2, t)))
	o.keps, o.kgs = T(o.cfg.Eps), T(gs)
	o.k32 = adamScalars{decay: float32(o.kdecay), b1: float32(o.kb1), omb1: float32(o.komb1), b2: float32(o.kb2),
		omb2: float32(o.komb2), step: float32(o.kstep), rs: float32(o.krsb2), eps: float32(o.keps), gs: float32(o.kgs)}
	o.k32nd = o.k32
	o.k32nd.decay = 1
	o.kgrad = grad
	o.pool.For(len(grad), grain, o.kernel)
	o.kgrad = nil
}

// stepRange: p ← p(1−γλ); m ← β1m + (1−β1)g; v ← β2v + (1−β2)g²;
// p ← p − γ/(1−β1^t) · m/(√v/√(1−β2^t) + ε).
// Each run of [lo, hi) decays or not as Config.Decayed says (p·1 = p exactly).
func (o *AdamW[T]) stepRange(lo, hi int) { ForDecay(o.cfg.Decayed, lo, hi, o.stepSpan) }

func (o *AdamW[T]) stepSpan(lo, hi int, decayed bool) {
	g := o.kgrad[lo:hi]
	p, m, v := o.p[lo:hi], o.m[lo:hi], o.v[lo:hi]
	k32, decay := &o.k32, o.kdecay
	if !decayed {
		k32, decay = &o.k32nd, 1
	}
	if g32 := as32(g); g32 != nil {
		adamWKernel(g32, as32(p), as32(m), as32(v), k32)
		return
	}
	p, m, v = p[:len(g)], m[:len(g)], v[:len(g)]
	b1, omb1, b2, omb2 := o.kb1, o.komb1, o.kb2, o.komb2
	step, rs, eps, gs := o.kstep, o.krsb2, o.keps, o.kgs
	for i, gi := range g {
		gi *= gs
		mi := b1*m[i] + omb1*gi
		vi := b2*v[i] + omb2*gi*gi
		m[i], v[i] = mi, vi
		p[i] = p[i]*decay - step*mi/(T(math.Sqrt(float64(vi)))*rs+eps)
	}
}

// Steps returns the number of steps taken.
func (o *AdamW[T]) Steps() int { return int(o.step) }

// LastLR returns γ_t of the last step.
func (o *AdamW[T]) LastLR() float64 { return o.lr }

// StateBytesPerParam is the optimizer state held per parameter, in bytes: m and v.
func (o *AdamW[T]) StateBytesPerParam() int {
	var zero T
	return 2 * int(unsafe.Sizeof(zero))
}

// State returns a deep copy of the full state (the parameters excluded).
func (o *AdamW[T]) State() State[T] {
	return State[T]{Algorithm: "adamw", Step: o.step, LastLR: o.lr, MaxLR: o.cfg.Schedule.Peak,
		Vectors: copyVectors(o.stateVectors())}
}

// Restore replaces the state with st, which must come from an AdamW over a buffer of the
// same length. The parameters are restored by the caller.
func (o *AdamW[T]) Restore(st State[T]) error {
	if err := restoreVectors("adamw", st, o.stateVectors()); err != nil {
		return err
	}
	o.step, o.lr = st.Step, st.LastLR
	return nil
}

func (o *AdamW[T]) stateVectors() []Vector[T] {
	return []Vector[T]{{Name: "m", Data: o.m}, {Name: "v", Data: o.v}}
}
