package oracle

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// crossEntropyOp is the mean next-token cross-entropy of logits (N, V) against targets (N)
// (integral values of the logits' dtype): (1/N) Σ_n [logsumexp(logits[n]) − logits[n, targets[n]]].
// Its output is a scalar.
type crossEntropyOp struct{ opBase }

func (op crossEntropyOp) Arity() int { return 2 }
func (op crossEntropyOp) Type() hm.Type {
	return hm.NewFnType(tensorType(2), tensorType(1), hm.TypeVariable('a'))
}
func (op crossEntropyOp) WriteHash(h hash.Hash)     { fmt.Fprint(h, "oracle.crossEntropy") }
func (op crossEntropyOp) Hashcode() uint32          { return hashOf(op) }
func (op crossEntropyOp) String() string            { return "CrossEntropy" }
func (op crossEntropyOp) DiffWRT(inputs int) []bool { return []bool{true, false} }
func (op crossEntropyOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	return tensor.ScalarShape(), nil
}

// crossEntropyRows checks the inputs of the cross-entropy ops and returns the logits, the
// targets as ints, and N and V.
func crossEntropyRows(logitsV, targetsV gorgonia.Value) (logits []float64, targets []int, n, v int, err error) {
	logits, shape, err := float64s(logitsV, "cross-entropy logits")
	if err != nil {
		return nil, nil, 0, 0, err
	}
	if len(shape) != 2 {
		return nil, nil, 0, 0, fmt.Errorf("cross-entropy logits shape %v, want (N, V)", shape)
	}
	n, v = shape[0], shape[1]
	tf, _, err := float64s(targetsV, "cross-entropy targets")
	if err != nil {
		return nil, nil, 0, 0, err
	}
	if len(tf) != n {
		return nil, nil, 0, 0, fmt.Errorf("cross-entropy: %d targets for %d rows of logits", len(tf), n)
	}
	targets, err = indices(tf, v, "cross-entropy targets")
	return logits, targets, n, v, err
}

// logSumExp returns log Σ exp(row) stabilised by the row's maximum.
func logSumExp(row []float64) float64 {
	m := math.Inf(-1)
	for _, v := range row {
		m = math.Max(m, v)
	}
	var s float64
	for _, v := range row {
		s += math.Exp(v - m)
	}
	return m + math.Log(s)
}

func (op crossEntropyOp) Do(in ...gorgonia.Value) (gorgonia.Value, error) {
	if len(in) != 2 {
		return nil, fmt.Errorf("%v: want 2 inputs, got %d", op, len(in))
	}
	logits, targets, n, v, err := crossEntropyRows(in[0], in[1])
	if err != nil {
		return nil, err
	}
	var loss float64
	for r, t := range targets {
		row := logits[r*v : (r+1)*v]
		loss += logSumExp(row) - row[t]
	}
	loss /= float64(n)
	if dtypeOf(in[0]) == tensor.Float32 {
		return gorgonia.NewF32(float32(loss)), nil
	}
	return gorgonia.NewF64(loss), nil
}

func (op crossEntropyOp) SymDiff(inputs gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	if len(inputs) != 2 {
		return nil, fmt.Errorf("%v: SymDiff: want 2 inputs, got %d", op, len(inputs))
	}
	d, err := gorgonia.ApplyOp(crossEntropyGradOp{}, inputs[0], inputs[1], grad)
	if err != nil {
		return nil, fmt.Errorf("%v: SymDiff: %w", op, err)
	}
	return gorgonia.Nodes{d, nil}, nil
}

// crossEntropyGradOp is the gradient of crossEntropyOp with respect to the logits:
// dlogits[n] = g·(softmax(logits[n]) − onehot(targets[n]))/N, for the scalar output gradient g.
// Inputs: logits (N, V), targets (N), g (scalar); output (N, V).
type crossEntropyGradOp struct{ opBase }

func (op crossEntropyGradOp) Arity() int { return 3 }
func (op crossEntropyGradOp) Type() hm.Type {
	return hm.NewFnType(tensorType(2), tensorType(1), hm.TypeVariable('a'), tensorType(2))
}
func (op crossEntropyGradOp) WriteHash(h hash.Hash) { fmt.Fprint(h, "oracle.crossEntropyGrad") }
func (op crossEntropyGradOp) Hashcode() uint32      { return hashOf(op) }
func (op crossEntropyGradOp) String() string        { return "CrossEntropyGrad" }
func (op crossEntropyGradOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("%v: input is not a shape: %v", op, in[0])
	}
	return s.Clone(), nil
}

func (op crossEntropyGradOp) Do(in ...gorgonia.Value) (gorgonia.Value, error) {
	if len(in) != 3 {
		return nil, fmt.Errorf("%v: want 3 inputs, got %d", op, len(in))
	}
	logits, targets, n, v, err := crossEntropyRows(in[0], in[1])
	if err != nil {
		return nil, err
	}
	g, _, err := float64s(in[2], "cross-entropy output gradient")
	if err != nil {
		return nil, err
	}
	if len(g) != 1 {
		return nil, fmt.Errorf("%v: output gradient has %d elements, want a scalar", op, len(g))
	}
	scale := g[0] / float64(n)
	d := make([]float64, len(logits))
	for r, t := range targets {
		row, dr := logits[r*v:(r+1)*v], d[r*v:(r+1)*v]
		lse := logSumExp(row)
		for j, x := range row {
			dr[j] = math.Exp(x-lse) * scale
		}
		dr[t] -= scale
	}
	return newValue(dtypeOf(in[0]), d, n, v)
}
