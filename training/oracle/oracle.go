// Package oracle builds the language model as a gorgonia expression graph and
// differentiates it symbolically: an independent reference for the loss and gradients of
// the native engine (package training/native), written without sharing any of its code.
//
// It uses gorgonia v0.9.18, which has silent bugs (wrong numbers, no error), measured
// before building on it: SoftMax and LogSoftMax stabilise with the tensor's first element,
// not the row's max; LogSoftMax beside SoftMax of the same input is merged into it;
// InverseSqrt, ByIndices on the innermost axis, Concat at offsets ≥ 256 and Dropout have
// wrong gradients; and nodes that hash alike (unnamed same-shape matrices, equal names) are
// merged into one. The graph uses only the built-ins found correct in those measurements
// and in this package's tests — Mul (2-D), BatchedMatMul, Transpose, Reshape, Add,
// HadamardProd, BroadcastHadamardProd, BroadcastAdd, BroadcastSub, Square, Mean, Sqrt,
// Inverse, Sigmoid — and custom ops (ops.go) for the embedding gather, the causal softmax,
// the cross-entropy and the exact (erf) GELU.
//
// Two architectures: LLaMA as llm-baselines (RMSNorm, RoPE, SwiGLU) and GPT-2 as its base
// model, nanoGPT's (learned position embedding, LayerNorm with biased variance, exact GELU,
// biases where the config has them); in both the LM head is the token embedding unless the
// config is untied.
package oracle

import (
	"fmt"
	"math"
	"sync"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/sfsweep/sfsweep/training/model"
)

// Model is the language model (LLaMA or GPT-2) as a gorgonia graph: the independent reference for the
// native engine's gradients. One Model holds one graph for a fixed batch size and sequence
// length; it is reusable across calls and safe for concurrent use (calls are serialised).
type Model struct {
	cfg           model.Config
	layout        model.Layout
	batch, seqLen int
	dtype         tensor.Dtype

	mu      sync.Mutex
	g       *gorgonia.ExprGraph
	vm      gorgonia.VM
	params  []*gorgonia.Node // one per layout tensor, in layout order
	pvals   []tensor.Tensor  // the values bound to params
	tokens  *gorgonia.Node   // (B·T) token ids, as values of dtype
	targets *gorgonia.Node   // (B·T) next-token targets, as values of dtype
	tvals   [2]tensor.Tensor // the values bound to tokens and targets
	loss    *gorgonia.Node   // scalar mean cross-entropy
	grads   gorgonia.Nodes   // ∂loss/∂params, in layout order
}

// New builds the graph of cfg for batch sequences of seqLen tokens with elements of dtype
// (tensor.Float64 or tensor.Float32), for the LLaMA or the GPT-2 architecture.
// batch·seqLen must be at least 2 (gorgonia treats a (1, n) matrix as a vector).
func New(cfg model.Config, batch, seqLen int, dtype tensor.Dtype) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("oracle: config: %w", err)
	}
	if cfg.Arch != model.LLaMA && cfg.Arch != model.GPT2 {
		return nil, fmt.Errorf("oracle: architecture %q is not supported (only %q and %q)", cfg.Arch, model.LLaMA, model.GPT2)
	}
	if batch < 1 || seqLen < 1 || seqLen > cfg.Context {
		return nil, fmt.Errorf("oracle: batch %d, sequence length %d: want batch ≥ 1 and 1 ≤ seqLen ≤ context %d", batch, seqLen, cfg.Context)
	}
	if batch*seqLen < 2 {
		return nil, fmt.Errorf("oracle: batch %d × sequence length %d: want at least 2 tokens", batch, seqLen)
	}
	if dtype != tensor.Float64 && dtype != tensor.Float32 {
		return nil, fmt.Errorf("oracle: dtype %v: want Float64 or Float32", dtype)
	}
	m := &Model{cfg: cfg, layout: cfg.Layout(), batch: batch, seqLen: seqLen, dtype: dtype}
	if err := m.build(); err != nil {
		return nil, fmt.Errorf("oracle: build graph (batch %d, seqLen %d, %v): %w", batch, seqLen, dtype, err)
	}
	return m, nil
}

