package sfadamw

import (
	"fmt"
	"math"

	"github.com/sfsweep/sfsweep/internal/par"
)

// grain is the buffer length below which kernels run on the calling goroutine only.
const grain = 1 << 15

// averaging is the scalar state of the Schedule-Free average: the step count t, the warmup
// learning rate γ_t and the interpolation weight c_{t+1} of Algorithms 1 and 2.
type averaging struct {
	lr     float64
	beta   float64
	warmup int
	c      float64 // decoupling parameter C; 0 is vanilla

	step   int64
	sumLR2 float64 // Σ_{i≤t} max_{j≤i} γ_j²: the averaging weights so far
	maxLR  float64 // max_{i≤t} γ_i
	lastLR float64 // γ_t of the last step
	lastC  float64 // c_{t+1} of the last step
}

// advance moves to the next step t and returns γ_t and c_{t+1}. Each z_{t+1} is weighed
// by the square of the largest γ so far, as upstream's schedulefree does
// (lr_max = max(lr, lr_max), weight = lr_max**weight_lr_power with the power 2): while γ
// rises (warmup) or holds, that is γ_t² of Algorithms 1 and 2; where a caller decays γ
// (SetLR, an LR-decay branch), the iterates of the decay keep the weight of the peak, so x
// follows them instead of lagging.
func (a *averaging) advance() (gamma, c float64) {
	a.step++
	gamma = warmupLR(a.lr, a.warmup, a.step)
	a.maxLR = math.Max(a.maxLR, gamma)
	w := a.maxLR * a.maxLR
	a.sumLR2 += w
	c = w / a.sumLR2
	if a.c > 0 {
		c = math.Min(c*(1-a.beta)*a.c, 1)
	}
	a.lastLR, a.lastC = gamma, c
	return gamma, c
}

// iterates holds the Schedule-Free iterates over a flat buffer. y is the caller's parameter
// slice. z is stored when β > 0 (where β = 0, z = y). x is stored when it cannot be
// recovered from y and z (β = 0) or when asked for; otherwise x = (y − (1−β)z)/β.
type iterates[T Float] struct {
	avg  averaging
	y    []T
	z    []T
	x    []T
	pool *par.Pool

	// per-step scalars read by the kernels
	kc, klr, kcoef T
	kdelta         []T
	kEWA           *EWA[T]
	ewaKernel      func(lo, hi int)
	updateKernel   func(lo, hi int)
}

func (s *iterates[T]) init(cfg SFConfig, params []T) {
	s.avg = averaging{lr: cfg.LR, beta: cfg.Beta, warmup: cfg.WarmupSteps, c: cfg.C}
	s.y = params
	if cfg.Beta > 0 {
		s.z = append([]T(nil), params...)
	}
	if cfg.Beta == 0 || cfg.KeepX {
		s.x = append([]T(nil), params...)
	}
	s.pool = par.Default()
	s.ewaKernel = s.ewaRange
	s.updateKernel = s.updateRange
}

// setStep stores γ_t and c_{t+1} for the kernels: y moves by c(z − y) + γ(β(1−c) − 1)Δ.
func (s *iterates[T]) setStep(gamma, c float64) {
	s.kc = T(c)
	s.klr = T(gamma)
	s.kcoef = T(gamma * (s.avg.beta*(1-c) - 1))
}

// update applies one step of the Schedule-Free recursion for the direction Δ_t.
func (s *iterates[T]) update(delta []T) {
	checkLen("direction", len(delta), len(s.y))
	s.setStep(s.avg.advance())
	s.kdelta = delta
	s.pool.For(len(s.y), grain, s.updateKernel)
	s.kdelta = nil
}

func (s *iterates[T]) updateRange(lo, hi int) {
	y, d := s.y[lo:hi], s.kdelta[lo:hi]
	if s.z != nil {
		z := s.z[lo:hi]
		for i := range y {
			y[i], z[i] = sfMove(y[i], z[i], d[i], s.kc, s.klr, s.kcoef)
		}
		if s.x != nil {
			s.mixX(s.x[lo:hi], z)
		}
		return
	}
	for i := range y { // β = 0: y = z
		y[i] -= s.klr * d[i]
	}
	s.mixX(s.x[lo:hi], y)
}

