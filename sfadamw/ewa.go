package sfadamw

import (
	"math"
	"slices"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/internal/par"
)

// DefaultEWADecay is the decay of the exponential weight averages in the paper (0.99).
const DefaultEWADecay = 0.99

// EWA is an exponential weight average of an iterate: e ← d·e + (1−d)·w, started at the
// first iterate it sees. Trackers are opt-in, one per iterate: EWA(x) through
// SFAdamW.UpdateEWAX, EWA(y) or of AdamW's weights through Update.
type EWA[T Float] struct {
	decay   T
	vals    []T
	updates int64
	pool    *par.Pool
	src     []T
	kernel  func(lo, hi int)
}

// NewEWA returns an exponential average over n values with the given decay in [0, 1).
func NewEWA[T Float](n int, decay float64) (*EWA[T], error) {
	if math.IsNaN(decay) || decay < 0 || decay >= 1 {
		return nil, &fielderr.Error{Field: "ewa_decay", Value: decay, Reason: "must be in [0, 1)"}
	}
	if n < 0 {
		return nil, &fielderr.Error{Field: "ewa_size", Value: n, Reason: "must be ≥ 0"}
	}
	e := &EWA[T]{decay: T(decay), vals: make([]T, n), pool: par.Default()}
	e.kernel = e.updateRange
	return e, nil
}

// Update folds w into the average; the first update copies w.
func (e *EWA[T]) Update(w []T) {
	checkLen("EWA source", len(w), len(e.vals))
	e.updates++
	if e.updates == 1 {
		copy(e.vals, w)
		return
	}
	e.src = w
	e.pool.For(len(w), grain, e.kernel)
	e.src = nil
}

func (e *EWA[T]) updateRange(lo, hi int) {
	d, omd := e.decay, 1-e.decay
	v, w := e.vals[lo:hi], e.src[lo:hi]
	for i := range v {
		v[i] = d*v[i] + omd*w[i]
	}
}

// Values returns the average (read-only).
func (e *EWA[T]) Values() []T { return e.vals }

// Updates returns the number of iterates folded in.
func (e *EWA[T]) Updates() int64 { return e.updates }

// State returns a deep copy of the average and its update count.
func (e *EWA[T]) State() State[T] {
	return State[T]{Algorithm: "ewa", Step: e.updates, Vectors: []Vector[T]{{Name: "ewa", Data: slices.Clone(e.vals)}}}
}

// Restore replaces the average with st, which must come from an EWA of the same length.
func (e *EWA[T]) Restore(st State[T]) error {
	if err := restoreVectors("ewa", st, []Vector[T]{{Name: "ewa", Data: e.vals}}); err != nil {
		return err
	}
	e.updates = st.Step
	return nil
}
