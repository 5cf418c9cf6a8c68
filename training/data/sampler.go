package data

import (
	"fmt"
	"math/bits"

	"github.com/sfsweep/sfsweep/fielderr"
)

// Sampler draws the training batches of a split. Row r of micro-batch micro of step step
// reads tokens[o : o+seqLen] as inputs and tokens[o+1 : o+seqLen+1] as targets, where the
// offset o is a counter-based hash of (seed, step, micro, r) scaled to the len(tokens)−seqLen
// valid starts. There is no sequential random state: any step's batch is computed directly,
// so a run resumed at step k reads exactly the batches it would have read.
type Sampler struct {
	tokens []uint16
	seqLen int
	starts uint64 // number of valid offsets: len(tokens) − seqLen
	seed   uint64
}

// NewSampler returns a sampler of sequences of seqLen tokens from tokens. The split must hold
// at least seqLen+1 tokens (the inputs and one more target).
func NewSampler(tokens []uint16, seqLen int, seed uint64) (*Sampler, error) {
	if seqLen < 1 {
		return nil, &fielderr.Error{Field: "seq_len", Value: seqLen, Reason: "must be ≥ 1"}
	}
	if len(tokens) < seqLen+1 {
		return nil, fmt.Errorf("data: sampler: split has %d tokens, fewer than seq_len + 1 = %d", len(tokens), seqLen+1)
	}
	return &Sampler{tokens: tokens, seqLen: seqLen, starts: uint64(len(tokens) - seqLen), seed: seed}, nil
}

// SeqLen returns the sequence length of the sampler.
func (s *Sampler) SeqLen() int { return s.seqLen }

// Offset returns the first token of row row of micro-batch micro of step step: the high bits
// of hash(seed, step, micro, row)·starts, uniform over [0, len(tokens)−seqLen) up to a bias
// below starts/2⁶⁴.
func (s *Sampler) Offset(step, micro, row int) int {
	h := counterHash(s.seed, uint64(step), uint64(micro), uint64(row))
	hi, _ := bits.Mul64(h, s.starts)
	return int(hi)
}

// Fill writes micro-batch micro of step step: len(tokens)/seqLen rows, row-major (B, T), with
// targets the inputs shifted by one token. tokens and targets must have the same length, a
// multiple of the sequence length; Fill panics otherwise, as copy would on a programming
// error.
func (s *Sampler) Fill(step, micro int, tokens, targets []int32) {
	T := s.seqLen
	if len(tokens) != len(targets) || len(tokens)%T != 0 {
		panic(fmt.Sprintf("data: Sampler.Fill: len(tokens) = %d, len(targets) = %d: want equal multiples of seq_len %d", len(tokens), len(targets), T))
	}
	for r := range len(tokens) / T {
		fillRow(s.tokens[s.Offset(step, micro, r):], tokens[r*T:(r+1)*T], targets[r*T:(r+1)*T])
	}
}

// fillRow copies src[0:T] into x and src[1:T+1] into y, T = len(x).
func fillRow(src []uint16, x, y []int32) {
	src = src[:len(x)+1]
	for i := range x {
		x[i] = int32(src[i])
		y[i] = int32(src[i+1])
	}
}

// counterHash mixes (seed, a, b, c) into 64 bits: each word is added to the state and the
// state passed through SplitMix64's finaliser, a bijection with full avalanche, so
// neighbouring counters give unrelated outputs.
func counterHash(seed, a, b, c uint64) uint64 {
	const golden = 0x9e3779b97f4a7c15
	h := mix64(seed + golden)
	h = mix64(h + a + golden)
	h = mix64(h + b + golden)
	h = mix64(h + c + golden)
	return h
}

// mix64 is the finaliser of SplitMix64 (Steele, Lea, Flood 2014).
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// EvalWindows is a fixed evaluation set: the first N non-overlapping windows of a split.
// Window j reads tokens[j·seqLen : (j+1)·seqLen] as inputs and the same shifted by one as
// targets, so the inputs of consecutive windows tile the split.
type EvalWindows struct {
	tokens    []uint16
	seqLen    int
	N         int // windows in the set: min(Requested, Fit)
	Requested int // windows asked for
	Fit       int // windows the split holds: (len(tokens)−1)/seqLen
}

// Windows returns the first n non-overlapping windows of seqLen tokens of a split (the paper
// evaluates on 3,200 validation sequences). Asking for more windows than fit is not an
// error: the set holds those that fit, and Capped reports it.
func Windows(tokens []uint16, seqLen, n int) (*EvalWindows, error) {
	if seqLen < 1 {
		return nil, &fielderr.Error{Field: "seq_len", Value: seqLen, Reason: "must be ≥ 1"}
	}
	if n < 1 {
		return nil, &fielderr.Error{Field: "windows", Value: n, Reason: "must be ≥ 1"}
	}
	if len(tokens) < seqLen+1 {
		return nil, fmt.Errorf("data: eval windows: split has %d tokens, fewer than seq_len + 1 = %d", len(tokens), seqLen+1)
	}
	fit := (len(tokens) - 1) / seqLen
	return &EvalWindows{tokens: tokens, seqLen: seqLen, N: min(n, fit), Requested: n, Fit: fit}, nil
}

// Capped reports whether fewer windows fit than were requested.
func (w *EvalWindows) Capped() bool { return w.N < w.Requested }

// Batches returns the number of batches of rows windows each that cover the set, the last
// possibly partial.
func (w *EvalWindows) Batches(rows int) int { return (w.N + rows - 1) / rows }

// Offset returns the first token of window j.
func (w *EvalWindows) Offset(j int) int { return j * w.seqLen }

// Fill writes batch i of len(tokens)/seqLen windows, row-major (B, T), and returns how many
// rows it filled: B, or fewer for the last batch (later rows are left as they were). It
// panics on buffers of different lengths or not a multiple of seqLen, or on i out of range.
func (w *EvalWindows) Fill(i int, tokens, targets []int32) int {
	T := w.seqLen
	if len(tokens) != len(targets) || len(tokens)%T != 0 || len(tokens) == 0 {
		panic(fmt.Sprintf("data: EvalWindows.Fill: len(tokens) = %d, len(targets) = %d: want equal non-zero multiples of seq_len %d", len(tokens), len(targets), T))
	}
	B := len(tokens) / T
	if i < 0 || i >= w.Batches(B) {
		panic(fmt.Sprintf("data: EvalWindows.Fill: batch %d out of range [0, %d)", i, w.Batches(B)))
	}
	rows := min(B, w.N-i*B)
	for r := range rows {
		fillRow(w.tokens[w.Offset(i*B+r):], tokens[r*T:(r+1)*T], targets[r*T:(r+1)*T])
	}
	return rows
}
