package cuda

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
)

// encoderBackwardMirror is encoder_backward (kernels.cu): demb[t] += dout[r] for each row r
// of token t, in row order.
func encoderBackwardMirror(demb, dout []float32, tokens []int32, c int) {
	for r, t := range tokens {
		for j := range c {
			demb[int(t)*c+j] += dout[r*c+j]
		}
	}
}

// encoderBackwardRowsMirror is encoder_backward_rows (embedding.cu) on embedIndex's idx:
// block by block, column by column, each token's rows in the listed order.
func encoderBackwardRowsMirror(demb, dout []float32, idx []int32, n, c int) {
	rows, ids, off := idx[:n], idx[n:2*n], idx[2*n:3*n+1]
	for u := range int(idx[3*n+1]) {
		d := demb[int(ids[u])*c:]
		for j := range c {
			acc := d[j]
			for _, r := range rows[off[u]:off[u+1]] {
				acc += dout[int(r)*c+j]
			}
			d[j] = acc
		}
	}
}

// embedCase is a micro-batch of n tokens of a vocabulary of v: repeated (a few frequent
// tokens, as text has) or all distinct or all one token.
func embedCase(kind string, n, v int, seed uint64) []int32 {
	rng := rand.New(rand.NewPCG(seed, 3))
	toks := make([]int32, n)
	for i := range toks {
		switch kind {
		case "one":
			toks[i] = int32(v - 1)
		case "distinct":
			toks[i] = int32((i * 7919) % v) // n ≤ v and 7919 prime to v
		default:
			if rng.IntN(3) == 0 {
				toks[i] = int32(rng.IntN(4))
			} else {
				toks[i] = int32(rng.IntN(v))
			}
		}
	}
	return toks
}

// embedIndex lists each token's rows ascending, every row once, the tokens in the order
// they first appear, and leaves its scratch zero; the gradient it gives is bitwise
// encoder_backward's, whose row order matters in float32 (a reversed order gives other
// bits).
func TestEmbedIndex(t *testing.T) {
	for _, tc := range []struct {
		kind string
		n, v int
	}{{"text", 1, 5}, {"text", 100, 5}, {"text", 512, 50304}, {"one", 37, 1000}, {"distinct", 600, 1000}, {"text", 8192, 50304}} {
		toks := embedCase(tc.kind, tc.n, tc.v, uint64(tc.n))
		n := tc.n
		idx, seen := make([]int32, 3*n+2), make([]int32, tc.v)
		for i := range idx {
			idx[i] = -7 // what a staging buffer held before
		}
		embedIndex(toks, idx, seen)
		if slices.ContainsFunc(seen, func(s int32) bool { return s != 0 }) {
			t.Fatalf("%s n=%d: the scratch is not zero again", tc.kind, n)
		}
		count := int(idx[3*n+1])
		rows, ids, off := idx[:n], idx[n:n+count], idx[2*n:2*n+count+1]
		// the naive listing: tokens in order of first appearance, rows ascending
		var want, wantIDs []int32
		for _, tk := range toks {
			if !slices.Contains(wantIDs, tk) {
				wantIDs = append(wantIDs, tk)
			}
		}
		for _, tk := range wantIDs {
			for r, t2 := range toks {
				if t2 == tk {
					want = append(want, int32(r))
				}
			}
		}
		if !slices.Equal(ids, wantIDs) || !slices.Equal(rows, want) || off[0] != 0 || off[count] != int32(n) {
			t.Fatalf("%s n=%d: ids %v rows %v off %v; want ids %v rows %v", tc.kind, n, ids[:min(count, 8)], rows[:min(n, 8)], off[:min(count+1, 8)], wantIDs[:min(len(wantIDs), 8)], want[:min(n, 8)])
		}
		for u := range count {
			for _, r := range rows[off[u]:off[u+1]] {
				if toks[r] != ids[u] {
					t.Fatalf("%s n=%d: row %d of token %d listed under %d", tc.kind, n, r, toks[r], ids[u])
				}
			}
		}
		// the gradient, from a nonzero start (the micro-batches before), bitwise
		const c = 5
		dout := randn(n*c, uint64(n)+1)
		base := randn(tc.v*c, 9)
		old, got := slices.Clone(base), slices.Clone(base)
		encoderBackwardMirror(old, dout, toks, c)
		encoderBackwardRowsMirror(got, dout, idx, n, c)
		if i := firstDiff(bits32(got), bits32(old)); i >= 0 {
			t.Fatalf("%s n=%d: demb[%d] = %v by token, %v in row order", tc.kind, n, i, got[i], old[i])
		}
		if tc.kind == "one" {
			// the same sum in the other order differs in some bit: the order is tested
			rev := slices.Clone(base)
			for r := n - 1; r >= 0; r-- {
				for j := range c {
					rev[int(toks[r])*c+j] += dout[r*c+j]
				}
			}
			if firstDiff(bits32(rev), bits32(old)) < 0 {
				t.Errorf("summing the rows in reverse gives the same bits: the case does not test the order")
			}
		}
	}
}

// The source of encoder_backward_rows (embedding.cu), run on the CPU by flashemu/embed.cc,
// gives encoder_backward's bits: a grid smaller than the distinct tokens (blocks stride)
// and larger, blocks narrower than a row (threads stride), blocks in either order. Needs
// g++ (C++20); skipped without it.
func TestEmbedKernelEmulated(t *testing.T) {
	bin := buildEmulator(t, "flashemu/embed.cc")
	for _, tc := range []struct {
		kind          string
		n, c, v       int
		grid, threads int
		reverse       bool
	}{
		{"text", 200, 70, 50, 7, 32, false},
		{"text", 200, 70, 50, 300, 64, true},
		{"one", 37, 33, 10, 4, 32, true},
		{"distinct", 60, 8, 61, 16, 32, false},
	} {
		toks := embedCase(tc.kind, tc.n, tc.v, uint64(tc.n+tc.c))
		idx, seen := make([]int32, 3*tc.n+2), make([]int32, tc.v)
		embedIndex(toks, idx, seen)
		base, dout := randn(tc.v*tc.c, 5), randn(tc.n*tc.c, 6)
		out := runEmulator(t, bin, []int32{int32(tc.n), int32(tc.c), int32(tc.v), int32(tc.grid), int32(tc.threads), flag(tc.reverse)}, idx, base, dout)
		got := make([]float32, tc.v*tc.c)
		if err := binary.Read(out, binary.LittleEndian, got); err != nil {
			t.Fatal(err)
		}
		want := slices.Clone(base)
		encoderBackwardMirror(want, dout, toks, tc.c)
		if i := firstDiff(bits32(got), bits32(want)); i >= 0 {
			t.Errorf("%+v: demb[%d] = %v, encoder_backward's %v", tc, i, got[i], want[i])
		}
	}
}
