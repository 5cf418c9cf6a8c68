package cuda

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// flashRef is causal attention in float64 on the bfloat16-rounded q, k, v of a (the
// mirror's inputs) and the float32 gradient do of O: O, and dQ, dK, dV.
func flashRef(a *flashArgs, do []float32) (o, dq, dk, dv []float64) {
	n, t := a.bh*a.t*flashD, a.t
	o, dq, dk, dv = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	scale := 1 / math.Sqrt(flashD)
	at := func(x []uint16, h, i, d int) float64 { return float64(bf(x[(h*t+i)*flashD+d])) }
	for h := range a.bh {
		for i := range t {
			p, dp := make([]float64, i+1), make([]float64, i+1)
			mx := math.Inf(-1)
			for j := range i + 1 {
				for d := range flashD {
					p[j] += at(a.q, h, i, d) * at(a.k, h, j, d)
				}
				p[j] *= scale
				mx = math.Max(mx, p[j])
			}
			var sum float64
			for j := range p {
				p[j] = math.Exp(p[j] - mx)
				sum += p[j]
			}
			r := (h*t + i) * flashD
			var dsum float64
			for j := range p {
				p[j] /= sum
				for d := range flashD {
					o[r+d] += p[j] * at(a.v, h, j, d)
					dp[j] += float64(do[r+d]) * at(a.v, h, j, d)
				}
				dsum += p[j] * dp[j]
			}
			for j := range p {
				ds := p[j] * (dp[j] - dsum) * scale
				for d := range flashD {
					dq[r+d] += ds * at(a.k, h, j, d)
					dk[(h*t+j)*flashD+d] += ds * at(a.q, h, i, d)
					dv[(h*t+j)*flashD+d] += p[j] * float64(do[r+d])
				}
			}
		}
	}
	return o, dq, dk, dv
}

// flashTolO and flashTolGrad bound the error of O and of the gradients against causal
// attention in float64 on the same bfloat16 inputs, relative to the tensor's scale
// (maxRelErr): for the mirror and for the kernels alike.
const flashTolO, flashTolGrad = 4e-3, 1e-2

// maxRelErr is max|got − want| / max|want|: attention's outputs mix rows of very different
// sizes, so the error is measured against the tensor's scale (at least 10⁻³: with T = 1,
// dQ and dK are zero).
func maxRelErr(got []float32, want []float64) float64 {
	var e, m float64
	for i := range want {
		e = math.Max(e, math.Abs(float64(got[i])-want[i]))
		m = math.Max(m, math.Abs(want[i]))
	}
	return e / math.Max(m, 1e-3)
}

// flashInputs are a head-major problem in float32: q, k, v and dO (BH,T,D) with scores
// of a realistic spread.
func flashInputs(bh, t int, seed uint64) (q, k, v, do []float32) {
	n := bh * t * flashD
	q, k, v, do = randn(n, seed), randn(n, seed+1), randn(n, seed+2), randn(n, seed+3)
	for i := range q {
		q[i] *= 1.5 // scores up to ~±40 before the scale: peaked rows as well as flat ones
	}
	return q, k, v, do
}

// flashCase is flashInputs as the mirror's arguments (q, k, v rounded), and dO.
func flashCase(bh, t int, seed uint64) (*flashArgs, []float32) {
	q, k, v, do := flashInputs(bh, t, seed)
	return newFlashArgs(bh, t, q, k, v), do
}

// qkvRows lays q, k, v (B,H,T,D) out as the rows (B,T,3C) the qkv projection writes.
func qkvRows(q, k, v []float32, b, nt, nh int) []float32 {
	c := nh * flashD
	rows := make([]float32, 3*len(q))
	for part, x := range [][]float32{q, k, v} {
		r := headsToRows(x, b, nt, nh)
		for row := range b * nt {
			copy(rows[row*3*c+part*c:row*3*c+(part+1)*c], r[row*c:(row+1)*c])
		}
	}
	return rows
}

// runFlash runs the mirror's blocks in the order given.
func runFlash(a *flashArgs, do []float32, order func([]flashBlock)) {
	fwd := a.flashBlocks(false)
	order(fwd)
	for _, b := range fwd {
		a.runBlock(b)
	}
	a.backwardInputs(do)
	bwd := a.flashBlocks(true)
	order(bwd)
	// the dQ pass reads only the forward's outputs, so the backward's blocks of both
	// passes may run in any order
	for _, b := range bwd {
		a.runBlock(b)
	}
}

func inOrder([]flashBlock) {}

