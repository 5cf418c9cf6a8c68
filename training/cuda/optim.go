//go:build cuda

package cuda

import (
	"fmt"
	"math"

	"gorgonia.org/cu"

	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training/backend"
)

// normChunk is the chunk of sfadamw's gradient-norm reduction: partial sums of squares per
// chunk of 1<<14 elements, added in chunk order in float64, so the norm (and the clipping
// scale) are bitwise those of the CPU.
const normChunk = 1 << 14

// optimizer is what both device optimizers share: the engine, the gradient-norm scratch
// and the exponential averages.
type optimizer struct {
	e        *Engine
	gradClip float64
	part     cu.DevicePtr // (chunks) float64
	partHost []float64
	lastNorm float64
	averages
}

// averages are the exponential averages of the iterates a device optimizer keeps for the
// training loop (backend.Averager): vals[i] has folded in updates[i] iterates.
type averages struct {
	decay, omd float32 // d and 1 − d, rounded to float32 as sfadamw.EWA rounds them
	vals       []cu.DevicePtr
	updates    []int64
}

var (
	_ backend.Averager   = (*SFAdamW)(nil)
	_ backend.Averager   = (*AdamW)(nil)
	_ backend.DeviceLoop = (*Engine)(nil)
)

// ScaleGrads multiplies every gradient by s, as the training loop averages the gradients
// of accumulated micro-batches.
func (e *Engine) ScaleGrads(s float32) error {
	if e.closed {
		return errClosed
	}
	unlock := e.st.lock()
	defer unlock()
	defer e.call(PhaseUpdate, Optimizer, false)()
	n := e.layout.Size
	return e.st.launch("scale", lin(n), blk, e.grads, s, int64(n))
}

// startAverages allocates count averages with the given decay.
func (o *optimizer) startAverages(decay float64, count int) error {
	if math.IsNaN(decay) || decay < 0 || decay >= 1 {
		return fmt.Errorf("cuda: ewa_decay = %v: must be in [0, 1)", decay)
	}
	if o.e.closed {
		return errClosed
	}
	unlock := o.e.st.lock()
	defer unlock()
	d := float32(decay)
	o.averages = averages{decay: d, omd: 1 - d, vals: make([]cu.DevicePtr, count), updates: make([]int64, count)}
	for i := range o.vals {
		var err error
		if o.vals[i], err = o.e.mk(o.e.layout.Size); err != nil {
			return o.e.oom(err)
		}
	}
	return nil
}

// fold folds the float32 vector w into average i, as sfadamw.EWA.Update does: the first
// update copies w.
func (o *optimizer) fold(i int, w cu.DevicePtr) error {
	n := o.e.layout.Size
	o.updates[i]++
	if o.updates[i] == 1 {
		return o.e.st.dtod(o.vals[i], w, n)
	}
	return o.e.st.launch("ewa_update", lin(n), blk, o.vals[i], w, o.decay, o.omd, int64(n))
}

// Averages returns copies of the averages in sfadamw.EWA's State format.
func (o *optimizer) Averages() ([]sfadamw.State[float32], error) {
	if o.e.closed {
		return nil, errClosed
	}
	unlock := o.e.st.lock()
	defer unlock()
	sts := make([]sfadamw.State[float32], len(o.vals))
	for i, p := range o.vals {
		v := make([]float32, o.e.layout.Size)
		if err := dtoh(o.e.st, v, p); err != nil {
			return nil, err
		}
		sts[i] = sfadamw.State[float32]{Algorithm: "ewa", Step: o.updates[i], Vectors: []sfadamw.Vector[float32]{{Name: "ewa", Data: v}}}
	}
	return sts, nil
}

// RestoreAverages replaces the averages with sts, in sfadamw.EWA's State format.
func (o *optimizer) RestoreAverages(sts []sfadamw.State[float32]) error {
	if len(sts) != len(o.vals) {
		return fmt.Errorf("cuda: restore averages: %d states, want %d", len(sts), len(o.vals))
	}
	for _, st := range sts {
		if err := checkState("ewa", st, []string{"ewa"}, o.e.layout.Size); err != nil {
			return err
		}
	}
	if o.e.closed {
		return errClosed
	}
	unlock := o.e.st.lock()
	defer unlock()
	for i, st := range sts {
		if err := htod(o.e.st, o.vals[i], st.Vectors[0].Data); err != nil {
			return err
		}
		o.updates[i] = st.Step
	}
	return nil
}

