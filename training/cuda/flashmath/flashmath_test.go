//go:build cgo

package flashmath

import (
	"math/rand/v2"
	"testing"
)

// The fragment maps against the PTX ISA's tables for m16n8k16 with 16-bit A and B,
// written as the ISA states them, and each a bijection onto its tile.
func TestFragmentsISA(t *testing.T) {
	for lane := range 32 {
		group, q := lane/4, lane%4
		for i := range 8 {
			row := group // a0, a1, a4, a5
			if i == 2 || i == 3 || i == 6 || i == 7 {
				row = group + 8
			}
			col := q*2 + i&1
			if i >= 4 {
				col += 8
			}
			if ARow(lane, i) != row || ACol(lane, i) != col {
				t.Errorf("A lane %d a%d = (%d,%d), ISA (%d,%d)", lane, i, ARow(lane, i), ACol(lane, i), row, col)
			}
		}
		for i := range 4 {
			row := q*2 + i&1
			if i >= 2 {
				row += 8
			}
			if BRow(lane, i) != row || BCol(lane, i) != group {
				t.Errorf("B lane %d b%d = (%d,%d), ISA (%d,%d)", lane, i, BRow(lane, i), BCol(lane, i), row, group)
			}
			crow := group
			if i >= 2 {
				crow += 8
			}
			if CRow(lane, i) != crow || CCol(lane, i) != q*2+i&1 {
				t.Errorf("C lane %d c%d = (%d,%d), ISA (%d,%d)", lane, i, CRow(lane, i), CCol(lane, i), crow, q*2+i&1)
			}
		}
	}
	bijection(t, "A", 16, 16, 8, ARow, ACol)
	bijection(t, "B", 16, 8, 4, BRow, BCol)
	bijection(t, "C", 16, 8, 4, CRow, CCol)
}

func bijection(t *testing.T, name string, rows, cols, per int, row, col func(lane, i int) int) {
	t.Helper()
	seen := make([]int, rows*cols)
	for lane := range 32 {
		for i := range per {
			r, c := row(lane, i), col(lane, i)
			if r < 0 || r >= rows || c < 0 || c >= cols {
				t.Fatalf("%s: lane %d element %d at (%d,%d), outside %dx%d", name, lane, i, r, c, rows, cols)
			}
			seen[r*cols+c]++
		}
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s: (%d,%d) held %d times", name, k/cols, k%cols, n)
		}
	}
}

// mma is the warp's m16n8k16 product, lane by lane: each lane's D elements from the
// fragments the lanes hold, as the tensor core gathers them.
func mma(a [32][8]float64, b [32][4]float64) [32][4]float64 {
	var A [16][16]float64
	var B [16][8]float64
	for lane := range 32 {
		for i := range 8 {
			A[ARow(lane, i)][ACol(lane, i)] = a[lane][i]
		}
		for i := range 4 {
			B[BRow(lane, i)][BCol(lane, i)] = b[lane][i]
		}
	}
	var d [32][4]float64
	for lane := range 32 {
		for i := range 4 {
			for k := range 16 {
				d[lane][i] += A[CRow(lane, i)][k] * B[k][CCol(lane, i)]
			}
		}
	}
	return d
}

// Two C tiles of a product S = X·Y (16x16) read as an A fragment hold S itself: the
// kernels feed scores to the next product this way.
func TestCToA(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var x, y [16][16]float64
	for r := range 16 {
		for c := range 16 {
			x[r][c], y[r][c] = float64(rng.IntN(9)-4), float64(rng.IntN(9)-4)
		}
	}
	var a [32][8]float64
	var c [2][32][4]float64
	for lane := range 32 {
		for i := range 8 {
			a[lane][i] = x[ARow(lane, i)][ACol(lane, i)]
		}
	}
	for n := range 2 {
		var b [32][4]float64
		for lane := range 32 {
			for i := range 4 {
				b[lane][i] = y[BRow(lane, i)][8*n+BCol(lane, i)]
			}
		}
		c[n] = mma(a, b)
	}
	for lane := range 32 {
		for i := range 8 {
			tile, elem := CToA(i)
			r, col := ARow(lane, i), ACol(lane, i)
			var s float64
			for k := range 16 {
				s += x[r][k] * y[k][col]
			}
			if got := c[tile][lane][elem]; got != s {
				t.Errorf("lane %d a%d: C tile %d element %d = %v, S[%d][%d] = %v", lane, i, tile, elem, got, r, col, s)
			}
		}
	}
}

