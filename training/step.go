package training

import (
	"context"
	"fmt"
	"math"

	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/model"
)

// The one training step of sfsweep: a run's loop and every probe that trains (the decay
// probe, the LR-decay branch and so the decayed end of an interpolation) set up their
// engine with openEngine and take each step with engine.step, so that a step computes the
// same bits wherever it is taken and a fix to it is made once.

// engine is a backend engine made for a config, on the config's data, with the host's view
// of its parameters and gradients.
type engine struct {
	eng backend.Engine // the engine as the caller uses it: its passes report to WithAlive
	// host tells that w and g are the engine's own buffers (a backend.HostEngine); else
	// they are copies, and w is the host's copy of the parameters.
	host bool
	w, g []float32
	// loop is the engine's backend.DeviceLoop, if it has one and its memory is its own:
	// an optimizer may then step where the parameters live (mirror).
	loop backend.DeviceLoop
	// queue is the engine as a backend.Accumulator, if it is one: a step's losses are
	// then read once, at its end (accumulate).
	queue           backend.Accumulator
	losses          []float64 // the step's micro-batch losses, read from queue
	data            Batches
	accum           int
	tokens, targets []int32
}

// openEngine makes the engine of cfg (valid) on data; wrap, if set, receives the engine
// made and returns the one used. Its parameters are undefined until the caller writes them
// (upload).
func openEngine(ctx context.Context, cfg Config, mc model.Config, data Batches, wrap func(backend.Engine) backend.Engine) (*engine, error) {
	eng, err := backend.New(cfg.Backend, mc, cfg.MicroBatch, cfg.SeqLen)
	if err != nil {
		return nil, err
	}
	if wrap != nil {
		eng = wrap(eng)
	}
	n := eng.NumParams()
	e := &engine{eng: observe(ctx, eng), data: data, accum: cfg.Accum(),
		tokens: make([]int32, cfg.MicroBatch*cfg.SeqLen), targets: make([]int32, cfg.MicroBatch*cfg.SeqLen)}
	if h, ok := eng.(backend.HostEngine); ok {
		e.w, e.g, e.host = h.Params(), h.Grads(), true
	} else {
		e.w, e.g = make([]float32, n), make([]float32, n)
		e.loop, _ = eng.(backend.DeviceLoop)
	}
	if q, ok := eng.(backend.Accumulator); ok {
		e.queue, e.losses = observeQueue(ctx, q), make([]float64, 0, e.accum)
	}
	return e, nil
}

// upload makes the host's copy of the parameters the engine's parameters.
func (e *engine) upload() error {
	if e.host {
		return nil
	}
	return e.eng.WriteParams(e.w)
}

// setParams makes w the parameters the engine computes with; on an engine with memory of
// its own the host's copy stays as it is.
func (e *engine) setParams(w []float32) error {
	if e.host {
		copy(e.w, w)
		return nil
	}
	return e.eng.WriteParams(w)
}

// valLoss is the mean validation loss of the engine's parameters over at most maxSeqs
// sequences, and the number of sequences.
func (e *engine) valLoss(maxSeqs int) (float64, int, error) {
	return meanLoss(e.eng, e.data, "val", maxSeqs, e.tokens, e.targets)
}

// step is one training step on the batches of step: the micro-batches' gradients, their
// mean and the optimizer's update (with its averages), on the host or, where o has a
// mirror, on the device. It returns the mean training loss; where a micro-batch's loss is
// not finite it returns the first such loss and makes no update.
func (e *engine) step(step int, o *optimizer) (float64, error) {
	e.eng.ZeroGrad()
	accumulate := e.accumulate
	if e.queue != nil {
		accumulate = e.accumulateQueued
	}
	loss, err := accumulate(step)
	if err != nil || !finite(loss) {
		return loss, err
	}
	if o.dev != nil {
		return loss, o.dev.step(e.accum)
	}
	if !e.host {
		if err := e.eng.ReadGrads(e.g); err != nil {
			return 0, err
		}
	}
	scaleGrads(e.g, e.accum)
	o.hostStep(e.g, e.w)
	if !e.host {
		if err := e.eng.WriteParams(e.w); err != nil {
			return 0, err
		}
	}
	return loss, nil
}

// accumulate adds the gradients of step's micro-batches up, reading each one's loss as
// its forward pass ends, and returns their mean loss; a micro-batch whose loss is not
// finite ends it early, with that loss.
func (e *engine) accumulate(step int) (float64, error) {
	var sum float64
	for micro := range e.accum {
		e.data.Fill(step, micro, e.tokens, e.targets)
		l, err := e.eng.Forward(e.tokens, e.targets)
		if err != nil {
			return 0, err
		}
		sum += l
		if !finite(l) {
			return l, nil
		}
		if err := e.eng.Backward(); err != nil {
			return 0, err
		}
	}
	return sum / float64(e.accum), nil
}