// LossAndGrad returns the mean next-token cross-entropy over all batch·seqLen positions and
// its gradient with respect to every parameter. params and grad are flat buffers in
// cfg.Layout() order; tokens and targets are row-major (batch, seqLen). For a Float32 graph
// params are rounded to float32 and the results widened back to float64.
func (m *Model) LossAndGrad(params []float64, tokens, targets []int32) (loss float64, grad []float64, err error) {
	n := m.batch * m.seqLen
	if len(params) != m.layout.Size {
		return 0, nil, fmt.Errorf("oracle: %d parameters, want %d", len(params), m.layout.Size)
	}
	for _, in := range []struct {
		name string
		ids  []int32
		val  tensor.Tensor
	}{{"tokens", tokens, m.tvals[0]}, {"targets", targets, m.tvals[1]}} {
		if len(in.ids) != n {
			return 0, nil, fmt.Errorf("oracle: %d %s, want batch %d × seqLen %d = %d", len(in.ids), in.name, m.batch, m.seqLen, n)
		}
		for i, id := range in.ids {
			if id < 0 || int(id) >= m.cfg.Vocab {
				return 0, nil, fmt.Errorf("oracle: %s[%d] = %d: outside vocabulary [0, %d)", in.name, i, id, m.cfg.Vocab)
			}
		}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	for i, t := range m.layout.Tensors {
		setFloats(m.pvals[i], params[t.Offset:t.Offset+t.Size])
	}
	for k, ids := range [][]int32{tokens, targets} {
		f := make([]float64, len(ids))
		for i, id := range ids {
			f[i] = float64(id)
		}
		setFloats(m.tvals[k], f)
	}
	// Bind the values again: the machine must read them, whatever it did with them last run.
	for i, p := range m.params {
		if err := gorgonia.Let(p, m.pvals[i]); err != nil {
			return 0, nil, fmt.Errorf("oracle: bind %s: %w", m.layout.Tensors[i].Name, err)
		}
	}
	if err := gorgonia.Let(m.tokens, m.tvals[0]); err != nil {
		return 0, nil, fmt.Errorf("oracle: bind tokens: %w", err)
	}
	if err := gorgonia.Let(m.targets, m.tvals[1]); err != nil {
		return 0, nil, fmt.Errorf("oracle: bind targets: %w", err)
	}

	m.vm.Reset()
	if err := m.vm.RunAll(); err != nil {
		return 0, nil, fmt.Errorf("oracle: run graph: %w", err)
	}
	lv, _, err := float64s(m.loss.Value(), "loss")
	if err != nil || len(lv) != 1 {
		return 0, nil, fmt.Errorf("oracle: read loss: %v (%d values)", err, len(lv))
	}
	grad = make([]float64, m.layout.Size)
	for i, t := range m.layout.Tensors {
		gv, _, err := float64s(m.grads[i].Value(), "gradient of "+t.Name)
		if err != nil {
			return 0, nil, fmt.Errorf("oracle: read gradient: %w", err)
		}
		if len(gv) != t.Size {
			return 0, nil, fmt.Errorf("oracle: gradient of %s has %d elements, want %d", t.Name, len(gv), t.Size)
		}
		copy(grad[t.Offset:], gv)
	}
	return lv[0], grad, nil
}

// setFloats copies src into the backing array of t (float64 or float32).
func setFloats(t tensor.Tensor, src []float64) {
	switch d := t.Data().(type) {
	case []float64:
		copy(d, src)
	case []float32:
		for i, v := range src {
			d[i] = float32(v)
		}
	}
}

// buildError carries an error out of the graph builders through panic; build recovers it.
type buildError struct{ err error }

// must returns a function that returns n, or panics with a buildError naming what failed:
// must("step")(gorgonia.Op(…)).
func must(what string) func(n *gorgonia.Node, err error) *gorgonia.Node {
	return func(n *gorgonia.Node, err error) *gorgonia.Node {
		if err != nil {
			panic(buildError{fmt.Errorf("%s: %w", what, err)})
		}
		return n
	}
}

// build constructs the forward graph and its symbolic gradient and compiles a tape machine.
// Shapes in comments: N = batch·seqLen, d = Dim, H = Heads, hd = d/H, F = Hidden, V = Vocab.
func (m *Model) build() (err error) {
	defer func() {
		if r := recover(); r != nil {
			if be, ok := r.(buildError); ok {
				err = be.err
				return
			}
			err = fmt.Errorf("gorgonia panicked: %v", r)
		}
	}()
	c, dt := m.cfg, m.dtype
	B, T, N, d := m.batch, m.seqLen, m.batch*m.seqLen, c.Dim
	H, hd := c.Heads, c.HeadDim()
	g := gorgonia.NewGraph()
	m.g = g

	// Inputs. Every input node has a unique name: gorgonia merges input nodes by name/shape.
	m.tokens = gorgonia.NewVector(g, dt, gorgonia.WithShape(N), gorgonia.WithName("in.tokens"))
	m.targets = gorgonia.NewVector(g, dt, gorgonia.WithShape(N), gorgonia.WithName("in.targets"))
	for k := range m.tvals {
		m.tvals[k] = tensor.New(tensor.Of(dt), tensor.WithShape(N))
	}
	m.params = make([]*gorgonia.Node, len(m.layout.Tensors))
	m.pvals = make([]tensor.Tensor, len(m.layout.Tensors))
	param := map[string]*gorgonia.Node{}
	for i, t := range m.layout.Tensors {
		name := "param." + t.Name
		switch len(t.Shape) {
		case 1:
			m.params[i] = gorgonia.NewVector(g, dt, gorgonia.WithShape(t.Shape...), gorgonia.WithName(name))
		case 2:
			m.params[i] = gorgonia.NewMatrix(g, dt, gorgonia.WithShape(t.Shape...), gorgonia.WithName(name))
		default:
			return fmt.Errorf("parameter %s has shape %v: want 1-D or 2-D", t.Name, t.Shape)
		}
		m.pvals[i] = tensor.New(tensor.Of(dt), tensor.WithShape(t.Shape...))
		param[t.Name] = m.params[i]
	}

	eps := m.scalar(c.NormEps)
	attScale := m.scalar(1 / math.Sqrt(float64(hd)))

	// linear applies a torch-style weight w (out, in): x (N, in) → x·wᵀ (N, out).
	linear := func(what string, x, w *gorgonia.Node) *gorgonia.Node {
		wt := must(what + " transpose")(gorgonia.Transpose(w, 1, 0))
		return must(what + " matmul")(gorgonia.Mul(x, wt))
	}
	// rowVector reshapes a (n) vector to (1, n), to broadcast over rows.
	rowVector := func(what string, v *gorgonia.Node) *gorgonia.Node {
		return must(what + " reshape")(gorgonia.Reshape(v, tensor.Shape{1, v.Shape().TotalSize()}))
	}
	// linearBias applies a torch-style weight w (out, in) and bias b (out): x·wᵀ + b; x·wᵀ
	// for a model without biases (b nil).
	linearBias := func(what string, x, w, b *gorgonia.Node) *gorgonia.Node {
		if b == nil {
			return linear(what, x, w)
		}
		return must(what + " bias")(gorgonia.BroadcastAdd(linear(what, x, w), rowVector(what+" bias", b), nil, []byte{0}))
	}
	// invRMS returns (mean over the rows of x' + ε)^(−1/2) as an (N, 1) column, where
	// x' = x² (given as sq). InverseSqrt has a wrong gradient in v0.9.18, so the inverse
	// square root is Inverse(Sqrt(·)).
	invRMS := func(what string, sq *gorgonia.Node) *gorgonia.Node {
		ms := must(what + " mean")(gorgonia.Mean(sq, 1)) // (N)
		r := must(what + " +eps")(gorgonia.Add(ms, eps))
		r = must(what + " sqrt")(gorgonia.Sqrt(r))
		r = must(what + " inverse")(gorgonia.Inverse(r))
		return must(what + " reshape")(gorgonia.Reshape(r, tensor.Shape{N, 1}))
	}
	// rmsnorm: x (N, d), w (d) → x·(mean(x²)+ε)^(−1/2)·w.
	rmsnorm := func(what string, x, w *gorgonia.Node) *gorgonia.Node {
		sq := must(what + " square")(gorgonia.Square(x))
		r := invRMS(what, sq)
		xn := must(what + " scale rows")(gorgonia.BroadcastHadamardProd(x, r, nil, []byte{1}))
		return must(what + " weight")(gorgonia.BroadcastHadamardProd(xn, rowVector(what+" weight", w), nil, []byte{0}))
	}
	// layernorm: x (N, d), w, b (d) → (x − mean(x))·(var(x)+ε)^(−1/2)·w + b, with the biased
	// variance mean((x − mean(x))²) of torch.nn.LayerNorm.
	layernorm := func(what string, x, w, b *gorgonia.Node) *gorgonia.Node {
		mu := must(what + " mean")(gorgonia.Mean(x, 1)) // (N)
		mu = must(what + " mean reshape")(gorgonia.Reshape(mu, tensor.Shape{N, 1}))
		xc := must(what + " centre")(gorgonia.BroadcastSub(x, mu, nil, []byte{1}))
		sq := must(what + " square")(gorgonia.Square(xc))
		r := invRMS(what+" var", sq)
		xn := must(what + " scale rows")(gorgonia.BroadcastHadamardProd(xc, r, nil, []byte{1}))
		y := must(what + " weight")(gorgonia.BroadcastHadamardProd(xn, rowVector(what+" weight", w), nil, []byte{0}))
		if b == nil { // a model without biases
			return y
		}
		return must(what + " bias")(gorgonia.BroadcastAdd(y, rowVector(what+" bias", b), nil, []byte{0}))
	}
	// heads: (N, d) → (B·H, T, hd).
	heads := func(what string, x *gorgonia.Node) *gorgonia.Node {
		x = must(what + " split")(gorgonia.Reshape(x, tensor.Shape{B, T, H, hd}))
		x = must(what + " transpose")(gorgonia.Transpose(x, 0, 2, 1, 3))
		return must(what + " merge")(gorgonia.Reshape(x, tensor.Shape{B * H, T, hd}))
	}
	// unheads: (B·H, T, hd) → (N, d).
	unheads := func(what string, x *gorgonia.Node) *gorgonia.Node {
		x = must(what + " split")(gorgonia.Reshape(x, tensor.Shape{B, H, T, hd}))
		x = must(what + " transpose")(gorgonia.Transpose(x, 0, 2, 1, 3))
		return must(what + " merge")(gorgonia.Reshape(x, tensor.Shape{N, d}))
	}
	// attention: q, k, v (B·H, T, hd) → causal softmax(q·kᵀ/√hd)·v as (N, d).
	attention := func(what string, q, k, v *gorgonia.Node) *gorgonia.Node {
		s := must(what + " scores")(gorgonia.BatchedMatMul(q, k, false, true)) // (B·H, T, T)
		s = must(what + " scores scale")(gorgonia.HadamardProd(s, attScale))
		a := must(what + " softmax")(gorgonia.ApplyOp(causalSoftmaxOp{}, s))
		return unheads(what+" y", must(what+" att·v")(gorgonia.BatchedMatMul(a, v)))
	}

	// The (3d, d) matrices that select q, k and v from the fused c_attn output (columns
	// [0,d), [d,2d), [2d,3d)). A selection matmul is exact and avoids Slice/Concat, which are
	// wrong at offsets that are multiples of 256 in v0.9.18.
	var sel [3]*gorgonia.Node
	for part, name := range []string{"q", "k", "v"} {
		s := make([]float64, 3*d*d)
		for i := range d {
			s[(part*d+i)*d+i] = 1
		}
		sel[part] = m.constant("const.c_attn.select."+name, s, 3*d, d)
	}
	wte := param["transformer.wte.weight"]
	head := param[c.Head()] // wte itself when tied: the same node feeds the gather and the head

	var logits *gorgonia.Node // (N, V)
	switch c.Arch {
	case model.LLaMA:
		// Constant inputs: the RoPE tables and the rotate_half matrix.
		cosT, sinT, rot := ropeTables(c, B, T)
		ropeCos := m.constant("const.rope.cos", cosT, N, d)
		ropeSin := m.constant("const.rope.sin", sinT, N, d)
		ropeRot := m.constant("const.rope.rot", rot, d, d)
		// rope: x (N, d) → x⊙cos + (x·R)⊙sin, R the rotate_half permutation within each head.
		rope := func(what string, x *gorgonia.Node) *gorgonia.Node {
			a := must(what + " cos")(gorgonia.HadamardProd(x, ropeCos))
			r := must(what + " rotate")(gorgonia.Mul(x, ropeRot))
			b := must(what + " sin")(gorgonia.HadamardProd(r, ropeSin))
			return must(what)(gorgonia.Add(a, b))
		}

		x := must("embedding")(gorgonia.ApplyOp(embeddingOp{vocab: c.Vocab, dim: d}, wte, m.tokens)) // (N, d)
		for l := range c.Layers {
			p := fmt.Sprintf("transformer.h.%d.", l)
			at := func(s string) string { return p + s }

			h := rmsnorm(at("ln_1"), x, param[at("ln_1.weight")])
			qkv := linear(at("c_attn"), h, param[at("attn.c_attn.weight")]) // (N, 3d)
			q := heads(at("q"), rope(at("q rope"), must(at("select q"))(gorgonia.Mul(qkv, sel[0]))))
			k := heads(at("k"), rope(at("k rope"), must(at("select k"))(gorgonia.Mul(qkv, sel[1]))))
			v := heads(at("v"), must(at("select v"))(gorgonia.Mul(qkv, sel[2])))
			y := attention(at("att"), q, k, v) // (N, d)
			x = must(at("residual 1"))(gorgonia.Add(x, linear(at("attn.c_proj"), y, param[at("attn.c_proj.weight")])))

			h = rmsnorm(at("ln_2"), x, param[at("ln_2.weight")])
			gate := linear(at("w1"), h, param[at("mlp.w1.weight")]) // (N, F)
			up := linear(at("w2"), h, param[at("mlp.w2.weight")])
			sig := must(at("sigmoid"))(gorgonia.Sigmoid(gate))
			silu := must(at("silu"))(gorgonia.HadamardProd(gate, sig))
			act := must(at("swiglu"))(gorgonia.HadamardProd(silu, up))
			x = must(at("residual 2"))(gorgonia.Add(x, linear(at("mlp.c_proj"), act, param[at("mlp.c_proj.weight")])))
		}
		logits = linear("head", rmsnorm("ln_f", x, param["transformer.ln_f.weight"]), head)

	case model.GPT2:
		// Constant input: the position of every row.
		pos := make([]float64, N)
		for n := range pos {
			pos[n] = float64(n % T)
		}
		pv, err := newValue(dt, pos, N)
		if err != nil {
			return fmt.Errorf("positions: %w", err)
		}
		positions := gorgonia.NewVector(g, dt, gorgonia.WithShape(N), gorgonia.WithName("const.positions"), gorgonia.WithValue(pv))

		tok := must("wte")(gorgonia.ApplyOp(embeddingOp{vocab: c.Vocab, dim: d}, wte, m.tokens))                               // (N, d)
		pe := must("wpe")(gorgonia.ApplyOp(embeddingOp{vocab: c.Context, dim: d}, param["transformer.wpe.weight"], positions)) // (N, d)
		x := must("embedding")(gorgonia.Add(tok, pe))
		for l := range c.Layers {
			p := fmt.Sprintf("transformer.h.%d.", l)
			at := func(s string) string { return p + s }

			h := layernorm(at("ln_1"), x, param[at("ln_1.weight")], param[at("ln_1.bias")])
			qkv := linearBias(at("c_attn"), h, param[at("attn.c_attn.weight")], param[at("attn.c_attn.bias")]) // (N, 3d)
			q := heads(at("q"), must(at("select q"))(gorgonia.Mul(qkv, sel[0])))
			k := heads(at("k"), must(at("select k"))(gorgonia.Mul(qkv, sel[1])))
			v := heads(at("v"), must(at("select v"))(gorgonia.Mul(qkv, sel[2])))
			y := attention(at("att"), q, k, v) // (N, d)
			x = must(at("residual 1"))(gorgonia.Add(x, linearBias(at("attn.c_proj"), y, param[at("attn.c_proj.weight")], param[at("attn.c_proj.bias")])))

			h = layernorm(at("ln_2"), x, param[at("ln_2.weight")], param[at("ln_2.bias")])
			fc := linearBias(at("c_fc"), h, param[at("mlp.c_fc.weight")], param[at("mlp.c_fc.bias")]) // (N, F)
			act := must(at("gelu"))(gorgonia.ApplyOp(geluOp{}, fc))
			x = must(at("residual 2"))(gorgonia.Add(x, linearBias(at("mlp.c_proj"), act, param[at("mlp.c_proj.weight")], param[at("mlp.c_proj.bias")])))
		}
		logits = linear("head", layernorm("ln_f", x, param["transformer.ln_f.weight"], param["transformer.ln_f.bias"]), head)

	default:
		return fmt.Errorf("architecture %q: no graph", c.Arch)
	}
	m.loss = must("cross-entropy")(gorgonia.ApplyOp(crossEntropyOp{}, logits, m.targets))

	if m.grads, err = gorgonia.Grad(m.loss, m.params...); err != nil {
		return fmt.Errorf("symbolic gradient: %w", err)
	}
	m.vm = gorgonia.NewTapeMachine(g)
	return nil
}

// constant adds an input node called name holding data with the given shape; it takes no
// part in the gradient.
func (m *Model) constant(name string, data []float64, shape ...int) *gorgonia.Node {
	v, err := newValue(m.dtype, data, shape...)
	if err != nil {
		panic(buildError{fmt.Errorf("%s: %w", name, err)})
	}
	return gorgonia.NewMatrix(m.g, m.dtype, gorgonia.WithShape(shape...), gorgonia.WithName(name), gorgonia.WithValue(v))
}

// scalar returns a constant scalar of the graph's dtype.
func (m *Model) scalar(v float64) *gorgonia.Node {
	if m.dtype == tensor.Float32 {
		return gorgonia.NewConstant(float32(v))
	}
	return gorgonia.NewConstant(v)
}

// ropeTables returns the RoPE tables of the (batch·seqLen, d) activations, row n at
// position n mod seqLen, and the (d, d) matrix R with x·R = rotate_half(x) in every head:
// for a head at offset o and i < hd/2, (x·R)[o+i] = −x[o+i+hd/2] and (x·R)[o+i+hd/2] = x[o+i].
// The angle of pair i at position t is t·θ^(−2i/hd).
func ropeTables(c model.Config, batch, seqLen int) (cos, sin, rot []float64) {
	d, hd := c.Dim, c.HeadDim()
	half := hd / 2
	N := batch * seqLen
	cos, sin = make([]float64, N*d), make([]float64, N*d)
	for n := range N {
		t := float64(n % seqLen)
		for o := 0; o < d; o += hd {
			for i := range half {
				ang := t * math.Pow(c.RopeTheta, -2*float64(i)/float64(hd))
				cs, sn := math.Cos(ang), math.Sin(ang)
				cos[n*d+o+i], cos[n*d+o+i+half] = cs, cs
				sin[n*d+o+i], sin[n*d+o+i+half] = sn, sn
			}
		}
	}
	rot = make([]float64, d*d)
	for o := 0; o < d; o += hd {
		for i := range half {
			rot[(o+i+half)*d+o+i] = -1 // input o+i+half → output o+i, negated
			rot[(o+i)*d+o+i+half] = 1  // input o+i → output o+i+half
		}
	}
	return cos, sin, rot
}