func (e *Engine) newOptimizer(gradClip float64, state int) (optimizer, []cu.DevicePtr, error) {
	if e.closed {
		return optimizer{}, nil, errClosed
	}
	o := optimizer{e: e, gradClip: gradClip, partHost: make([]float64, blocks(e.layout.Size, normChunk))}
	var err error
	if o.part, err = e.mk(len(o.partHost), 8); err != nil {
		return optimizer{}, nil, err
	}
	vecs := make([]cu.DevicePtr, state)
	for i := range vecs {
		if vecs[i], err = e.mk(e.layout.Size); err != nil {
			return optimizer{}, nil, err
		}
		if err = e.st.zero(vecs[i], e.layout.Size); err != nil {
			return optimizer{}, nil, err
		}
	}
	return o, vecs, nil
}

// scale returns the factor the gradient is multiplied by: min(1, clip/(‖g‖ + 1e-6)) as
// torch.nn.utils.clip_grad_norm_, or 1 when clipping is off.
func (o *optimizer) scale() (float64, error) {
	if o.gradClip <= 0 {
		return 1, nil
	}
	n := o.e.layout.Size
	chunks := len(o.partHost)
	if err := o.e.st.launch("sumsq_chunks", dim{x: blocks(chunks, 128)}, dim{x: 128}, o.part, o.e.grads, int64(n), normChunk); err != nil {
		return 0, err
	}
	if err := dtoh(o.e.st, o.partHost, o.part); err != nil {
		return 0, err
	}
	var s float64
	for _, p := range o.partHost {
		s += p
	}
	o.lastNorm = math.Sqrt(s)
	return math.Min(1, o.gradClip/(o.lastNorm+1e-6)), nil
}

// GradNorm returns the global gradient norm of the last step (before clipping) when
// clipping is on, 0 otherwise.
func (o *optimizer) GradNorm() float64 { return o.lastNorm }

// SFAdamW is sfadamw.SFAdamW (Algorithm 1, or Algorithm 2 when C > 0) over the engine's
// parameters y, with z and v in device memory. KeepX and β1 = 0 are not supported.
type SFAdamW struct {
	optimizer
	cfg  sfadamw.Config
	z, v cu.DevicePtr

	step                         int64
	sumLR2, maxLR, lastLR, lastC float64
}

// NewSFAdamW returns SF-AdamW over the engine's parameters, which hold y and are updated in
// place on the device; as in sfadamw.New, z starts at the current parameters and v at 0.
func (e *Engine) NewSFAdamW(cfg sfadamw.Config) (backend.Optimizer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("cuda: sfadamw: %w", err)
	}
	if cfg.KeepX {
		return nil, fmt.Errorf("cuda: sfadamw: keep_x = true: not supported by the cuda backend")
	}
	if cfg.Beta1 == 0 {
		return nil, fmt.Errorf("cuda: sfadamw: beta1 = 0: not supported by the cuda backend (it stores x)")
	}
	unlock := e.st.lock()
	defer unlock()
	o, vecs, err := e.newOptimizer(cfg.GradClip, optimizerVectors)
	if err != nil {
		return nil, e.oom(err)
	}
	s := &SFAdamW{optimizer: o, cfg: cfg, z: vecs[0], v: vecs[1]}
	if err := e.st.dtod(s.z, e.params, e.layout.Size); err != nil {
		return nil, err
	}
	return s, nil
}

// Step takes one step with the gradient held by the engine, taken at the current
// parameters y_t, which become y_{t+1}.
func (s *SFAdamW) Step() error {
	if s.e.closed {
		return errClosed
	}
	unlock := s.e.st.lock()
	defer unlock()
	defer s.e.call(PhaseUpdate, Optimizer, true)()
	gs, err := s.scale()
	if err != nil {
		return fmt.Errorf("cuda: sfadamw step: %w", err)
	}
	// the scalars of sfadamw's averaging.advance and SFAdamW.Step, in the same float64
	// arithmetic, rounded to float32 the same way
	s.step++
	gamma := s.cfg.LR
	if s.cfg.WarmupSteps > 0 && s.step < int64(s.cfg.WarmupSteps) {
		gamma = s.cfg.LR * float64(s.step) / float64(s.cfg.WarmupSteps)
	}
	s.maxLR = math.Max(s.maxLR, gamma)
	w := s.maxLR * s.maxLR // upstream's weight: the largest LR so far, squared
	s.sumLR2 += w
	c := w / s.sumLR2
	if s.cfg.C > 0 {
		c = math.Min(c*(1-s.cfg.Beta1)*s.cfg.C, 1)
	}
	s.lastLR, s.lastC = gamma, c
	b2 := s.cfg.Beta2
	rs := 1 / math.Sqrt(1-math.Pow(b2, float64(s.step)))
	n := s.e.layout.Size
	s.e.bf.stale = true
	// one launch per run of the buffer that weight decay applies to, or not
	sfadamw.ForDecay(s.cfg.Decayed, 0, n, func(lo, hi int, decay bool) {
		wd := float32(s.cfg.WeightDecay)
		if !decay {
			wd = 0
		}
		if err == nil {
			err = s.e.st.launch("sfadamw_step", lin(hi-lo), blk, off(s.e.grads, lo), off(s.e.params, lo), off(s.z, lo), off(s.v, lo), int64(hi-lo),
				float32(b2), float32(1-b2), float32(rs), float32(s.cfg.Eps), wd, float32(gs),
				float32(c), float32(gamma), float32(gamma*(s.cfg.Beta1*(1-c)-1)))
		}
	})
	if err != nil {
		return fmt.Errorf("cuda: sfadamw step: %w", err)
	}
	return nil
}

