package native

import "github.com/sfsweep/sfsweep/internal/par"

// kernels runs the ops of ops.go on the engine's pool. A parallel call allocates nothing:
// the caller stores the op's arguments in args (and ids), then the pool calls a method
// value made once in init on disjoint index ranges, and the method unpacks the arguments in
// the same order.
//
// Partitioning: row ops split the N = B·T rows, attention splits the B·H (batch, head)
// pairs, the embedding gradient splits the C columns (each worker walks all rows in order),
// and a norm-weight gradient splits fixed chunks of normChunk rows whose partial sums are
// then added in chunk order. No output element depends on where a range boundary falls.
type kernels[T Float] struct {
	m *Model[T]

	args   [6][]T // the current call's arguments, in the order of the op's signature
	ids    []int32
	losses []float64

	encFwd, encBwd, rmsFwd, rmsBwd, ropeFwd, ropeBwd func(lo, hi int)
	attFwd, attBwd, swiFwd, swiBwd, ceFwd, ceBwd     func(lo, hi int)
	// GPT-2 (parallel_gpt2.go)
	posFwd, posBwd, lnFwd, lnBwd, biasFwd, biasBwd, geluFwd, geluBwd func(lo, hi int)
}

// Minimum rows (or heads) per worker, below which a call runs inline.
const (
	rowGrain  = 32
	headGrain = 2
)

func (k *kernels[T]) init(m *Model[T]) {
	k.m = m
	k.encFwd, k.encBwd = k.encoderForwardRange, k.encoderBackwardRange
	k.rmsFwd, k.rmsBwd = k.rmsnormForwardRange, k.rmsnormBackwardRange
	k.ropeFwd, k.ropeBwd = k.ropeForwardRange, k.ropeBackwardRange
	k.attFwd, k.attBwd = k.attentionForwardRange, k.attentionBackwardRange
	k.swiFwd, k.swiBwd = k.swigluForwardRange, k.swigluBackwardRange
	k.ceFwd, k.ceBwd = k.crossEntropyForwardRange, k.crossEntropyBackwardRange
	k.initGPT2()
}

// run calls fn on the pool over [0, n) and then drops the references to the arguments.
func (k *kernels[T]) run(n, grain int, fn func(lo, hi int)) {
	k.m.pool.For(n, grain, fn)
	k.args, k.ids, k.losses = [6][]T{}, nil, nil
}

// encoderForward: out (N,C), tokens (N), emb (V,C)
func (k *kernels[T]) encoderForward(out []T, tokens []int32, emb []T) {
	k.args, k.ids = [6][]T{out, emb}, tokens
	k.run(k.m.n, rowGrain, k.encFwd)
}

func (k *kernels[T]) encoderForwardRange(lo, hi int) {
	out, emb := k.args[0], k.args[1]
	c := k.m.cfg.Dim
	encoderForward(out[lo*c:hi*c], k.ids[lo:hi], emb, c)
}

// encoderBackward adds to demb (V,C); dout (N,C), tokens (N)
func (k *kernels[T]) encoderBackward(demb, dout []T, tokens []int32) {
	k.args, k.ids = [6][]T{demb, dout}, tokens
	k.run(k.m.cfg.Dim, 1, k.encBwd)
}

func (k *kernels[T]) encoderBackwardRange(lo, hi int) {
	demb, dout := k.args[0], k.args[1]
	encoderBackward(demb, dout, k.ids, k.m.cfg.Dim, lo, hi)
}

// rmsnormForward: out (N,C), rstd (N), x (N,C), w (C)
func (k *kernels[T]) rmsnormForward(out, rstd, x, w []T) {
	k.args = [6][]T{out, rstd, x, w}
	k.run(k.m.n, rowGrain, k.rmsFwd)
}

func (k *kernels[T]) rmsnormForwardRange(lo, hi int) {
	out, rstd, x, w := k.args[0], k.args[1], k.args[2], k.args[3]
	c := k.m.cfg.Dim
	rmsnormForward(out[lo*c:hi*c], rstd[lo:hi], x[lo*c:hi*c], w, c, T(k.m.cfg.NormEps))
}

// rmsnormBackward adds to dx (N,C) and dw (C); dout (N,C), x (N,C), w (C), rstd (N).
func (k *kernels[T]) rmsnormBackward(dx, dw, dout, x, w, rstd []T) {
	n, c := k.m.n, k.m.cfg.Dim
	chunks := par.Chunks(n, normChunk)
	k.args = [6][]T{dx, dout, x, w, rstd}
	k.run(chunks, 1, k.rmsBwd)
	part := k.m.act.dwPart
	for j := range chunks {
		p := part[j*c : (j+1)*c]
		for i, v := range p {
			dw[i] += v
		}
	}
}

func (k *kernels[T]) rmsnormBackwardRange(lo, hi int) {
	dx, dout, x, w, rstd := k.args[0], k.args[1], k.args[2], k.args[3], k.args[4]
	n, c := k.m.n, k.m.cfg.Dim
	for j := lo; j < hi; j++ {
		r0, r1 := j*normChunk, min((j+1)*normChunk, n)
		rmsnormBackward(dx[r0*c:r1*c], k.m.act.dwPart[j*c:(j+1)*c], dout[r0*c:r1*c], x[r0*c:r1*c], w, rstd[r0:r1], c)
	}
}

