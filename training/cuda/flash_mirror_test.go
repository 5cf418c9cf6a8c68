package cuda

import (
	"math"
)

// The Go mirror of the flash attention kernels (flash.cu): the same tiles, the same causal
// ranges and masking, the same online-softmax rescaling order and the same rounding points
// (bfloat16 operands of every product, float32 accumulators, the row sums in the quad's
// shuffle order), computed row by row instead of fragment by fragment. Two things the
// mirror cannot know bit for bit: the order in which a tensor core adds the 16 products of
// one mma step (here: exactly, then rounded once onto the float32 accumulator), and
// ex2.approx (here: exp2 in float64, rounded). So the GPU agrees with it within a
// tolerance, and the mirror checks the algorithm: tile edges, masks, rescaling, the
// log-sum-exp and the backward's two passes.
//
// Layouts: q, k, v, dO (BH,T,D) bfloat16; o, dq, dk, dv (BH,T,D) float32; lse and dvec
// (BH,T). D is flashD. A product that feeds a sum is converted to float32, so Go never
// fuses the two (nvcc runs with -fmad=false).

// flashK is the k of one mma step.
const flashK = 16

func bf(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

func toBF16(x []float32) []uint16 {
	h := make([]uint16, len(x))
	for i, v := range x {
		h[i] = roundBF16(v)
	}
	return h
}

// widened is bfloat16 values as float32, exactly.
func widened(h []uint16) []float32 {
	w := make([]float32, len(h))
	for i, x := range h {
		w[i] = bf(x)
	}
	return w
}

// mexp2 is the mirror's exp2f (ex2.approx on the GPU).
func mexp2(x float32) float32 { return float32(math.Exp2(float64(x))) }

// mmaStep adds Σ a[s·i]·b[t·i] over one mma step of flashK terms to acc: the products
// of bfloat16 values are exact, their sum is taken exactly and rounded once.
func mmaStep(acc float32, a []float32, sa int, b []float32, sb int) float32 {
	s := float64(acc)
	for i := range flashK {
		s += float64(a[sa*i]) * float64(b[sb*i])
	}
	return float32(s)
}

// dotBF16 is a product's element over the head dimension: D/16 mma steps in order.
func dotBF16(a, b []uint16) float32 {
	fa, fb := make([]float32, flashD), make([]float32, flashD)
	for i := range flashD {
		fa[i], fb[i] = bf(a[i]), bf(b[i])
	}
	var acc float32
	for s := 0; s < flashD; s += flashK {
		acc = mmaStep(acc, fa[s:], 1, fb[s:], 1)
	}
	return acc
}

// quadSum is a row's sum over a key tile as the kernel takes it: each of the 4 lanes of a
// quad adds its columns 2q, 2q+1 of the 8 n-tiles in order, then the quad adds across
// lanes with shuffles (xor 1, then xor 2). quadMax is the same for the maximum.
func quadSum(x []float32) float32 {
	var part [4]float32
	for q := range 4 {
		for nt := range flashBC / 8 {
			part[q] += x[8*nt+2*q]
			part[q] += x[8*nt+2*q+1]
		}
	}
	return (part[0] + part[1]) + (part[2] + part[3])
}

func quadMax(x []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		m = max(m, v)
	}
	return m
}

// flashVisible, flashTiles, flashKVEnd, flashQBegin and flashTileMasked are those of
// flash_tiles.h (package flashmath tests the header against naive loops, and
// TestFlashTileMirror these against the same loops).
func flashVisible(i, j, t int) bool { return j <= i && i < t && j < t }
func flashTiles(t, bs int) int      { return (t + bs - 1) / bs }
func flashKVEnd(qt, t int) int      { return (min((qt+1)*flashBR, t)-1)/flashBC + 1 }
func flashQBegin(kt int) int        { return kt * flashBC / flashBR }
func flashTileMasked(qt, kt, t int) bool {
	return (kt+1)*flashBC-1 > qt*flashBR || (kt+1)*flashBC > t || (qt+1)*flashBR > t
}

// flashArgs are a head's inputs: bh heads of t rows each, scaleLog2 = log2(e)/√D.
type flashArgs struct {
	bh, t      int
	scaleLog2  float32
	q, k, v    []uint16
	o, lse     []float32 // forward outputs, backward inputs
	do16       []uint16  // backward: dO rounded
	dvec       []float32 // backward: rowsum(dO∘O), dO rounded, O in float32
	dq, dk, dv []float32 // backward outputs
}

