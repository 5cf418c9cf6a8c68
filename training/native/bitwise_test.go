package native

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sfsweep/sfsweep/sfadamw"
)

// bitwiseCase is one run of a float32 primitive: it fills its inputs from the rng given and
// returns the outputs to compare.
type bitwiseCase struct {
	name string
	run  func(rng *rand.Rand, n int) [][]float32
}

// randSlice returns n values N(0, scale²) at a random offset of a larger slice, so that the
// kernels see unaligned data.
func randSlice(rng *rand.Rand, n int, scale float64) []float32 {
	off := rng.IntN(16)
	s := make([]float32, n+off)
	for i := range s {
		s[i] = float32(rng.NormFloat64() * scale)
	}
	return s[off:]
}

// extremes are the values past a kernel's ordinary range: ±Inf, NaN, the largest and
// the smallest normal and subnormal magnitudes, and values past e^x's range.
var extremes = []float32{
	float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
	math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
	0x1p-126, 1e30, -1e30, 1e10, -1e10, 200, -200, 88.8, -104,
}

// extremeSlice is randSlice with an eighth of its values, at random, from extremes.
func extremeSlice(rng *rand.Rand, n int, scale float64) []float32 {
	return extremeSliceOf(rng, n, scale, extremes)
}

// extremeSliceOf is randSlice with an eighth of its values, at random, from of.
func extremeSliceOf(rng *rand.Rand, n int, scale float64, of []float32) []float32 {
	s := randSlice(rng, n, scale)
	for i := range s {
		if rng.IntN(8) == 0 {
			s[i] = of[rng.IntN(len(of))]
		}
	}
	return s
}

// softmaxCase is vSoftmax on inputs N(0, scale²): at 40, e^x underflows into the subnormals.
func softmaxCase(name string, scale float64) bitwiseCase {
	return bitwiseCase{name, func(rng *rand.Rand, n int) [][]float32 {
		x := randSlice(rng, max(n, 1), scale)
		mx, sum := vSoftmax(x)
		return [][]float32{x, {mx, sum}}
	}}
}

// swigluCase is vSwiGLU with gates N(0, scale²).
func swigluCase(name string, scale float64) bitwiseCase {
	return bitwiseCase{name, func(rng *rand.Rand, n int) [][]float32 {
		out, g, u := randSlice(rng, n, 1), randSlice(rng, n, scale), randSlice(rng, n, 1)
		vSwiGLU(out, g, u)
		return [][]float32{out}
	}}
}

// geluBackwardCase is geluBackward on inputs N(0, scale²).
func geluBackwardCase(name string, scale float64) bitwiseCase {
	return bitwiseCase{name, func(rng *rand.Rand, n int) [][]float32 {
		dx, dout, x := randSlice(rng, n, 1), randSlice(rng, n, 1), randSlice(rng, n, scale)
		geluBackward(dx, dout, x)
		return [][]float32{dx}
	}}
}

// extremeCases run the kernels that compute e^x, and reductions, on extremeSlice inputs:
// overflow, ±Inf, NaN and subnormals take the same path in every family.
var extremeCases = []bitwiseCase{
	{"vSoftmax/extreme", func(rng *rand.Rand, n int) [][]float32 {
		x := extremeSliceOf(rng, max(n, 1), 4, extremes[:2]) // ±Inf
		mx, sum := vSoftmax(x)
		return [][]float32{x, {mx, sum}}
	}},
	{"vSoftmax/extreme-finite", func(rng *rand.Rand, n int) [][]float32 {
		x := extremeSliceOf(rng, max(n, 1), 4, extremes[3:]) // logits whose differences overflow
		mx, sum := vSoftmax(x)
		return [][]float32{x, {mx, sum}}
	}},
	// A row with a NaN is NaN throughout in every family; the maximum it returns is left
	// out: the families' VMAXPS keep a NaN by its position in their lanes (8 or 16).
	{"vSoftmax/nan", func(rng *rand.Rand, n int) [][]float32 {
		x := extremeSlice(rng, max(n, 1), 4)
		_, sum := vSoftmax(x)
		return [][]float32{x, {sum}}
	}},
	{"vSwiGLU/extreme", func(rng *rand.Rand, n int) [][]float32 {
		out, g, u := randSlice(rng, n, 1), extremeSlice(rng, n, 3), extremeSlice(rng, n, 1)
		vSwiGLU(out, g, u)
		return [][]float32{out}
	}},
	{"vSwiGLUBackward/extreme", func(rng *rand.Rand, n int) [][]float32 {
		dg, du, dout, g, u := randSlice(rng, n, 1), randSlice(rng, n, 1), extremeSlice(rng, n, 1), extremeSlice(rng, n, 3), extremeSlice(rng, n, 1)
		vSwiGLUBackward(dg, du, dout, g, u)
		return [][]float32{dg, du}
	}},
	{"vSumSquares/extreme", func(rng *rand.Rand, n int) [][]float32 {
		return [][]float32{{vSumSquares(extremeSlice(rng, n, 1))}}
	}},
	{"vSoftmaxBackward/extreme", func(rng *rand.Rand, n int) [][]float32 {
		dp, p := extremeSlice(rng, n, 1), extremeSlice(rng, n, 1)
		vSoftmaxBackward(dp, p, 0.125)
		return [][]float32{dp}
	}},
}

