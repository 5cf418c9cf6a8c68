package oracle

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// geluOp is the exact (erf) GELU of torch.nn.GELU(), elementwise on a matrix:
// y = 0.5·x·(1 + erf(x/√2)) = x·Φ(x). gorgonia has no erf, hence a custom op.
type geluOp struct{ opBase }

func (op geluOp) Arity() int                { return 1 }
func (op geluOp) Type() hm.Type             { return hm.NewFnType(tensorType(2), tensorType(2)) }
func (op geluOp) WriteHash(h hash.Hash)     { fmt.Fprint(h, "oracle.gelu") }
func (op geluOp) Hashcode() uint32          { return hashOf(op) }
func (op geluOp) String() string            { return "GELU" }
func (op geluOp) DiffWRT(inputs int) []bool { return []bool{true} }
func (op geluOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("%v: input is not a shape: %v", op, in[0])
	}
	return s.Clone(), nil
}

// gelu returns 0.5·x·(1 + erf(x/√2)).
func gelu(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }

// geluDeriv returns dGELU/dx = Φ(x) + x·φ(x) = 0.5·(1 + erf(x/√2)) + x·exp(−x²/2)/√(2π).
func geluDeriv(x float64) float64 {
	return 0.5*(1+math.Erf(x/math.Sqrt2)) + x*math.Exp(-0.5*x*x)/math.Sqrt(2*math.Pi)
}

func (op geluOp) Do(in ...gorgonia.Value) (gorgonia.Value, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("%v: want 1 input, got %d", op, len(in))
	}
	x, shape, err := float64s(in[0], "GELU input")
	if err != nil {
		return nil, err
	}
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = gelu(v)
	}
	return newValue(dtypeOf(in[0]), y, shape...)
}

func (op geluOp) SymDiff(inputs gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	if len(inputs) != 1 {
		return nil, fmt.Errorf("%v: SymDiff: want 1 input, got %d", op, len(inputs))
	}
	d, err := gorgonia.ApplyOp(geluGradOp{}, inputs[0], grad)
	if err != nil {
		return nil, fmt.Errorf("%v: SymDiff: %w", op, err)
	}
	return gorgonia.Nodes{d}, nil
}

// geluGradOp is the gradient of geluOp from its input x and the output gradient g:
// dx = g·(Φ(x) + x·φ(x)).
type geluGradOp struct{ opBase }

func (op geluGradOp) Arity() int { return 2 }
func (op geluGradOp) Type() hm.Type {
	return hm.NewFnType(tensorType(2), tensorType(2), tensorType(2))
}
func (op geluGradOp) WriteHash(h hash.Hash) { fmt.Fprint(h, "oracle.geluGrad") }
func (op geluGradOp) Hashcode() uint32      { return hashOf(op) }
func (op geluGradOp) String() string        { return "GELUGrad" }
func (op geluGradOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("%v: input is not a shape: %v", op, in[0])
	}
	return s.Clone(), nil
}

func (op geluGradOp) Do(in ...gorgonia.Value) (gorgonia.Value, error) {
	if len(in) != 2 {
		return nil, fmt.Errorf("%v: want 2 inputs, got %d", op, len(in))
	}
	x, shape, err := float64s(in[0], "GELU input")
	if err != nil {
		return nil, err
	}
	g, gshape, err := float64s(in[1], "GELU output gradient")
	if err != nil {
		return nil, err
	}
	if !shape.Eq(gshape) {
		return nil, fmt.Errorf("%v: input shape %v, gradient shape %v", op, shape, gshape)
	}
	dx := make([]float64, len(x))
	for i, v := range x {
		dx[i] = g[i] * geluDeriv(v)
	}
	return newValue(dtypeOf(in[0]), dx, shape...)
}
