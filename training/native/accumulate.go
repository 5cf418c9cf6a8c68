package native

import "github.com/sfsweep/sfsweep/training/backend"

// The float32 Model takes a step's micro-batches as a backend.Accumulator: on the host a
// loss costs nothing to hand back, so this is Forward and Backward with the losses kept in
// a slice, and the training loop runs the same step on the CPU as on a device.
var _ backend.Accumulator = (*Model[float32])(nil)

// Accumulate runs Forward and Backward on the micro-batch and keeps its mean loss for
// Losses.
func (m *Model[T]) Accumulate(tokens, targets []int32) error {
	l, err := m.Forward(tokens, targets)
	if err != nil {
		return err
	}
	m.losses = append(m.losses, l)
	return m.Backward()
}

// Losses appends the mean losses of the micro-batches accumulated since the last Losses or
// ZeroGrad to dst, in their order, and forgets them.
func (m *Model[T]) Losses(dst []float64) ([]float64, error) {
	dst = append(dst, m.losses...)
	m.losses = m.losses[:0]
	return dst, nil
}
