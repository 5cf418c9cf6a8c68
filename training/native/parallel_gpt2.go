package native

import "github.com/sfsweep/sfsweep/internal/par"

// The parallel wrappers of the GPT-2 ops of ops_gpt2.go, in the conventions of parallel.go:
// row ops split the N rows; the position-embedding gradient splits the T positions (each
// worker walks the sequences in order); the LayerNorm and bias gradients, which are sums
// over rows, split fixed chunks of normChunk rows whose partial sums are then added in
// chunk order. No output element depends on where a range boundary falls.

func (k *kernels[T]) initGPT2() {
	k.posFwd, k.posBwd = k.positionForwardRange, k.positionBackwardRange
	k.lnFwd, k.lnBwd = k.layernormForwardRange, k.layernormBackwardRange
	k.biasFwd, k.biasBwd = k.biasForwardRange, k.biasBackwardRange
	k.geluFwd, k.geluBwd = k.geluForwardRange, k.geluBackwardRange
}

// positionForward adds wpe (Context,C) to out (N,C) by position.
func (k *kernels[T]) positionForward(out, wpe []T) {
	k.args = [6][]T{out, wpe}
	k.run(k.m.n, rowGrain, k.posFwd)
}

func (k *kernels[T]) positionForwardRange(lo, hi int) {
	out, wpe := k.args[0], k.args[1]
	c := k.m.cfg.Dim
	positionForward(out[lo*c:hi*c], wpe, lo, k.m.t, c)
}

// positionBackward adds to dwpe (Context,C); dout (N,C).
func (k *kernels[T]) positionBackward(dwpe, dout []T) {
	k.args = [6][]T{dwpe, dout}
	k.run(k.m.t, 1, k.posBwd)
}

func (k *kernels[T]) positionBackwardRange(lo, hi int) {
	positionBackward(k.args[0], k.args[1], k.m.b, k.m.t, k.m.cfg.Dim, lo, hi)
}

// layernormForward: out (N,C), mean, rstd (N), x (N,C), w, b (C)
func (k *kernels[T]) layernormForward(out, mean, rstd, x, w, b []T) {
	if b == nil { // a model without biases
		b = k.m.zeroC
	}
	k.args = [6][]T{out, mean, rstd, x, w, b}
	k.run(k.m.n, rowGrain, k.lnFwd)
}

func (k *kernels[T]) layernormForwardRange(lo, hi int) {
	a := &k.args
	c := k.m.cfg.Dim
	layernormForward(a[0][lo*c:hi*c], a[1][lo:hi], a[2][lo:hi], a[3][lo*c:hi*c], a[4], a[5], c, T(k.m.cfg.NormEps))
}

// layernormBackward adds to dx (N,C), dw and db (C; nil without biases); dout (N,C), x
// (N,C), w (C), mean, rstd (N).
func (k *kernels[T]) layernormBackward(dx, dw, db, dout, x, w, mean, rstd []T) {
	n, c := k.m.n, k.m.cfg.Dim
	chunks := par.Chunks(n, normChunk)
	k.args = [6][]T{dx, dout, x, w, mean, rstd}
	k.run(chunks, 1, k.lnBwd)
	wPart, bPart := k.m.act.dwPart, k.m.act.dbPart
	for j := range chunks {
		pw, pb := wPart[j*c:(j+1)*c], bPart[j*c:(j+1)*c]
		for i := range c {
			dw[i] += pw[i]
		}
		for i := range db {
			db[i] += pb[i]
		}
	}
}

func (k *kernels[T]) layernormBackwardRange(lo, hi int) {
	a := &k.args
	n, c := k.m.n, k.m.cfg.Dim
	for j := lo; j < hi; j++ {
		r0, r1 := j*normChunk, min((j+1)*normChunk, n)
		layernormBackward(a[0][r0*c:r1*c], k.m.act.dwPart[j*c:(j+1)*c], k.m.act.dbPart[j*c:(j+1)*c],
			a[1][r0*c:r1*c], a[2][r0*c:r1*c], a[3], a[4][r0:r1], a[5][r0:r1], c)
	}
}

// biasForward adds b (W) to every row of out (N,W); nothing for a model without biases
// (b nil).
func (k *kernels[T]) biasForward(out, b []T) {
	if len(b) == 0 {
		return
	}
	k.args = [6][]T{out, b}
	k.run(k.m.n, rowGrain, k.biasFwd)
}

func (k *kernels[T]) biasForwardRange(lo, hi int) {
	out, b := k.args[0], k.args[1]
	w := len(b)
	biasForward(out[lo*w:hi*w], b)
}

// biasBackward adds the sum over the rows of dout (N,W) to db (W); nothing for a model
// without biases (db nil).
func (k *kernels[T]) biasBackward(db, dout []T) {
	if len(db) == 0 {
		return
	}
	n, w := k.m.n, len(db)
	chunks := par.Chunks(n, normChunk)
	k.args = [6][]T{db, dout}
	k.run(chunks, 1, k.biasBwd)
	part := k.m.act.dbPart
	for j := range chunks {
		p := part[j*w : (j+1)*w]
		for i, v := range p {
			db[i] += v
		}
	}
}

func (k *kernels[T]) biasBackwardRange(lo, hi int) {
	db, dout := k.args[0], k.args[1]
	n, w := k.m.n, len(db)
	for j := lo; j < hi; j++ {
		r0, r1 := j*normChunk, min((j+1)*normChunk, n)
		biasBackward(k.m.act.dbPart[j*w:(j+1)*w], dout[r0*w:r1*w])
	}
}

// geluForward: out (N,F), x (N,F)
func (k *kernels[T]) geluForward(out, x []T) {
	k.args = [6][]T{out, x}
	k.run(k.m.n, rowGrain, k.geluFwd)
}

func (k *kernels[T]) geluForwardRange(lo, hi int) {
	f := k.m.cfg.Hidden
	geluForward(k.args[0][lo*f:hi*f], k.args[1][lo*f:hi*f])
}

// geluBackward: dx (N,F) overwritten, dout (N,F), x (N,F)
func (k *kernels[T]) geluBackward(dx, dout, x []T) {
	k.args = [6][]T{dx, dout, x}
	k.run(k.m.n, rowGrain, k.geluBwd)
}

func (k *kernels[T]) geluBackwardRange(lo, hi int) {
	f := k.m.cfg.Hidden
	a := &k.args
	geluBackward(a[0][lo*f:hi*f], a[1][lo*f:hi*f], a[2][lo*f:hi*f])
}
