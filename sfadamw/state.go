package sfadamw

import (
	"fmt"
	"slices"
)

// State is the full state of an optimizer, for checkpoints: the step count, the scalars of
// the Schedule-Free average, and every state vector by name. The parameters themselves are
// not part of it; a checkpoint stores them beside it. An optimizer restored from a State
// (with its parameters) continues bitwise identically.
type State[T Float] struct {
	Algorithm string // "sfadamw", "sf", "sf-sgd", "adamw" or "ewa"
	Step      int64  // steps taken
	SumLR2    float64
	MaxLR     float64
	LastLR    float64
	LastC     float64
	Vectors   []Vector[T] // in a fixed order per algorithm
}

// Vector is one named state vector.
type Vector[T Float] struct {
	Name string
	Data []T
}

// Vector returns the vector called name, or nil.
func (s State[T]) Vector(name string) []T {
	for _, v := range s.Vectors {
		if v.Name == name {
			return v.Data
		}
	}
	return nil
}

func copyVectors[T Float](vs []Vector[T]) []Vector[T] {
	out := make([]Vector[T], len(vs))
	for i, v := range vs {
		out[i] = Vector[T]{Name: v.Name, Data: slices.Clone(v.Data)}
	}
	return out
}

// restoreVectors copies st's vectors into dst after checking that st comes from the same
// algorithm over buffers of the same names and lengths.
func restoreVectors[T Float](algorithm string, st State[T], dst []Vector[T]) error {
	if st.Algorithm != algorithm {
		return fmt.Errorf("restore %s: state is from %q", algorithm, st.Algorithm)
	}
	if st.Step < 0 {
		return fmt.Errorf("restore %s: step = %d: must be ≥ 0", algorithm, st.Step)
	}
	if len(st.Vectors) != len(dst) {
		return fmt.Errorf("restore %s: state has %d vectors %v, want %d %v", algorithm, len(st.Vectors), names(st.Vectors), len(dst), names(dst))
	}
	for i, v := range st.Vectors {
		if v.Name != dst[i].Name || len(v.Data) != len(dst[i].Data) {
			return fmt.Errorf("restore %s: vector %d is %q of length %d, want %q of length %d",
				algorithm, i, v.Name, len(v.Data), dst[i].Name, len(dst[i].Data))
		}
	}
	for i, v := range st.Vectors {
		copy(dst[i].Data, v.Data)
	}
	return nil
}

func names[T Float](vs []Vector[T]) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Name
	}
	return out
}
