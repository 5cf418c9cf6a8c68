package training

import (
	"fmt"

	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training/backend"
)

// mirror is an optimizer stepped on the engine's device with its averages, where the
// engine is a backend.DeviceLoop: the step then stays where the parameters live, and the
// host keeps a copy (the engine's w, the optimizer's state and its averages) that pull
// brings up to date before it is read, to evaluate or to checkpoint.
type mirror struct {
	loop  backend.DeviceLoop
	opt   backend.Optimizer
	avg   backend.Averager
	stale bool // the host's copy is behind the device
}

// startMirror moves o onto the engine's device, when it can: the engine is a
// backend.DeviceLoop and the device optimizer stores what the host's does (it stores no
// x, so SF-AdamW with β1 = 0 steps on the host). The engine's parameters hold the
// initial ones.
func (o *optimizer) startMirror(e *engine, cfg Config) error {
	if e.loop == nil || (o.sf != nil && !(cfg.Optimizer.Beta1 > 0)) {
		return nil
	}
	var dev backend.Optimizer
	var err error
	if o.sf != nil {
		dev, err = e.loop.NewSFAdamW(cfg.SFAdamWConfig())
	} else {
		dev, err = e.loop.NewAdamW(cfg.AdamWConfig())
	}
	if err != nil {
		return err
	}
	avg, ok := dev.(backend.Averager)
	if !ok {
		return fmt.Errorf("the %s backend's device optimizer keeps no averages", cfg.Backend)
	}
	if err := avg.StartAverages(cfg.EWADecay); err != nil {
		return err
	}
	o.dev = &mirror{loop: e.loop, opt: dev, avg: avg}
	return nil
}

// step is engine.step's update on the device: the mean of the accum micro-batches'
// gradients, the optimizer's step and the averages, as the host computes them.
func (m *mirror) step(accum int) error {
	if accum > 1 {
		if err := m.loop.ScaleGrads(float32(1 / float64(accum))); err != nil {
			return err
		}
	}
	if err := m.opt.Step(); err != nil {
		return err
	}
	m.stale = true
	return m.avg.UpdateAverages()
}

// pull brings the host's copy of the parameters, the optimizer's state and the averages
// up to date with the device's; it does nothing when the optimizer steps on the host.
func (o *optimizer) pull(e *engine) error {
	if o.dev == nil || !o.dev.stale {
		return nil
	}
	if err := e.eng.ReadParams(e.w); err != nil {
		return err
	}
	if err := o.restore(o.dev.opt.State()); err != nil {
		return fmt.Errorf("train: the device optimizer's state: %w", err)
	}
	avgs, err := o.dev.avg.Averages()
	if err != nil {
		return err
	}
	for i, a := range o.ewas {
		if err := a.Restore(avgs[i]); err != nil {
			return fmt.Errorf("train: the device's averages: %w", err)
		}
	}
	o.dev.stale = false
	return nil
}

// push hands the host's optimizer state and averages (restored from a checkpoint) to the
// device; the caller has written the parameters.
func (o *optimizer) push() error {
	if o.dev == nil {
		return nil
	}
	if err := o.dev.opt.Restore(o.state()); err != nil {
		return err
	}
	avgs := make([]sfadamw.State[float32], len(o.ewas))
	for i, a := range o.ewas {
		avgs[i] = a.State()
	}
	o.dev.stale = false
	return o.dev.avg.RestoreAverages(avgs)
}
