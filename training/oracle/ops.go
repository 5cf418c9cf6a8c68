package oracle

import (
	"fmt"
	"hash"
	"hash/fnv"
	"math"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// This file holds the custom gorgonia ops that replace built-ins which are wrong in
// gorgonia v0.9.18 (each item below says how) or have no built-in at all:
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

// ---- embedding gather ------------------------------------------------------------------

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

// ---- causal softmax --------------------------------------------------------------------

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

// ---- cross-entropy ---------------------------------------------------------------------

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

// ---- GELU ------------------------------------------------------------------------------

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