func (a *flashArgs) row(x []uint16, h, i int) []uint16 {
	return x[(h*a.t+i)*flashD : (h*a.t+i+1)*flashD]
}

// forwardTile is flash_forward's block (h, qt): the rows of query tile qt of head h.
func (a *flashArgs) forwardTile(h, qt int) {
	x, p := make([]float32, flashBC), make([]float32, flashBC)
	vf := make([]float32, flashBC*flashD)
	for i := qt * flashBR; i < min((qt+1)*flashBR, a.t); i++ {
		m, l := float32(math.Inf(-1)), float32(0)
		acc := make([]float32, flashD)
		for kt := range flashKVEnd(qt, a.t) {
			masked := flashTileMasked(qt, kt, a.t)
			for jj := range flashBC {
				j := kt*flashBC + jj
				x[jj] = float32(math.Inf(-1))
				if !masked || flashVisible(i, j, a.t) {
					x[jj] = float32(dotBF16(a.row(a.q, h, i), a.row(a.k, h, j)) * a.scaleLog2)
				}
			}
			mn := max(m, quadMax(x))
			alpha := mexp2(m - mn)
			for jj := range flashBC {
				p[jj] = mexp2(x[jj] - mn)
			}
			l = float32(l*alpha) + quadSum(p)
			m = mn
			for jj := range flashBC {
				j := kt*flashBC + jj
				p[jj] = bf(roundBF16(p[jj]))
				for d := range flashD {
					vf[jj*flashD+d] = 0
					if j < a.t {
						vf[jj*flashD+d] = bf(a.v[(h*a.t+j)*flashD+d])
					}
				}
			}
			for d := range flashD {
				acc[d] *= alpha
				for s := 0; s < flashBC; s += flashK {
					acc[d] = mmaStep(acc[d], p[s:], 1, vf[s*flashD+d:], flashD)
				}
			}
		}
		inv := 1 / l
		for d := range flashD {
			a.o[(h*a.t+i)*flashD+d] = acc[d] * inv
		}
		a.lse[h*a.t+i] = m + float32(math.Log2(float64(l)))
	}
}

// prob is P[i][j] of the backward passes, from the forward's log-sum-exp, and dS, the
// gradient of the scores before the scale.
func (a *flashArgs) prob(h, i, j int, masked bool) (p, ds float32) {
	if masked && !flashVisible(i, j, a.t) {
		return 0, 0
	}
	p = mexp2(float32(dotBF16(a.row(a.q, h, i), a.row(a.k, h, j))*a.scaleLog2) - a.lse[h*a.t+i])
	dp := dotBF16(a.row(a.do16, h, i), a.row(a.v, h, j))
	return p, p * (dp - a.dvec[h*a.t+i])
}

// dkdvTile is flash_backward_dkdv's block (h, kt): key tile kt's rows of dK and dV, over
// the query tiles that see it, in order.
func (a *flashArgs) dkdvTile(h, kt int, scale float32) {
	nq := flashTiles(a.t, flashBR)
	p, ds := make([]float32, flashBR), make([]float32, flashBR)
	qf, of := make([]float32, flashBR*flashD), make([]float32, flashBR*flashD)
	for j := kt * flashBC; j < min((kt+1)*flashBC, a.t); j++ {
		dk, dv := make([]float32, flashD), make([]float32, flashD)
		for qt := flashQBegin(kt); qt < nq; qt++ {
			masked := flashTileMasked(qt, kt, a.t)
			for ii := range flashBR {
				i := qt*flashBR + ii
				p[ii], ds[ii] = 0, 0
				if i < a.t {
					p[ii], ds[ii] = a.prob(h, i, j, masked)
				}
				p[ii], ds[ii] = bf(roundBF16(p[ii])), bf(roundBF16(ds[ii]))
				for d := range flashD {
					qf[ii*flashD+d], of[ii*flashD+d] = 0, 0
					if i < a.t {
						qf[ii*flashD+d], of[ii*flashD+d] = bf(a.q[(h*a.t+i)*flashD+d]), bf(a.do16[(h*a.t+i)*flashD+d])
					}
				}
			}
			for d := range flashD {
				for s := 0; s < flashBR; s += flashK {
					dv[d] = mmaStep(dv[d], p[s:], 1, of[s*flashD+d:], flashD)
					dk[d] = mmaStep(dk[d], ds[s:], 1, qf[s*flashD+d:], flashD)
				}
			}
		}
		for d := range flashD {
			a.dk[(h*a.t+j)*flashD+d] = dk[d] * scale
			a.dv[(h*a.t+j)*flashD+d] = dv[d]
		}
	}
}