// The flash mirror against causal attention in float64, with T below, at, between and
// above multiples of the 64-row tiles. The tolerances are those of bfloat16 operands:
// P, dO and dS are rounded to 8 bits of mantissa (relative error ≤ 2⁻⁹ each) before
// their products, so errors of a few 2⁻⁹ of the tensor's scale are the algorithm's own;
// a wrong mask, tile edge or rescaling gives errors of order 1.
func TestFlashMirror(t *testing.T) {
	const tolO, tolGrad = flashTolO, flashTolGrad
	for _, nt := range []int{1, 5, 63, 64, 65, 100, 128, 150} {
		a, do := flashCase(2, nt, uint64(nt))
		runFlash(a, do, inOrder)
		o, dq, dk, dv := flashRef(a, do)
		for _, c := range []struct {
			name string
			got  []float32
			want []float64
			tol  float64
		}{{"O", a.o, o, tolO}, {"dQ", a.dq, dq, tolGrad}, {"dK", a.dk, dk, tolGrad}, {"dV", a.dv, dv, tolGrad}} {
			e := maxRelErr(c.got, c.want)
			t.Logf("T=%d: %s relative error %.2g", nt, c.name, e)
			if !(e <= c.tol) {
				t.Errorf("T=%d: %s relative error %.2g, tolerance %.0g", nt, c.name, e, c.tol)
			}
		}
		// lse (base 2) against the float64 log-sum-exp of the scaled scores
		for i := range nt {
			var s float64
			mx := math.Inf(-1)
			row := make([]float64, i+1)
			for j := range row {
				for d := range flashD {
					row[j] += float64(bf(a.q[(nt+i)*flashD+d])) * float64(bf(a.k[(nt+j)*flashD+d]))
				}
				row[j] /= math.Sqrt(flashD)
				mx = math.Max(mx, row[j])
			}
			for _, x := range row {
				s += math.Exp(x - mx)
			}
			want := (mx + math.Log(s)) * math.Log2E
			if got := float64(a.lse[nt+i]); math.Abs(got-want) > 1e-4*math.Max(1, math.Abs(want)) {
				t.Fatalf("T=%d: lse of row %d of head 1 = %v, want %v", nt, i, got, want)
			}
		}
	}
}

// The mirror is bitwise the same run to run, whatever order its blocks run in and with
// them running at once: each block owns its outputs and sums in a fixed order, as the
// kernels do (no atomics).
func TestFlashMirrorOrder(t *testing.T) {
	const bh, nt = 3, 130
	ref, do := flashCase(bh, nt, 7)
	runFlash(ref, do, inOrder)
	rng := rand.New(rand.NewPCG(1, 1))
	orders := map[string]func([]flashBlock){
		"again":    inOrder,
		"reversed": slices.Reverse[[]flashBlock],
		"shuffled": func(b []flashBlock) { rng.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] }) },
	}
	for name, order := range orders {
		a, _ := flashCase(bh, nt, 7)
		runFlash(a, do, order)
		same(t, name, a, ref)
	}
	// concurrently: every block of a pass at once
	a, _ := flashCase(bh, nt, 7)
	for pass, backward := range []bool{false, true} {
		if pass == 1 {
			a.backwardInputs(do)
		}
		var wg sync.WaitGroup
		for _, b := range a.flashBlocks(backward) {
			wg.Go(func() { a.runBlock(b) })
		}
		wg.Wait()
	}
	same(t, "concurrent", a, ref)
}

func same(t *testing.T, name string, a, ref *flashArgs) {
	t.Helper()
	for _, c := range []struct {
		what      string
		got, want []float32
	}{{"O", a.o, ref.o}, {"lse", a.lse, ref.lse}, {"dQ", a.dq, ref.dq}, {"dK", a.dk, ref.dk}, {"dV", a.dv, ref.dv}} {
		if i := firstDiff(bits32(c.got), bits32(c.want)); i >= 0 {
			t.Errorf("%s: %s[%d] = %v, in launch order %v", name, c.what, i, c.got[i], c.want[i])
		}
	}
}

// The mirror's tile ranges are those of flash_tiles.h (which package flashmath checks):
// the same naive loops.
func TestFlashTileMirror(t *testing.T) {
	for nt := 1; nt <= 150; nt++ {
		for qt := range flashTiles(nt, flashBR) {
			for kt := range flashTiles(nt, flashBC) {
				any, all := false, true
				for i := qt * flashBR; i < (qt+1)*flashBR; i++ {
					for j := kt * flashBC; j < (kt+1)*flashBC; j++ {
						any = any || flashVisible(i, j, nt)
						all = all && flashVisible(i, j, nt)
					}
				}
				if any != (kt < flashKVEnd(qt, nt)) || any != (qt >= flashQBegin(kt)) || all == flashTileMasked(qt, kt, nt) {
					t.Fatalf("T=%d tile (%d,%d): visible %v, all %v; kvEnd %d, qBegin %d, masked %v", nt, qt, kt, any, all, flashKVEnd(qt, nt), flashQBegin(kt), flashTileMasked(qt, kt, nt))
				}
			}
		}
	}
}

func f64(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

// headsToRows turns (B,H,T,D) into (B,T,H,D), the rows' layout (B,T,C); rowsToHeads is
// its inverse.
func headsToRows(x []float32, b, nt, nh int) []float32 { return moveHeads(x, b, nt, nh, true) }
func rowsToHeads(x []float32, b, nt, nh int) []float32 { return moveHeads(x, b, nt, nh, false) }

func moveHeads(x []float32, b, nt, nh int, toRows bool) []float32 {
	y := make([]float32, len(x))
	for bi := range b {
		for h := range nh {
			for i := range nt {
				hd, rw := ((bi*nh+h)*nt+i)*flashD, ((bi*nt+i)*nh+h)*flashD
				if toRows {
					copy(y[rw:rw+flashD], x[hd:hd+flashD])
				} else {
					copy(y[hd:hd+flashD], x[rw:rw+flashD])
				}
			}
		}
	}
	return y
}

// bits32 and firstDiff compare float32 results bit for bit (shared with the device tests).
func bits32(x []float32) []uint32 {
	b := make([]uint32, len(x))
	for i, v := range x {
		b[i] = math.Float32bits(v)
	}
	return b
}

func firstDiff[T comparable](a, b []T) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}