var bitwiseCases = []bitwiseCase{
	softmaxCase("vSoftmax", 4), softmaxCase("vSoftmax/wide", 40),
	swigluCase("vSwiGLU", 3), swigluCase("vSwiGLU/wide", 60),
	geluBackwardCase("geluBackward", 3), geluBackwardCase("geluBackward/wide", 20),
	{"vSumSquares", func(rng *rand.Rand, n int) [][]float32 {
		return [][]float32{{vSumSquares(randSlice(rng, n, 1))}}
	}},
	{"vScaleMul", func(rng *rand.Rand, n int) [][]float32 {
		out, x, w := randSlice(rng, n, 1), randSlice(rng, n, 1), randSlice(rng, n, 1)
		vScaleMul(out, x, w, 0.7)
		return [][]float32{out}
	}},
	{"vScale", func(rng *rand.Rand, n int) [][]float32 {
		x := randSlice(rng, n, 1)
		vScale(x, 1.3)
		return [][]float32{x}
	}},
	{"vRMSNormBackward", func(rng *rand.Rand, n int) [][]float32 {
		dx, dw, d, x, w := randSlice(rng, n, 1), randSlice(rng, n, 1), randSlice(rng, n, 1), randSlice(rng, n, 1), randSlice(rng, n, 1)
		vRMSNormBackward(dx, dw, d, x, w, 0.8)
		return [][]float32{dx, dw}
	}},
	{"vRotateHalves", func(rng *rand.Rand, n int) [][]float32 {
		d := 2 * (1 + n%32)
		x, cos, sin := randSlice(rng, 3*d, 1), randSlice(rng, d/2, 1), randSlice(rng, d/2, 1)
		vRotateHalves(x, cos, sin, d)
		return [][]float32{x}
	}},
	{"vSoftmaxBackward", func(rng *rand.Rand, n int) [][]float32 {
		dp, p := randSlice(rng, n, 1), randSlice(rng, n, 1)
		vSoftmaxBackward(dp, p, 0.125)
		return [][]float32{dp}
	}},
	{"vSwiGLUBackward", func(rng *rand.Rand, n int) [][]float32 {
		dg, du, dout, g, u := randSlice(rng, n, 1), randSlice(rng, n, 1), randSlice(rng, n, 1), randSlice(rng, n, 3), randSlice(rng, n, 1)
		vSwiGLUBackward(dg, du, dout, g, u)
		return [][]float32{dg, du}
	}},
	{"geluForward", func(rng *rand.Rand, n int) [][]float32 {
		out, x := randSlice(rng, n, 1), randSlice(rng, n, 3)
		geluForward(out, x)
		return [][]float32{out}
	}},
	{"vMatmul", func(rng *rand.Rand, n int) [][]float32 {
		m, k, cols := 1+n%13, 1+n%37, 1+n%45
		c, a, b := randSlice(rng, m*cols, 1), randSlice(rng, m*k, 1), randSlice(rng, k*cols, 1)
		vMatmul(c, cols, a, k, 1, b, cols, m, cols, k, 0.5)
		ct, at := randSlice(rng, m*cols, 1), randSlice(rng, k*m, 1) // Aᵀ stored
		vMatmul(ct, cols, at, 1, m, b, cols, m, cols, k, 0.5)
		return [][]float32{c, ct}
	}},
	{"transpose", func(rng *rand.Rand, n int) [][]float32 {
		rows, cols := 1+n%19, 1+n%33
		src, dst := randSlice(rng, rows*(cols+3), 1), make([]float32, rows*cols)
		transpose(dst, src, rows, cols, cols+3)
		return [][]float32{dst}
	}},
}