// mixX applies x_{t+1} = (1 − c_{t+1}) x_t + c_{t+1} z_{t+1}.
func (s *iterates[T]) mixX(x, z []T) {
	c := s.kc
	for i := range x {
		x[i] = (1-c)*x[i] + c*z[i]
	}
}

// sfMove is one element of the y-form Schedule-Free step: it returns y_{t+1} and z_{t+1}
// given y_t, z_t, Δ_t, c = c_{t+1}, lr = γ_t and coef = γ_t(β(1−c) − 1).
func sfMove[T Float](y, z, d, c, lr, coef T) (T, T) {
	return y + c*(z-y) + coef*d, z - lr*d
}

// X writes the averaged iterate x_t, where the paper evaluates the model, into dst.
func (s *iterates[T]) X(dst []T) {
	checkLen("x destination", len(dst), len(s.y))
	if s.x != nil {
		copy(dst, s.x)
		return
	}
	b := T(s.avg.beta)
	omb := 1 - b
	for i := range dst {
		dst[i] = (s.y[i] - omb*s.z[i]) / b
	}
}

// Y returns the parameter slice, which holds y_t, the point where gradients are taken.
func (s *iterates[T]) Y() []T { return s.y }

// Z returns z_t (read-only). Where β = 0, z = y and this is the parameter slice.
func (s *iterates[T]) Z() []T {
	if s.z == nil {
		return s.y
	}
	return s.z
}

// Steps returns the number of steps taken.
func (s *iterates[T]) Steps() int { return int(s.avg.step) }

// LastLR returns γ_t of the last step.
func (s *iterates[T]) LastLR() float64 { return s.avg.lastLR }

// SetLR sets γ, the learning rate of the steps that follow (warmup still scales it before
// T_warmup), for a caller that drives its own schedule, as the LR-decay branch of a
// constant-LR run does. Each step's c_{t+1} weighs z_{t+1} by the largest γ so far
// (advance), not by the decayed γ_t it took.
func (s *iterates[T]) SetLR(lr float64) { s.avg.lr = lr }

// LastC returns c_{t+1} of the last step, the weight of z_{t+1} in x_{t+1}.
func (s *iterates[T]) LastC() float64 { return s.avg.lastC }

// UpdateEWAX folds the current x into the exponential average e without materialising x.
func (s *iterates[T]) UpdateEWAX(e *EWA[T]) {
	checkLen("EWA", len(e.vals), len(s.y))
	if s.x != nil {
		e.Update(s.x)
		return
	}
	if e.updates == 0 {
		s.X(e.vals)
		e.updates = 1
		return
	}
	e.updates++
	s.kEWA = e
	s.pool.For(len(s.y), grain, s.ewaKernel)
	s.kEWA = nil
}

func (s *iterates[T]) ewaRange(lo, hi int) {
	e := s.kEWA
	d, omd := e.decay, 1-e.decay
	b := T(s.avg.beta)
	omb := 1 - b
	v, y, z := e.vals[lo:hi], s.y[lo:hi], s.z[lo:hi]
	for i := range v {
		v[i] = d*v[i] + omd*((y[i]-omb*z[i])/b)
	}
}

func (s *iterates[T]) exportScalars(st *State[T]) {
	st.Step = s.avg.step
	st.SumLR2, st.MaxLR, st.LastLR, st.LastC = s.avg.sumLR2, s.avg.maxLR, s.avg.lastLR, s.avg.lastC
}

func (s *iterates[T]) importScalars(st State[T]) {
	s.avg.step = st.Step
	s.avg.sumLR2, s.avg.maxLR, s.avg.lastLR, s.avg.lastC = st.SumLR2, st.MaxLR, st.LastLR, st.LastC
}

// vectors lists the stored iterate vectors for State: z and x where kept.
func (s *iterates[T]) vectors() []Vector[T] {
	var vs []Vector[T]
	if s.z != nil {
		vs = append(vs, Vector[T]{Name: "z", Data: s.z})
	}
	if s.x != nil {
		vs = append(vs, Vector[T]{Name: "x", Data: s.x})
	}
	return vs
}

func checkLen(what string, got, want int) {
	if got != want {
		panic(fmt.Sprintf("sfadamw: %s has length %d, want %d", what, got, want))
	}
}
