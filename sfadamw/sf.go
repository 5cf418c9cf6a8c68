package sfadamw

import (
	"fmt"

	"github.com/sfsweep/sfsweep/fielderr"
)

// SF is the generic Schedule-Free recursion (eq. SF of the paper, indexed as Algorithm 1)
// with a caller-supplied direction Δ_t:
//
//	z_{t+1} = z_t − γ_t Δ_t
//	x_{t+1} = (1 − c_{t+1}) x_t + c_{t+1} z_{t+1},  c_{t+1} = γ_t² / Σ_{i≤t} γ_i²  (refined: min{c·(1−β)C, 1})
//	y_{t+1} = (1 − β) z_{t+1} + β x_{t+1}
//
// It serves optimizers whose direction is not AdamW's, such as SF-ScalarAdam in the
// central-flow analysis.
type SF[T Float] struct {
	iterates[T]
}

// NewSF returns the Schedule-Free recursion over params, which hold y and are updated in
// place; x_1 = z_1 = y_1 = params.
func NewSF[T Float](cfg SFConfig, params []T) (*SF[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &SF[T]{}
	s.init(cfg, params)
	return s, nil
}

// Update takes one step with direction Δ_t (computed at y_t, the current params).
func (s *SF[T]) Update(delta []T) { s.update(delta) }

// State returns a deep copy of the full state (the parameters y excluded).
func (s *SF[T]) State() State[T] {
	st := State[T]{Algorithm: "sf"}
	s.exportScalars(&st)
	st.Vectors = copyVectors(s.vectors())
	return st
}

// Restore replaces the state with st, which must come from an SF over a buffer of the same
// length and configuration. The parameters y are restored by the caller.
func (s *SF[T]) Restore(st State[T]) error {
	if err := restoreVectors("sf", st, s.vectors()); err != nil {
		return err
	}
	s.importScalars(st)
	return nil
}

// SGD is SF-SGD / SF-GD (Δ_t = ∇f(y_t)) and, with weight decay and a fixed diagonal
// preconditioner P, SF-PrecondGDW (Δ_t = P⁻¹∇f(y_t) + λ y_t) of the paper's stability
// analysis (Propositions 4.1 and 4.2).
type SGD[T Float] struct {
	iterates[T]
	wd      T
	pinv    []T // 1/P, nil for P = I
	delta   []T
	kgrad   []T
	dKernel func(lo, hi int)
}

// NewSGD returns SF-SGD over params, which hold y and are updated in place.
func NewSGD[T Float](cfg SGDConfig, params []T) (*SGD[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Precond != nil && len(cfg.Precond) != len(params) {
		return nil, &fielderr.Error{Field: "precond", Value: len(cfg.Precond), Reason: fmt.Sprintf("must have one entry per parameter (%d)", len(params))}
	}
	o := &SGD[T]{wd: T(cfg.WeightDecay), delta: make([]T, len(params))}
	o.init(cfg.SFConfig, params)
	if cfg.Precond != nil {
		o.pinv = make([]T, len(params))
		for i, p := range cfg.Precond {
			o.pinv[i] = T(1 / p)
		}
	}
	o.dKernel = o.directionRange
	return o, nil
}

// Step takes one step with the gradient ∇f(y_t) taken at the current params.
func (o *SGD[T]) Step(grad []T) {
	checkLen("gradient", len(grad), len(o.y))
	o.kgrad = grad
	o.pool.For(len(grad), grain, o.dKernel)
	o.kgrad = nil
	o.update(o.delta)
}

func (o *SGD[T]) directionRange(lo, hi int) {
	g, y, d := o.kgrad[lo:hi], o.y[lo:hi], o.delta[lo:hi]
	if o.pinv == nil {
		for i := range d {
			d[i] = g[i] + o.wd*y[i]
		}
		return
	}
	p := o.pinv[lo:hi]
	for i := range d {
		d[i] = p[i]*g[i] + o.wd*y[i]
	}
}

// State returns a deep copy of the full state (the parameters y excluded).
func (o *SGD[T]) State() State[T] {
	st := State[T]{Algorithm: "sf-sgd"}
	o.exportScalars(&st)
	st.Vectors = copyVectors(o.vectors())
	return st
}

// Restore replaces the state with st, which must come from an SGD of the same shape.
func (o *SGD[T]) Restore(st State[T]) error {
	if err := restoreVectors("sf-sgd", st, o.vectors()); err != nil {
		return err
	}
	o.importScalars(st)
	return nil
}
