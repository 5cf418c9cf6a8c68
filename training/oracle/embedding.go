package oracle

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// embeddingOp gathers rows of a (vocab, dim) table: out[n] = table[ids[n]], out (N, dim).
// Inputs: table (vocab, dim), ids (N) holding integral values of the table's dtype.
type embeddingOp struct {
	opBase
	vocab, dim int
}

func (op embeddingOp) Arity() int { return 2 }
func (op embeddingOp) Type() hm.Type {
	return hm.NewFnType(tensorType(2), tensorType(1), tensorType(2))
}
func (op embeddingOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	ids, ok := in[1].(tensor.Shape)
	if !ok || len(ids) != 1 {
		return nil, fmt.Errorf("%v: ids must be a vector, got %v", op, in[1])
	}
	return tensor.Shape{ids[0], op.dim}, nil
}
func (op embeddingOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "oracle.embedding(%d,%d)", op.vocab, op.dim)
}
func (op embeddingOp) Hashcode() uint32 { return hashOf(op) }
func (op embeddingOp) String() string   { return fmt.Sprintf("Embedding{%d,%d}", op.vocab, op.dim) }

func (op embeddingOp) Do(in ...gorgonia.Value) (gorgonia.Value, error) {
	if len(in) != 2 {
		return nil, fmt.Errorf("%v: want 2 inputs, got %d", op, len(in))
	}
	table, shape, err := float64s(in[0], "embedding table")
	if err != nil {
		return nil, err
	}
	if !shape.Eq(tensor.Shape{op.vocab, op.dim}) {
		return nil, fmt.Errorf("%v: table shape %v", op, shape)
	}
	idf, _, err := float64s(in[1], "embedding ids")
	if err != nil {
		return nil, err
	}
	ids, err := indices(idf, op.vocab, "embedding ids")
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(ids)*op.dim)
	for n, k := range ids {
		copy(out[n*op.dim:(n+1)*op.dim], table[k*op.dim:(k+1)*op.dim])
	}
	return newValue(dtypeOf(in[0]), out, len(ids), op.dim)
}

func (op embeddingOp) DiffWRT(inputs int) []bool { return []bool{true, false} }

func (op embeddingOp) SymDiff(inputs gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	if len(inputs) != 2 {
		return nil, fmt.Errorf("%v: SymDiff: want 2 inputs, got %d", op, len(inputs))
	}
	d, err := gorgonia.ApplyOp(embeddingGradOp(op), inputs[1], grad)
	if err != nil {
		return nil, fmt.Errorf("%v: SymDiff: %w", op, err)
	}
	return gorgonia.Nodes{d, nil}, nil
}

// embeddingGradOp scatters the gradient of the gathered rows back into the table:
// dtable[ids[n]] += g[n]. Inputs: ids (N), g (N, dim); output (vocab, dim).
type embeddingGradOp embeddingOp

func (op embeddingGradOp) Arity() int { return 2 }
func (op embeddingGradOp) Type() hm.Type {
	return hm.NewFnType(tensorType(1), tensorType(2), tensorType(2))
}
func (op embeddingGradOp) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.vocab, op.dim}, nil
}
func (op embeddingGradOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "oracle.embeddingGrad(%d,%d)", op.vocab, op.dim)
}
func (op embeddingGradOp) Hashcode() uint32 { return hashOf(op) }
func (op embeddingGradOp) String() string {
	return fmt.Sprintf("EmbeddingGrad{%d,%d}", op.vocab, op.dim)
}

func (op embeddingGradOp) Do(in ...gorgonia.Value) (gorgonia.Value, error) {
	if len(in) != 2 {
		return nil, fmt.Errorf("%v: want 2 inputs, got %d", op, len(in))
	}
	idf, _, err := float64s(in[0], "embedding ids")
	if err != nil {
		return nil, err
	}
	ids, err := indices(idf, op.vocab, "embedding ids")
	if err != nil {
		return nil, err
	}
	g, shape, err := float64s(in[1], "embedding output gradient")
	if err != nil {
		return nil, err
	}
	if !shape.Eq(tensor.Shape{len(ids), op.dim}) {
		return nil, fmt.Errorf("%v: gradient shape %v, want (%d, %d)", op, shape, len(ids), op.dim)
	}
	out := make([]float64, op.vocab*op.dim)
	for n, k := range ids {
		row := out[k*op.dim : (k+1)*op.dim]
		for j, v := range g[n*op.dim : (n+1)*op.dim] {
			row[j] += v
		}
	}
	return newValue(dtypeOf(in[1]), out, op.vocab, op.dim)
}