// ldmatrix is ldmatrix.sync.aligned.m8n8.x4.b16 as the ISA describes it: lane l's address
// is row l%8 of matrix l/8 (8 consecutive elements from it); lane l receives in register
// j elements 2(l%4) and 2(l%4)+1 of row l/4 of matrix j, or of its transpose.
func ldmatrix(tile [][]float64, addr func(lane int) (row, col int), trans bool) [32][8]float64 {
	var m [4][8][8]float64
	for lane := range 32 {
		r, c := addr(lane)
		for e := range 8 {
			m[lane/8][lane%8][e] = tile[r][c+e]
		}
	}
	var out [32][8]float64
	for lane := range 32 {
		for j := range 4 {
			for h := range 2 {
				r, c := lane/4, 2*(lane%4)+h
				if trans {
					r, c = c, r
				}
				out[lane][2*j+h] = m[j][r][c]
			}
		}
	}
	return out
}

func randTile(rng *rand.Rand, rows, cols int) [][]float64 {
	x := make([][]float64, rows)
	for r := range x {
		x[r] = make([]float64, cols)
		for c := range x[r] {
			x[r][c] = rng.Float64()
		}
	}
	return x
}

// The kernels' ldmatrix addresses load exactly the fragments of the mma maps.
func TestLdmatrix(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	a := randTile(rng, 16, 16)
	got := ldmatrix(a, LdsmA, false)
	for lane := range 32 {
		for i := range 8 {
			if want := a[ARow(lane, i)][ACol(lane, i)]; got[lane][i] != want {
				t.Errorf("A: lane %d element %d = %v, want A[%d][%d]", lane, i, got[lane][i], ARow(lane, i), ACol(lane, i))
			}
		}
	}
	// B (k16 x n16) as two fragments: from Bᵀ stored a row per n, and from B with .trans
	b := randTile(rng, 16, 16) // b[k][n]
	bt := make([][]float64, 16)
	for n := range 16 {
		bt[n] = make([]float64, 16)
		for k := range 16 {
			bt[n][k] = b[k][n]
		}
	}
	for _, tc := range []struct {
		name  string
		got   [32][8]float64
		trans bool
	}{{"Bᵀ", ldmatrix(bt, LdsmBT, false), false}, {"B .trans", ldmatrix(b, LdsmB, true), true}} {
		for lane := range 32 {
			for f := range 2 {
				for i := range 4 {
					k, n := BRow(lane, i), 8*f+BCol(lane, i)
					if tc.got[lane][4*f+i] != b[k][n] {
						t.Errorf("%s: lane %d fragment %d element %d = %v, want B[%d][%d]", tc.name, lane, f, i, tc.got[lane][4*f+i], k, n)
					}
				}
			}
		}
	}
}

// The causal tile ranges are exactly the tiles holding a visible pair, for sequence
// lengths that are and are not multiples of the tiles.
func TestCausalTiles(t *testing.T) {
	if BR != 16*Warps || LD%8 != 0 || D%16 != 0 || BC%16 != 0 {
		t.Fatalf("tiles: BR %d, warps %d, LD %d, D %d, BC %d", BR, Warps, LD, D, BC)
	}
	for _, bs := range [][2]int{{BR, BC}, {16, 16}, {32, 64}, {64, 32}, {64, 16}} {
		br, bc := bs[0], bs[1]
		for nt := 1; nt <= 200; nt++ {
			nq, nk := Tiles(nt, br), Tiles(nt, bc)
			if nq != (nt+br-1)/br || nq*br < nt || (nq-1)*br >= nt {
				t.Fatalf("Tiles(%d, %d) = %d", nt, br, nq)
			}
			// any[qt][kt]: the tile holds a visible pair; all: every pair of its rectangle is
			any := make([][]bool, nq)
			all := make([][]bool, nq)
			for qt := range nq {
				any[qt], all[qt] = make([]bool, nk), make([]bool, nk)
				for kt := range nk {
					all[qt][kt] = true
					for i := qt * br; i < (qt+1)*br; i++ {
						for j := kt * bc; j < (kt+1)*bc; j++ {
							v := j <= i && i < nt && j < nt
							if v != Visible(i, j, nt) {
								t.Fatalf("Visible(%d, %d, %d) = %v", i, j, nt, !v)
							}
							any[qt][kt] = any[qt][kt] || v
							all[qt][kt] = all[qt][kt] && v
						}
					}
				}
			}
			for qt := range nq {
				end := KVEnd(qt, br, bc, nt)
				for kt := range nk {
					if any[qt][kt] != (kt < end) {
						t.Fatalf("br %d bc %d T %d: query tile %d visits key tiles [0,%d), but tile %d visible = %v", br, bc, nt, qt, end, kt, any[qt][kt])
					}
					if TileMasked(qt, kt, br, bc, nt) != !all[qt][kt] {
						t.Fatalf("br %d bc %d T %d: TileMasked(%d, %d) = %v", br, bc, nt, qt, kt, !all[qt][kt])
					}
				}
			}
			for kt := range nk {
				begin := QBegin(kt, br, bc)
				for qt := range nq {
					if any[qt][kt] != (qt >= begin) {
						t.Fatalf("br %d bc %d T %d: key tile %d visited from query tile %d, but tile %d visible = %v", br, bc, nt, kt, begin, qt, any[qt][kt])
					}
				}
			}
		}
	}
}
