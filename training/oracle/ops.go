package oracle

import (
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The custom gorgonia ops replace built-ins which are wrong in gorgonia v0.9.18 (each item
// below says how) or have no built-in at all. Each has its file; this one holds what they
// share.
//
//   - embeddingOp: row gather table[ids], with its scatter-add gradient (ByIndices is only
//     safe on axis 0 and needs Int indices; this keeps every input of the graph one dtype).
//   - causalSoftmaxOp: softmax over the last axis of (B, T, T) scores restricted to j ≤ i,
//     with a per-row max (the built-in SoftMax stabilises with the whole tensor's first
//     element and has no mask).
//   - crossEntropyOp: mean over rows of logsumexp(row) − row[target] (the built-in
//     LogSoftMax is merged with SoftMax and shares SoftMax's stabilisation bug).
//   - geluOp: the exact erf GELU of torch.nn.GELU() (gorgonia has no erf).
//
// Each op computes in float64 internally and rounds its result to the graph's dtype. Their
// gradients are separate ops (…GradOp) reached through SymDiff, the path the tape machine
// uses; no op here is differentiated twice, so the gradient ops have no gradient of their own.

// hashOf returns the FNV-1a hash of what an op writes with WriteHash.
func hashOf(op interface{ WriteHash(hash.Hash) }) uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}

// tensorOf returns v as a tensor.Tensor holding its elements contiguously in row-major
// order (materialising a view).
func tensorOf(v gorgonia.Value, what string) (tensor.Tensor, error) {
	t, ok := v.(tensor.Tensor)
	if !ok {
		return nil, fmt.Errorf("%s: want a tensor, got %T", what, v)
	}
	if d, ok := t.(*tensor.Dense); ok && d.IsView() {
		t = d.Materialize()
	}
	return t, nil
}

// float64s copies the elements of a float64 or float32 value into a new []float64.
func float64s(v gorgonia.Value, what string) ([]float64, tensor.Shape, error) {
	switch s := v.(type) {
	case *gorgonia.F64:
		return []float64{float64(*s)}, tensor.ScalarShape(), nil
	case *gorgonia.F32:
		return []float64{float64(*s)}, tensor.ScalarShape(), nil
	}
	t, err := tensorOf(v, what)
	if err != nil {
		return nil, nil, err
	}
	switch data := t.Data().(type) {
	case []float64:
		return append([]float64(nil), data...), t.Shape().Clone(), nil
	case []float32:
		out := make([]float64, len(data))
		for i, x := range data {
			out[i] = float64(x)
		}
		return out, t.Shape().Clone(), nil
	case float64: // a 0-d tensor
		return []float64{data}, tensor.ScalarShape(), nil
	case float32:
		return []float64{float64(data)}, tensor.ScalarShape(), nil
	}
	return nil, nil, fmt.Errorf("%s: want float64 or float32 elements, got %v", what, t.Dtype())
}

// newValue returns a dense tensor of dtype dt and the given shape holding data.
func newValue(dt tensor.Dtype, data []float64, shape ...int) (gorgonia.Value, error) {
	switch dt {
	case tensor.Float64:
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data)), nil
	case tensor.Float32:
		d := make([]float32, len(data))
		for i, x := range data {
			d[i] = float32(x)
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(d)), nil
	}
	return nil, fmt.Errorf("dtype %v: want Float64 or Float32", dt)
}

// dtypeOf returns the dtype of a tensor or scalar value.
func dtypeOf(v gorgonia.Value) tensor.Dtype {
	switch v.(type) {
	case *gorgonia.F64:
		return tensor.Float64
	case *gorgonia.F32:
		return tensor.Float32
	}
	if t, ok := v.(tensor.Tensor); ok {
		return t.Dtype()
	}
	return tensor.Dtype{}
}

// indices converts a float vector of token ids to ints, checking each is an integer in [0, n).
func indices(x []float64, n int, what string) ([]int, error) {
	out := make([]int, len(x))
	for i, v := range x {
		k := int(v)
		if float64(k) != v || k < 0 || k >= n {
			return nil, fmt.Errorf("%s[%d] = %v: want an integer in [0, %d)", what, i, v, n)
		}
		out[i] = k
	}
	return out, nil
}

func tensorType(dims int) hm.Type { return gorgonia.TensorType{Dims: dims, Of: hm.TypeVariable('a')} }

// opBase holds the methods every op here shares.
type opBase struct{}

func (opBase) ReturnsPtr() bool     { return false }
func (opBase) CallsExtern() bool    { return false }
func (opBase) OverwritesInput() int { return -1 }
