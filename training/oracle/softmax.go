package oracle

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// causalSoftmaxOp is the row-wise softmax of attention scores under a causal mask: for
// x (B, T, T), y[b,i,j] = exp(x[b,i,j] − m) / Σ_{k≤i} exp(x[b,i,k] − m) for j ≤ i and 0 for
// j > i, with m the maximum of the row's visible entries.
type causalSoftmaxOp struct{ opBase }

func (op causalSoftmaxOp) Arity() int                { return 1 }
func (op causalSoftmaxOp) Type() hm.Type             { return hm.NewFnType(tensorType(3), tensorType(3)) }
func (op causalSoftmaxOp) WriteHash(h hash.Hash)     { fmt.Fprint(h, "oracle.causalSoftmax") }
func (op causalSoftmaxOp) Hashcode() uint32          { return hashOf(op) }
func (op causalSoftmaxOp) String() string            { return "CausalSoftmax" }
func (op causalSoftmaxOp) DiffWRT(inputs int) []bool { return []bool{true} }
func (op causalSoftmaxOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok || len(s) != 3 || s[1] != s[2] {
		return nil, fmt.Errorf("%v: want a (B, T, T) input, got %v", op, in[0])
	}
	return s.Clone(), nil
}

func (op causalSoftmaxOp) Do(in ...gorgonia.Value) (gorgonia.Value, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("%v: want 1 input, got %d", op, len(in))
	}
	x, shape, err := float64s(in[0], "causal softmax input")
	if err != nil {
		return nil, err
	}
	if len(shape) != 3 || shape[1] != shape[2] {
		return nil, fmt.Errorf("%v: input shape %v, want (B, T, T)", op, shape)
	}
	T := shape[1]
	y := make([]float64, len(x))
	for r := 0; r < shape[0]*T; r++ {
		i := r % T
		row, out := x[r*T:r*T+i+1], y[r*T:r*T+i+1]
		m := math.Inf(-1)
		for _, v := range row {
			m = math.Max(m, v)
		}
		var s float64
		for j, v := range row {
			out[j] = math.Exp(v - m)
			s += out[j]
		}
		for j := range out {
			out[j] /= s
		}
	}
	return newValue(dtypeOf(in[0]), y, shape...)
}

func (op causalSoftmaxOp) SymDiff(inputs gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	if len(inputs) != 1 {
		return nil, fmt.Errorf("%v: SymDiff: want 1 input, got %d", op, len(inputs))
	}
	d, err := gorgonia.ApplyOp(causalSoftmaxGradOp{}, output, grad)
	if err != nil {
		return nil, fmt.Errorf("%v: SymDiff: %w", op, err)
	}
	return gorgonia.Nodes{d}, nil
}

// causalSoftmaxGradOp is the gradient of causalSoftmaxOp from its output y and the output
// gradient g: dx[b,i,j] = y[b,i,j]·(g[b,i,j] − Σ_k y[b,i,k]·g[b,i,k]); masked entries have
// y = 0 and so get 0.
type causalSoftmaxGradOp struct{ opBase }

func (op causalSoftmaxGradOp) Arity() int { return 2 }
func (op causalSoftmaxGradOp) Type() hm.Type {
	return hm.NewFnType(tensorType(3), tensorType(3), tensorType(3))
}
func (op causalSoftmaxGradOp) WriteHash(h hash.Hash) { fmt.Fprint(h, "oracle.causalSoftmaxGrad") }
func (op causalSoftmaxGradOp) Hashcode() uint32      { return hashOf(op) }
func (op causalSoftmaxGradOp) String() string        { return "CausalSoftmaxGrad" }
func (op causalSoftmaxGradOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("%v: input is not a shape: %v", op, in[0])
	}
	return s.Clone(), nil
}

func (op causalSoftmaxGradOp) Do(in ...gorgonia.Value) (gorgonia.Value, error) {
	if len(in) != 2 {
		return nil, fmt.Errorf("%v: want 2 inputs, got %d", op, len(in))
	}
	y, shape, err := float64s(in[0], "causal softmax output")
	if err != nil {
		return nil, err
	}
	g, gshape, err := float64s(in[1], "causal softmax output gradient")
	if err != nil {
		return nil, err
	}
	if len(shape) != 3 || !shape.Eq(gshape) {
		return nil, fmt.Errorf("%v: output shape %v, gradient shape %v", op, shape, gshape)
	}
	T := shape[2]
	dx := make([]float64, len(y))
	for r := 0; r < len(y)/T; r++ {
		yr, gr, dr := y[r*T:(r+1)*T], g[r*T:(r+1)*T], dx[r*T:(r+1)*T]
		var dot float64
		for j := range yr {
			dot += yr[j] * gr[j]
		}
		for j := range yr {
			dr[j] = yr[j] * (gr[j] - dot)
		}
	}
	return newValue(dtypeOf(in[0]), dx, shape...)
}