// State returns a copy of the state in sfadamw's format (the parameters excluded).
func (s *SFAdamW) State() sfadamw.State[float32] {
	st := sfadamw.State[float32]{Algorithm: "sfadamw", Step: s.step, SumLR2: s.sumLR2, MaxLR: s.maxLR, LastLR: s.lastLR, LastC: s.lastC}
	z, v := make([]float32, s.e.layout.Size), make([]float32, s.e.layout.Size)
	if !s.e.closed {
		unlock := s.e.st.lock()
		// A failed copy leaves NaNs, which no checkpoint accepts silently.
		if dtoh(s.e.st, z, s.z) != nil || dtoh(s.e.st, v, s.v) != nil {
			for i := range z {
				z[i], v[i] = float32(math.NaN()), float32(math.NaN())
			}
		}
		unlock()
	}
	st.Vectors = []sfadamw.Vector[float32]{{Name: "z", Data: z}, {Name: "v", Data: v}}
	return st
}

// Restore replaces the state with st, from an SF-AdamW (on any backend) over a buffer of
// the same layout. The parameters y are restored by the caller.
func (s *SFAdamW) Restore(st sfadamw.State[float32]) error {
	if err := checkState("sfadamw", st, []string{"z", "v"}, s.e.layout.Size); err != nil {
		return err
	}
	if s.e.closed {
		return errClosed
	}
	unlock := s.e.st.lock()
	defer unlock()
	if err := htod(s.e.st, s.z, st.Vectors[0].Data); err != nil {
		return err
	}
	if err := htod(s.e.st, s.v, st.Vectors[1].Data); err != nil {
		return err
	}
	s.step, s.sumLR2, s.maxLR, s.lastLR, s.lastC = st.Step, st.SumLR2, st.MaxLR, st.LastLR, st.LastC
	return nil
}

// Steps returns the number of steps taken.
func (s *SFAdamW) Steps() int { return int(s.step) }

// StartAverages makes EWA(x) and EWA(y), empty, with the given decay.
func (s *SFAdamW) StartAverages(decay float64) error { return s.startAverages(decay, 2) }

// UpdateAverages folds x into EWA(x) without storing x, as sfadamw's UpdateEWAX does, and
// y into EWA(y).
func (s *SFAdamW) UpdateAverages() error {
	if len(s.vals) != 2 {
		return fmt.Errorf("cuda: sfadamw: UpdateAverages before StartAverages")
	}
	if s.e.closed {
		return errClosed
	}
	unlock := s.e.st.lock()
	defer unlock()
	defer s.e.call(PhaseUpdate, Optimizer, false)()
	n := s.e.layout.Size
	b := float32(s.cfg.Beta1)
	omb := 1 - b
	s.updates[0]++
	var err error
	if s.updates[0] == 1 {
		err = s.e.st.launch("sf_x", lin(n), blk, s.vals[0], s.e.params, s.z, b, omb, int64(n))
	} else {
		err = s.e.st.launch("ewa_update_x", lin(n), blk, s.vals[0], s.e.params, s.z, s.decay, s.omd, b, omb, int64(n))
	}
	if err != nil {
		return err
	}
	return s.fold(1, s.e.params)
}

func checkState(algorithm string, st sfadamw.State[float32], names []string, size int) error {
	if st.Algorithm != algorithm {
		return fmt.Errorf("cuda: restore %s: state is from %q", algorithm, st.Algorithm)
	}
	if st.Step < 0 {
		return fmt.Errorf("cuda: restore %s: step = %d: must be ≥ 0", algorithm, st.Step)
	}
	if len(st.Vectors) != len(names) {
		return fmt.Errorf("cuda: restore %s: state has %d vectors, want %d %v", algorithm, len(st.Vectors), len(names), names)
	}
	for i, v := range st.Vectors {
		if v.Name != names[i] || len(v.Data) != size {
			return fmt.Errorf("cuda: restore %s: vector %d is %q of length %d, want %q of length %d",
				algorithm, i, v.Name, len(v.Data), names[i], size)
		}
	}
	return nil
}

