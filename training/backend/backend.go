// Package backend is the boundary between the training loop and the compute that runs a
// model: an Engine computes the loss and the gradient of one micro-batch on parameters it
// holds in its own memory (host memory for the native CPU engine, device memory for the
// CUDA engine), and a registry maps backend names ("cpu", "cuda") to constructors.
//
// The training loop sees only this package. An engine whose parameters and gradients live
// in host memory also implements HostEngine, and the loop steps an sfadamw optimizer on its
// buffers in place; any other engine is driven through ReadParams / WriteParams /
// ReadGrads, or, where it implements DeviceOptimizers, steps its optimizers where the
// parameters live. An engine that implements Accumulator has a step's losses read once,
// at the step's end. Parameters, gradients and checkpoints are in model.Config.Layout order
// for every backend, so a checkpoint written by one backend resumes on another.
package backend

import (
	"fmt"

	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training/model"
)

// Engine computes the mean next-token cross-entropy of a model on micro-batches of a fixed
// shape and its gradient. Its methods must not be called concurrently.
type Engine interface {
	// Config is the model the engine runs.
	Config() model.Config
	// Batch and SeqLen are the micro-batch shape: Batch sequences of SeqLen tokens.
	Batch() int
	SeqLen() int
	// Forward runs the model on Batch·SeqLen token ids (row-major by sequence, position)
	// and returns the mean cross-entropy of predicting targets; a token or target outside
	// the vocabulary is an error. It keeps what Backward needs.
	Forward(tokens, targets []int32) (float64, error)
	// Backward adds the gradient of the last Forward's mean loss to the gradients, so the
	// gradients of successive micro-batches add up. Each Forward allows one Backward.
	Backward() error
	// ZeroGrad sets every gradient to zero.
	ZeroGrad()
	// NumParams is the length of the parameter and gradient buffers (Config().NumParams()).
	NumParams() int
	// ReadParams copies the parameters into dst, WriteParams replaces them with src, and
	// ReadGrads copies the gradients into dst; each slice has NumParams elements.
	ReadParams(dst []float32) error
	WriteParams(src []float32) error
	ReadGrads(dst []float32) error
	// Close releases what the engine holds (device memory, streams); the engine is unusable
	// afterwards. Closing a host engine is a no-op.
	Close() error
}

// HostEngine is an Engine whose parameters and gradients are host memory the caller may
// read and update in place (an optimizer steps Params with Grads).
type HostEngine interface {
	Engine
	Params() []float32
	Grads() []float32
}

// Accumulator is implemented by engines that take a step's micro-batches without handing
// back each one's loss as it is computed: Accumulate runs a micro-batch's forward and
// backward passes and keeps its loss where the engine computed it, and Losses reads the
// step's losses at once. A device then does not wait for the host between micro-batches.
type Accumulator interface {
	// Accumulate runs Forward and then Backward on the micro-batch (tokens and targets as
	// Forward takes them) and keeps its mean loss for Losses. A non-finite loss is kept
	// like any other and its Backward runs: what follows it is the caller's to decide.
	Accumulate(tokens, targets []int32) error
	// Losses appends to dst the mean losses of the micro-batches accumulated since the last
	// Losses or ZeroGrad, in their order, each bitwise the value Forward returns for its
	// micro-batch, and forgets them.
	Losses(dst []float64) ([]float64, error)
}

// DeviceOptimizers is implemented by engines that step optimizers where their parameters
// live. The returned optimizer updates the engine's parameters from its gradients; its
// state is exchanged in sfadamw's format, so checkpoints move between backends.
type DeviceOptimizers interface {
	NewSFAdamW(cfg sfadamw.Config) (Optimizer, error)
	NewAdamW(cfg sfadamw.AdamWConfig) (Optimizer, error)
}

// Optimizer is an optimizer bound to an engine's parameters and gradients.
type Optimizer interface {
	Step() error
	State() sfadamw.State[float32]
	Restore(sfadamw.State[float32]) error
}

// DeviceLoop is implemented by engines on which the training loop's whole step stays where
// the parameters live: the mean of the accumulated gradients (ScaleGrads), a device
// optimizer's step and, where the optimizer is an Averager, the exponential averages of
// the iterates. The loop then copies parameters and state to the host only to evaluate and
// to checkpoint. Each operation gives bitwise what the loop computes on the host.
type DeviceLoop interface {
	DeviceOptimizers
	// ScaleGrads multiplies every gradient by s (g = g·s in float32).
	ScaleGrads(s float32) error
}

// Averager is implemented by device optimizers that also keep the training loop's
// exponential averages of the iterates (sfadamw.EWA) where the parameters live: for
// SF-AdamW EWA(x) and EWA(y), for AdamW EWA(w), in that order.
type Averager interface {
	// StartAverages makes the averages, empty, with the given decay.
	StartAverages(decay float64) error
	// UpdateAverages folds the current iterates into the averages, as sfadamw's
	// UpdateEWAX (EWA(x)) and EWA.Update (EWA(y), EWA(w)) do.
	UpdateAverages() error
	// Averages returns copies of the averages in sfadamw.EWA's State format.
	Averages() ([]sfadamw.State[float32], error)
	// RestoreAverages replaces the averages with states of sfadamw.EWA's format.
	RestoreAverages([]sfadamw.State[float32]) error
}

// CheckLen is the length check of ReadParams, WriteParams and ReadGrads, shared by backends.
func CheckLen(what string, got, want int) error {
	if got != want {
		return fmt.Errorf("%s: %d elements, want %d (the model's parameter count)", what, got, want)
	}
	return nil
}

// CheckBatch is the input check of Forward, shared by backends: tokens and targets hold n
// ids each, all inside the vocabulary.
func CheckBatch(who string, tokens, targets []int32, n, vocab int) error {
	if len(tokens) != n || len(targets) != n {
		return fmt.Errorf("%s: %d tokens and %d targets, want batch·seqLen = %d each", who, len(tokens), len(targets), n)
	}
	for _, s := range []struct {
		name string
		ids  []int32
	}{{"tokens", tokens}, {"targets", targets}} {
		for i, id := range s.ids {
			if id < 0 || int(id) >= vocab {
				return fmt.Errorf("%s: %s[%d] = %d, outside the vocabulary [0, %d)", who, s.name, i, id, vocab)
			}
		}
	}
	return nil
}