// ropeForward rotates q and k of qkv (N,3C) in place.
func (k *kernels[T]) ropeForward(qkv []T) {
	k.args = [6][]T{qkv}
	k.run(k.m.n, rowGrain, k.ropeFwd)
}

func (k *kernels[T]) ropeForwardRange(lo, hi int) {
	m := k.m
	c := m.cfg.Dim
	ropeForward(k.args[0][lo*3*c:hi*3*c], m.cos, m.sin, lo, m.t, c, m.cfg.Heads)
}

// ropeBackward rotates the gradients of q and k of dqkv (N,3C) back, in place.
func (k *kernels[T]) ropeBackward(dqkv []T) {
	k.args = [6][]T{dqkv}
	k.run(k.m.n, rowGrain, k.ropeBwd)
}

func (k *kernels[T]) ropeBackwardRange(lo, hi int) {
	m := k.m
	c := m.cfg.Dim
	ropeBackward(k.args[0][lo*3*c:hi*3*c], m.cos, m.negSin, lo, m.t, c, m.cfg.Heads)
}

// attentionForward: y (N,C), att (B,H,T,T), qkv (N,3C)
func (k *kernels[T]) attentionForward(y, att, qkv []T) {
	k.args = [6][]T{y, att, qkv}
	k.run(k.m.b*k.m.cfg.Heads, headGrain, k.attFwd)
}

// Attention scratch: a range of pairs [lo, hi) uses the slots of pair lo, which no other
// range touches, for all its pairs, so the scratch stays in cache.

func (k *kernels[T]) attentionForwardRange(lo, hi int) {
	y, att, qkv := k.args[0], k.args[1], k.args[2]
	m := k.m
	d := m.cfg.HeadDim()
	kT := m.act.kvT[lo*d*m.t : (lo+1)*d*m.t]
	attentionForward(y, att, qkv, kT, m.t, m.cfg.Dim, m.cfg.Heads, lo, hi)
}

// attentionBackward: dqkv (N,3C) overwritten, datt (B,H,T,T) scratch (one (T,T) slot per
// range used), dy (N,C), att (B,H,T,T), qkv (N,3C)
func (k *kernels[T]) attentionBackward(dqkv, datt, dy, att, qkv []T) {
	k.args = [6][]T{dqkv, datt, dy, att, qkv}
	k.run(k.m.b*k.m.cfg.Heads, headGrain, k.attBwd)
}

func (k *kernels[T]) attentionBackwardRange(lo, hi int) {
	dqkv, datt, dy, att, qkv := k.args[0], k.args[1], k.args[2], k.args[3], k.args[4]
	m := k.m
	d := m.cfg.HeadDim()
	datt, vT := datt[lo*m.t*m.t:(lo+1)*m.t*m.t], m.act.kvT[lo*d*m.t:(lo+1)*d*m.t]
	attentionBackward(dqkv, datt, dy, att, qkv, vT, m.t, m.cfg.Dim, m.cfg.Heads, lo, hi)
}

// swigluForward: out (N,F), gu (N,2F)
func (k *kernels[T]) swigluForward(out, gu []T) {
	k.args = [6][]T{out, gu}
	k.run(k.m.n, rowGrain, k.swiFwd)
}

func (k *kernels[T]) swigluForwardRange(lo, hi int) {
	out, gu := k.args[0], k.args[1]
	f := k.m.cfg.Hidden
	swigluForward(out[lo*f:hi*f], gu[lo*2*f:hi*2*f], f)
}

// swigluBackward: dgu (N,2F) overwritten, dout (N,F), gu (N,2F)
func (k *kernels[T]) swigluBackward(dgu, dout, gu []T) {
	k.args = [6][]T{dgu, dout, gu}
	k.run(k.m.n, rowGrain, k.swiBwd)
}

func (k *kernels[T]) swigluBackwardRange(lo, hi int) {
	dgu, dout, gu := k.args[0], k.args[1], k.args[2]
	f := k.m.cfg.Hidden
	swigluBackward(dgu[lo*2*f:hi*2*f], dout[lo*f:hi*f], gu[lo*2*f:hi*2*f], f)
}

// crossEntropyForward: logits (N,V) become probabilities; losses (N), targets (N)
func (k *kernels[T]) crossEntropyForward(logits []T, losses []float64, targets []int32) {
	k.args, k.losses, k.ids = [6][]T{logits}, losses, targets
	k.run(k.m.n, rowGrain, k.ceFwd)
}

func (k *kernels[T]) crossEntropyForwardRange(lo, hi int) {
	v := k.m.cfg.Vocab
	crossEntropyForward(k.args[0][lo*v:hi*v], k.losses[lo:hi], k.ids[lo:hi], v)
}

// crossEntropyBackward: probs (N,V) become the gradient of the mean loss; targets (N)
func (k *kernels[T]) crossEntropyBackward(probs []T, targets []int32) {
	k.args, k.ids = [6][]T{probs}, targets
	k.run(k.m.n, rowGrain, k.ceBwd)
}

func (k *kernels[T]) crossEntropyBackwardRange(lo, hi int) {
	v := k.m.cfg.Vocab
	crossEntropyBackward(k.args[0][lo*v:hi*v], k.ids[lo:hi], v, k.m.n)
}
