package training

import (
	"fmt"

	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training/checkpoint"
)

// The iterates a run evaluates. SF-AdamW: x (its output), y (the gradient point) and their
// EWAs; AdamW: its weights w and their EWA.
const (
	IterX    = "x"
	IterY    = "y"
	IterEWAX = "ewa_x"
	IterEWAY = "ewa_y"
	IterW    = "w"
	IterEWAW = "ewa_w"
)

// Iterates returns the iterates evaluated for an optimizer, the primary one first: those a
// probe can start from (IterateWeights).
func Iterates(optimizer string) []string {
	if optimizer == AdamW {
		return []string{IterW, IterEWAW}
	}
	return []string{IterX, IterY, IterEWAX, IterEWAY}
}

// IterEWA names, in a probe, the EWA of a run's evaluated iterate (ewa_x for SF-AdamW,
// ewa_w for AdamW), so that a grid of both optimizers can probe from it. The empty name
// stands for the evaluated iterate itself (x for SF-AdamW, w for AdamW).
const IterEWA = "ewa"

// SameIterate tells whether a probe result from iterate got matches the iterate asked for:
// a name of Iterates must be the one the result has; "" and IterEWA, which resolve to a
// name by the run's optimizer, match any result (the result's key tells them apart).
func SameIterate(got, asked string) bool {
	return asked == "" || asked == IterEWA || got == asked
}

// ResolveIterate names the iterate of an optimizer's runs that name asks for: "" is the
// evaluated one (x for SF-AdamW, w for AdamW), IterEWA its EWA (ewa_x, ewa_w); any other
// name is itself.
func ResolveIterate(optimizer, name string) string {
	sf := optimizer == SFAdamW
	switch {
	case name == "" && sf:
		return IterX
	case name == "":
		return IterW
	case name == IterEWA && sf:
		return IterEWAX
	case name == IterEWA:
		return IterEWAW
	}
	return name
}

// IterateWeights returns the weights of one iterate of a run's checkpoint and the
// iterate's resolved name. name is one of Iterates(cfg.Optimizer.Name), or "" for the
// evaluated iterate (x for SF-AdamW, w for AdamW) or IterEWA for its EWA (ewa_x, ewa_w).
// The weights may share memory with ck. An iterate the run lacks, or a checkpoint without
// the state it needs, is an error.
func IterateWeights(cfg Config, ck *checkpoint.Checkpoint, name string) (w []float32, resolved string, err error) {
	sf := cfg.Optimizer.Name == SFAdamW
	name = ResolveIterate(cfg.Optimizer.Name, name)
	ewa := func(state string) ([]float32, string, error) {
		st, err := ck.Optimizer(state)
		if err != nil {
			return nil, "", fmt.Errorf("iterate %s: %w (is ewa_decay set?)", name, err)
		}
		if len(st.Vectors) != 1 || len(st.Vectors[0].Data) != len(ck.Params) {
			return nil, "", fmt.Errorf("iterate %s: checkpoint state %q is not an average of the weights", name, state)
		}
		return st.Vectors[0].Data, name, nil
	}
	switch {
	case sf && name == IterX:
		x, err := IterateX(cfg, ck)
		return x, name, err
	case sf && name == IterY, !sf && name == IterW:
		return ck.Params, name, nil // the checkpoint's weights are y for SF-AdamW
	case sf && name == IterEWAX, !sf && name == IterEWAW:
		return ewa(StateEWA1)
	case sf && name == IterEWAY:
		return ewa(StateEWA2)
	}
	return nil, "", fmt.Errorf("iterate %q: a %s run has %v", name, cfg.Optimizer.Name, Iterates(cfg.Optimizer.Name))
}

// IterateX recovers SF-AdamW's x, where the run evaluates the model, from a checkpoint's
// y (its parameters) and optimizer state (StateOptimizer), into a new slice.
func IterateX(cfg Config, ck *checkpoint.Checkpoint) ([]float32, error) {
	st, err := ck.Optimizer(StateOptimizer)
	if err != nil {
		return nil, err
	}
	y := append([]float32(nil), ck.Params...)
	opt, err := sfadamw.New(cfg.SFAdamWConfig(), y)
	if err != nil {
		return nil, err
	}
	if err := opt.Restore(st); err != nil {
		return nil, err
	}
	x := make([]float32, len(y))
	opt.X(x)
	return x, nil
}