// Every float32 primitive gives the same bits under every kernel set the machine runs (the
// portable loops of spec32.go, AVX2, AVX-512): elementwise kernels compute each element by
// the same operations in the same order, and reductions sum in the same 16 lanes, reduced
// by the same tree. A machine with AVX2 alone compares AVX2 with the portable loops.
func TestKernelSetsBitwise(t *testing.T) {
	sets := kernelSets()
	if len(sets) < 2 {
		t.Skipf("kernel sets %v: this build or CPU has the portable loops alone (-tags purego, or no AVX2), nothing to compare", sets)
	}
	for _, c := range slices.Concat(bitwiseCases, extremeCases) {
		for _, n := range append(slices.Clone(vecLengths), 1023, 2049) {
			var want [][]float32
			for i, ks := range sets {
				var got [][]float32
				t.Run(fmt.Sprintf("%s/%d/%s", c.name, n, ks.name), func(t *testing.T) {
					ks.use(t)
					got = c.run(rand.New(rand.NewPCG(uint64(n), 7)), n)
				})
				if i == 0 {
					want = got
					continue
				}
				for o := range want {
					for j := range want[o] {
						if a, b := math.Float32bits(want[o][j]), math.Float32bits(got[o][j]); a != b && !bothNaN(want[o][j], got[o][j]) {
							t.Fatalf("%s n = %d output %d [%d]: %s %g (%#08x), %s %g (%#08x)", c.name, n, o, j,
								sets[0].name, want[o][j], a, ks.name, got[o][j], b)
						}
					}
				}
			}
		}
	}
}

// bothNaN reports whether a and b are both NaN: a NaN's sign and payload are the
// hardware's, and no result keeps them (a NaN loss is a divergence, whatever its bits).
func bothNaN(a, b float32) bool { return a != a && b != b }

// A forward and backward pass of both architectures, and 20 steps of SF-AdamW training,
// give the same bits (loss, every gradient, every parameter) under every kernel set the
// machine runs, the portable loops included.
func TestTrainingBitwise(t *testing.T) {
	sets := kernelSets()
	if len(sets) < 2 {
		t.Skipf("kernel sets %v: this build or CPU has the portable loops alone (-tags purego, or no AVX2), nothing to compare", sets)
	}
	for _, name := range []string{"tiny-llama", "tiny-gpt2"} {
		cfg := preset(t, name)
		batch, seqLen := 2, cfg.Context/2
		run := func(ks kernelSet, steps int) (losses []float32, grads, params []float32) {
			var out []float32 // each loss as its two float32 halves: every bit of the float64
			t.Run(fmt.Sprintf("%s/%s/%d-steps", name, ks.name, steps), func(t *testing.T) {
				ks.use(t)
				m := newModel[float32](t, cfg, batch, seqLen, 5)
				opt, err := sfadamw.New(sfadamw.Config{LR: 3e-3, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1, WarmupSteps: 5, C: 50}, m.Params())
				if err != nil {
					t.Fatal(err)
				}
				n := batch * seqLen
				for s := range max(steps, 1) {
					m.ZeroGrad()
					loss, err := m.Forward(randomTokens(n, cfg.Vocab, uint64(2*s)), randomTokens(n, cfg.Vocab, uint64(2*s+1)))
					if err != nil {
						t.Fatal(err)
					}
					m.Backward()
					b := math.Float64bits(loss)
					out = append(out, math.Float32frombits(uint32(b>>32)), math.Float32frombits(uint32(b)))
					if steps > 0 {
						opt.Step(m.Grads())
					}
				}
				grads, params = slices.Clone(m.Grads()), slices.Clone(m.Params())
			})
			return out, grads, params
		}
		for _, steps := range []int{0, 20} {
			wl, wg, wp := run(sets[0], steps)
			for _, ks := range sets[1:] {
				gl, gg, gp := run(ks, steps)
				for what, pair := range map[string][2][]float32{"loss": {wl, gl}, "gradient": {wg, gg}, "parameter": {wp, gp}} {
					for i := range pair[0] {
						if math.Float32bits(pair[0][i]) != math.Float32bits(pair[1][i]) {
							t.Fatalf("%s, %d steps: %s %d is %g under %s, %g under %s", name, steps, what, i, pair[0][i], sets[0].name, pair[1][i], ks.name)
						}
					}
				}
			}
		}
	}
}