// AdamW is sfadamw.AdamW over the engine's parameters, with m and v in device memory.
type AdamW struct {
	optimizer
	cfg  sfadamw.AdamWConfig
	m, v cu.DevicePtr
	step int64
	lr   float64
}

// NewAdamW returns AdamW over the engine's parameters, updated in place on the device;
// m_0 = v_0 = 0.
func (e *Engine) NewAdamW(cfg sfadamw.AdamWConfig) (backend.Optimizer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("cuda: adamw: %w", err)
	}
	unlock := e.st.lock()
	defer unlock()
	o, vecs, err := e.newOptimizer(cfg.GradClip, optimizerVectors)
	if err != nil {
		return nil, e.oom(err)
	}
	return &AdamW{optimizer: o, cfg: cfg, m: vecs[0], v: vecs[1]}, nil
}

// Step takes one step with the gradient held by the engine.
func (a *AdamW) Step() error {
	if a.e.closed {
		return errClosed
	}
	unlock := a.e.st.lock()
	defer unlock()
	defer a.e.call(PhaseUpdate, Optimizer, true)()
	gs, err := a.scale()
	if err != nil {
		return fmt.Errorf("cuda: adamw step: %w", err)
	}
	a.step++
	t := float64(a.step)
	a.lr = a.cfg.Schedule.At(int(a.step))
	b1, b2 := a.cfg.Beta1, a.cfg.Beta2
	n := a.e.layout.Size
	a.e.bf.stale = true
	sfadamw.ForDecay(a.cfg.Decayed, 0, n, func(lo, hi int, decayed bool) {
		decay := float32(1 - a.lr*a.cfg.WeightDecay)
		if !decayed {
			decay = 1
		}
		if err == nil {
			err = a.e.st.launch("adamw_step", lin(hi-lo), blk, off(a.e.grads, lo), off(a.e.params, lo), off(a.m, lo), off(a.v, lo), int64(hi-lo),
				decay, float32(b1), float32(1-b1), float32(b2), float32(1-b2),
				float32(a.lr/(1-math.Pow(b1, t))), float32(1/math.Sqrt(1-math.Pow(b2, t))), float32(a.cfg.Eps), float32(gs))
		}
	})
	if err != nil {
		return fmt.Errorf("cuda: adamw step: %w", err)
	}
	return nil
}

// State returns a copy of the state in sfadamw's format (the parameters excluded).
func (a *AdamW) State() sfadamw.State[float32] {
	m, v := make([]float32, a.e.layout.Size), make([]float32, a.e.layout.Size)
	if !a.e.closed {
		unlock := a.e.st.lock()
		if dtoh(a.e.st, m, a.m) != nil || dtoh(a.e.st, v, a.v) != nil {
			for i := range m {
				m[i], v[i] = float32(math.NaN()), float32(math.NaN())
			}
		}
		unlock()
	}
	return sfadamw.State[float32]{Algorithm: "adamw", Step: a.step, LastLR: a.lr, MaxLR: a.cfg.Schedule.Peak,
		Vectors: []sfadamw.Vector[float32]{{Name: "m", Data: m}, {Name: "v", Data: v}}}
}

// Restore replaces the state with st, from an AdamW (on any backend) over a buffer of the
// same layout. The parameters are restored by the caller.
func (a *AdamW) Restore(st sfadamw.State[float32]) error {
	if err := checkState("adamw", st, []string{"m", "v"}, a.e.layout.Size); err != nil {
		return err
	}
	if a.e.closed {
		return errClosed
	}
	unlock := a.e.st.lock()
	defer unlock()
	if err := htod(a.e.st, a.m, st.Vectors[0].Data); err != nil {
		return err
	}
	if err := htod(a.e.st, a.v, st.Vectors[1].Data); err != nil {
		return err
	}
	a.step, a.lr = st.Step, st.LastLR
	return nil
}

// Steps returns the number of steps taken.
func (a *AdamW) Steps() int { return int(a.step) }

// StartAverages makes EWA(w), empty, with the given decay.
func (a *AdamW) StartAverages(decay float64) error { return a.startAverages(decay, 1) }

// UpdateAverages folds the weights into EWA(w).
func (a *AdamW) UpdateAverages() error {
	if len(a.vals) != 1 {
		return fmt.Errorf("cuda: adamw: UpdateAverages before StartAverages")
	}
	if a.e.closed {
		return errClosed
	}
	unlock := a.e.st.lock()
	defer unlock()
	defer a.e.call(PhaseUpdate, Optimizer, false)()
	return a.fold(0, a.e.params)
}