// dqTile is flash_backward_dq's block (h, qt): query tile qt's rows of dQ, over the key
// tiles it sees, in order.
func (a *flashArgs) dqTile(h, qt int, scale float32) {
	ds := make([]float32, flashBC)
	kf := make([]float32, flashBC*flashD)
	for i := qt * flashBR; i < min((qt+1)*flashBR, a.t); i++ {
		dq := make([]float32, flashD)
		for kt := range flashKVEnd(qt, a.t) {
			masked := flashTileMasked(qt, kt, a.t)
			for jj := range flashBC {
				j := kt*flashBC + jj
				ds[jj] = 0
				for d := range flashD {
					kf[jj*flashD+d] = 0
				}
				if j < a.t {
					_, ds[jj] = a.prob(h, i, j, masked)
					for d := range flashD {
						kf[jj*flashD+d] = bf(a.k[(h*a.t+j)*flashD+d])
					}
				}
				ds[jj] = bf(roundBF16(ds[jj]))
			}
			for d := range flashD {
				for s := 0; s < flashBC; s += flashK {
					dq[d] = mmaStep(dq[d], ds[s:], 1, kf[s*flashD+d:], flashD)
				}
			}
		}
		for d := range flashD {
			a.dq[(h*a.t+i)*flashD+d] = dq[d] * scale
		}
	}
}

// flashDvec is flash_backward_pre's rowsum(dO∘O) of one row, on dO rounded as the
// products take it (so that a row of dS sums to zero up to float32 rounding): lane l takes
// elements l and l+32, then the warp's butterfly sum.
func flashDvec(do16 []uint16, o []float32) float32 {
	v := make([]float32, warp)
	for l := range warp {
		v[l] = bf(do16[l]) * o[l]
		v[l] += float32(bf(do16[l+warp]) * o[l+warp])
	}
	warpReduce(v, add)
	return v[0]
}

// flashBlock is one block of a flash kernel: (kernel, head, tile).
type flashBlock struct{ kernel, h, tile int }

// flashBlocks lists the blocks of the forward (kernel 0) or of the backward's two passes
// (1: dK and dV, 2: dQ), in launch order.
func (a *flashArgs) flashBlocks(backward bool) []flashBlock {
	var bs []flashBlock
	if !backward {
		for h := range a.bh {
			for qt := range flashTiles(a.t, flashBR) {
				bs = append(bs, flashBlock{0, h, qt})
			}
		}
		return bs
	}
	for h := range a.bh {
		for kt := range flashTiles(a.t, flashBC) {
			bs = append(bs, flashBlock{1, h, kt})
		}
	}
	for h := range a.bh {
		for qt := range flashTiles(a.t, flashBR) {
			bs = append(bs, flashBlock{2, h, qt})
		}
	}
	return bs
}

func (a *flashArgs) runBlock(b flashBlock) {
	scale, _ := flashScale()
	switch b.kernel {
	case 0:
		a.forwardTile(b.h, b.tile)
	case 1:
		a.dkdvTile(b.h, b.tile, scale)
	case 2:
		a.dqTile(b.h, b.tile, scale)
	}
}

// newFlashArgs makes the inputs of a head from float32 q, k, v (BH,T,D), rounded.
func newFlashArgs(bh, t int, q, k, v []float32) *flashArgs {
	n := bh * t * flashD
	_, scaleLog2 := flashScale()
	return &flashArgs{bh: bh, t: t, scaleLog2: scaleLog2,
		q: toBF16(q), k: toBF16(k), v: toBF16(v), o: make([]float32, n), lse: make([]float32, bh*t),
		dq: make([]float32, n), dk: make([]float32, n), dv: make([]float32, n), dvec: make([]float32, bh*t)}
}

// backwardInputs sets dO's bfloat16 copy and dvec from the float32 gradient of O.
func (a *flashArgs) backwardInputs(do []float32) {
	a.do16 = toBF16(do)
	for r := range a.bh * a.t {
		a.dvec[r] = flashDvec(a.do16[r*flashD:(r+1)*flashD], a.o[r*flashD:(r+1)*flashD])
	}
}
