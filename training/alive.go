package training

import (
	"context"

	"github.com/sfsweep/sfsweep/training/backend"
)

type aliveKey struct{}

// WithAlive returns a context under which Run and the probes call alive once their engine
// exists and after every forward and backward pass that returns (training and
// evaluation): a watchdog that stops hearing it knows the compute is stuck.
func WithAlive(ctx context.Context, alive func()) context.Context {
	return context.WithValue(ctx, aliveKey{}, alive)
}

// observe wraps eng so that its passes report to the context's alive function, if any,
// and reports the engine's creation. Callers keep the unwrapped engine for HostEngine.
func observe(ctx context.Context, eng backend.Engine) backend.Engine {
	alive, ok := ctx.Value(aliveKey{}).(func())
	if !ok {
		return eng
	}
	alive()
	return aliveEngine{Engine: eng, alive: alive}
}

// aliveEngine reports every Forward and Backward that returns.
type aliveEngine struct {
	backend.Engine
	alive func()
}

func (e aliveEngine) Forward(tokens, targets []int32) (float64, error) {
	defer e.alive()
	return e.Engine.Forward(tokens, targets)
}

func (e aliveEngine) Backward() error {
	defer e.alive()
	return e.Engine.Backward()
}

// observeQueue is observe for an engine that is a backend.Accumulator: each Accumulate
// that returns, two passes, reports once, and so does each Losses, which waits for the
// device's last micro-batches.
func observeQueue(ctx context.Context, q backend.Accumulator) backend.Accumulator {
	alive, ok := ctx.Value(aliveKey{}).(func())
	if !ok {
		return q
	}
	return aliveQueue{Accumulator: q, alive: alive}
}

// aliveQueue reports every Accumulate and Losses that returns.
type aliveQueue struct {
	backend.Accumulator
	alive func()
}

func (q aliveQueue) Accumulate(tokens, targets []int32) error {
	defer q.alive()
	return q.Accumulator.Accumulate(tokens, targets)
}

func (q aliveQueue) Losses(dst []float64) ([]float64, error) {
	defer q.alive()
	return q.Accumulator.Losses(dst)
}
