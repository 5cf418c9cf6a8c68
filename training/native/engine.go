package native

import (
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/model"
)

// The float32 Model is the "cpu" backend: a backend.HostEngine.
var _ backend.HostEngine = (*Model[float32])(nil)

func init() {
	backend.Register("cpu", func(cfg model.Config, batch, seqLen int) (backend.Engine, error) {
		m, err := New[float32](cfg, batch, seqLen)
		if err != nil {
			return nil, err
		}
		return m, nil
	})
}

// NumParams returns the length of the parameter and gradient buffers.
func (m *Model[T]) NumParams() int { return len(m.params) }

// ReadParams copies the parameters into dst.
func (m *Model[T]) ReadParams(dst []T) error {
	if err := backend.CheckLen("native: ReadParams", len(dst), len(m.params)); err != nil {
		return err
	}
	copy(dst, m.params)
	return nil
}

// WriteParams replaces the parameters with src.
func (m *Model[T]) WriteParams(src []T) error {
	if err := backend.CheckLen("native: WriteParams", len(src), len(m.params)); err != nil {
		return err
	}
	copy(m.params, src)
	return nil
}

// ReadGrads copies the gradients into dst.
func (m *Model[T]) ReadGrads(dst []T) error {
	if err := backend.CheckLen("native: ReadGrads", len(dst), len(m.grads)); err != nil {
		return err
	}
	copy(dst, m.grads)
	return nil
}

// Close does nothing: the engine holds only Go memory.
func (m *Model[T]) Close() error { return nil }