// accumulateQueued is accumulate on an engine that keeps the losses until the step's end:
// the same mean, summed in the same order, or the same first non-finite loss. Where a
// micro-batch's loss is not finite, the later micro-batches' passes have run too (their
// losses were not yet known), which changes only the gradients, and no update reads them:
// the step returns that loss, and the next step clears them.
func (e *engine) accumulateQueued(step int) (float64, error) {
	for micro := range e.accum {
		e.data.Fill(step, micro, e.tokens, e.targets)
		if err := e.queue.Accumulate(e.tokens, e.targets); err != nil {
			return 0, err
		}
	}
	losses, err := e.queue.Losses(e.losses[:0])
	if err != nil {
		return 0, err
	}
	if len(losses) != e.accum {
		return 0, fmt.Errorf("the engine kept %d losses of %d micro-batches", len(losses), e.accum)
	}
	e.losses = losses
	var sum float64
	for _, l := range losses {
		sum += l
		if !finite(l) {
			return l, nil
		}
	}
	return sum / float64(e.accum), nil
}

// scaleGrads turns the sum of accum micro-batch gradients into their mean.
func scaleGrads(g []float32, accum int) {
	if accum > 1 {
		s := float32(1 / float64(accum))
		for i := range g {
			g[i] *= s
		}
	}
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// meanLoss is the mean loss of the engine's current parameters over the split's
// evaluation batches, and the number of sequences it covers.
func meanLoss(eng backend.Engine, data Batches, split string, maxSeqs int, tokens, targets []int32) (float64, int, error) {
	nb, fill := data.EvalBatches(split, maxSeqs)
	if nb == 0 {
		return 0, 0, fmt.Errorf("evaluate: the %s split holds no whole window of %d tokens", split, eng.SeqLen())
	}
	var sum float64
	for i := range nb {
		fill(i, tokens, targets)
		l, err := eng.Forward(tokens, targets)
		if err != nil {
			return 0, 0, fmt.Errorf("evaluate %s: %w", split, err)
		}
		sum += l
	}
	return sum / float64(nb), nb * eng.Batch(), nil
}

// optimizer is the optimizer of a training step, SF-AdamW or AdamW, with the exponential
// averages of its iterates, on the host. Where dev is set the step runs on the engine's
// device, and the host's optimizer and averages are a copy of the device's that pull
// brings up to date.
type optimizer struct {
	sf    *sfadamw.SFAdamW[float32] // one of sf and adamw is set
	adamw *sfadamw.AdamW[float32]
	// ewas are the averages in backend.Averager's order: EWA(x) and EWA(y) for SF-AdamW,
	// EWA(w) for AdamW; a probe keeps none.
	ewas []*sfadamw.EWA[float32]
	dev  *mirror
}

// runOptimizer is the optimizer of a run of cfg on the parameters w, with its averages.
func runOptimizer(cfg Config, w []float32) (*optimizer, error) {
	o := &optimizer{}
	var err error
	averages := 1
	switch cfg.Optimizer.Name {
	case SFAdamW:
		o.sf, err = sfadamw.New(cfg.SFAdamWConfig(), w)
		averages = 2
	case AdamW:
		o.adamw, err = sfadamw.NewAdamW(cfg.AdamWConfig(), w)
	}
	for i := 0; err == nil && i < averages; i++ {
		var a *sfadamw.EWA[float32]
		a, err = sfadamw.NewEWA[float32](len(w), cfg.EWADecay)
		o.ewas = append(o.ewas, a)
	}
	if err != nil {
		return nil, err
	}
	return o, nil
}

// hostStep steps the optimizer with the mean gradients g of the parameters w and folds the
// new iterates into the averages.
func (o *optimizer) hostStep(g, w []float32) {
	if o.sf != nil {
		o.sf.Step(g)
		if len(o.ewas) == 2 { // a probe keeps none
			o.sf.UpdateEWAX(o.ewas[0])
			o.ewas[1].Update(w)
		}
		return
	}
	o.adamw.Step(g)
	for _, a := range o.ewas {
		a.Update(w)
	}
}

// lastLR is the learning rate of the last step.
func (o *optimizer) lastLR() float64 {
	if o.sf != nil {
		return o.sf.LastLR()
	}
	return o.adamw.LastLR()
}

// state is the optimizer's state in sfadamw's format.
func (o *optimizer) state() sfadamw.State[float32] {
	if o.sf != nil {
		return o.sf.State()
	}
	return o.adamw.State()
}

// restore replaces the optimizer's state.
func (o *optimizer) restore(st sfadamw.State[float32]) error {
	if o.sf != nil {
		return o.sf.Restore(st)
	}
	return o.adamw.Restore(st)
}
