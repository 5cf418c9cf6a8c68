package oracle

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// opCase is one custom op under test: build wires x (and any fixed inputs) into a scalar.
type opCase struct {
	name  string
	shape tensor.Shape // of x, the input differentiated
	scale float64      // spread of the random x
	build func(g *gorgonia.ExprGraph, x *gorgonia.Node, rng *rand.Rand) (*gorgonia.Node, error)
}

// weighted returns Σ w⊙y for a fixed random w: a scalar whose gradient reaches every
// element of y with a different weight.
func weighted(g *gorgonia.ExprGraph, y *gorgonia.Node, rng *rand.Rand) (*gorgonia.Node, error) {
	w := make([]float64, y.Shape().TotalSize())
	for i := range w {
		w[i] = rng.NormFloat64()
	}
	wn := gorgonia.NewTensor(g, tensor.Float64, y.Dims(), gorgonia.WithShape(y.Shape()...), gorgonia.WithName("w"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(y.Shape()...), tensor.WithBacking(w))))
	p, err := gorgonia.HadamardProd(y, wn)
	if err != nil {
		return nil, err
	}
	return gorgonia.Sum(p)
}

// fixedVector adds an input vector called name holding ids.
func fixedVector(g *gorgonia.ExprGraph, name string, ids []float64) *gorgonia.Node {
	return gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(len(ids)), gorgonia.WithName(name),
		gorgonia.WithValue(tensor.New(tensor.WithShape(len(ids)), tensor.WithBacking(ids))))
}

func opCases() []opCase {
	return []opCase{
		{"embedding", tensor.Shape{5, 3}, 1, func(g *gorgonia.ExprGraph, x *gorgonia.Node, rng *rand.Rand) (*gorgonia.Node, error) {
			ids := fixedVector(g, "ids", []float64{4, 0, 2, 2, 4, 4, 1}) // repeats; row 3 unused
			y, err := gorgonia.ApplyOp(embeddingOp{vocab: 5, dim: 3}, x, ids)
			if err != nil {
				return nil, err
			}
			return weighted(g, y, rng)
		}},
		{"causal softmax", tensor.Shape{2, 4, 4}, 3, func(g *gorgonia.ExprGraph, x *gorgonia.Node, rng *rand.Rand) (*gorgonia.Node, error) {
			y, err := gorgonia.ApplyOp(causalSoftmaxOp{}, x)
			if err != nil {
				return nil, err
			}
			return weighted(g, y, rng)
		}},
		{"gelu", tensor.Shape{4, 6}, 2, func(g *gorgonia.ExprGraph, x *gorgonia.Node, rng *rand.Rand) (*gorgonia.Node, error) {
			y, err := gorgonia.ApplyOp(geluOp{}, x)
			if err != nil {
				return nil, err
			}
			return weighted(g, y, rng)
		}},
		{"cross-entropy", tensor.Shape{6, 5}, 3, func(g *gorgonia.ExprGraph, x *gorgonia.Node, rng *rand.Rand) (*gorgonia.Node, error) {
			targets := fixedVector(g, "targets", []float64{0, 4, 4, 2, 1, 3})
			ce, err := gorgonia.ApplyOp(crossEntropyOp{}, x, targets)
			if err != nil {
				return nil, err
			}
			// Scale the loss so the op's output gradient is not 1.
			return gorgonia.HadamardProd(ce, gorgonia.NewConstant(2.5))
		}},
	}
}

// TestOpGradients checks each custom op's symbolic gradient (SymDiff and its gradient op,
// run by a tape machine) against central differences of the same graph, in float64.
// Tolerance: max|fd − g| ≤ 1e-8 · max|g|.
func TestOpGradients(t *testing.T) {
	const h, tol = 1e-5, 1e-8
	for _, tc := range opCases() {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, 12))
			g := gorgonia.NewGraph()
			x := gorgonia.NewTensor(g, tensor.Float64, tc.shape.Dims(), gorgonia.WithShape(tc.shape...), gorgonia.WithName("x"))
			f, err := tc.build(g, x, rng)
			if err != nil {
				t.Fatal(err)
			}
			grads, err := gorgonia.Grad(f, x)
			if err != nil {
				t.Fatal(err)
			}
			vm := gorgonia.NewTapeMachine(g)
			defer vm.Close()
			run := func(xv []float64) (float64, []float64) {
				t.Helper()
				if err := gorgonia.Let(x, tensor.New(tensor.WithShape(tc.shape...), tensor.WithBacking(slices.Clone(xv)))); err != nil {
					t.Fatal(err)
				}
				vm.Reset()
				if err := vm.RunAll(); err != nil {
					t.Fatal(err)
				}
				fv, _, err := float64s(f.Value(), "f")
				if err != nil {
					t.Fatal(err)
				}
				gv, _, err := float64s(grads[0].Value(), "grad")
				if err != nil {
					t.Fatal(err)
				}
				return fv[0], gv
			}
			x0 := make([]float64, tc.shape.TotalSize())
			for i := range x0 {
				x0[i] = tc.scale * rng.NormFloat64()
			}
			_, grad := run(x0)
			fd := make([]float64, len(x0))
			xp := slices.Clone(x0)
			for i := range x0 {
				xp[i] = x0[i] + h
				fp, _ := run(xp)
				xp[i] = x0[i] - h
				fm, _ := run(xp)
				xp[i] = x0[i]
				fd[i] = (fp - fm) / (2 * h)
			}
			rel, scale := relErr(fd, grad), 0.0
			for _, v := range grad {
				scale = math.Max(scale, math.Abs(v))
			}
			t.Logf("max|g| %.3g, max|fd−g|/max|g| %.2g", scale, rel)
			if rel > tol || scale == 0 {
				t.Errorf("gradient %v\nfinite differences %v\nmax|fd−g|/max|g| = %.3g > %g", grad, fd, rel, tol)
			}
		})
	}
}

// TestCausalSoftmaxForward checks the causal softmax on rows far apart in magnitude, where
// gorgonia's SoftMax (stabilised by the tensor's first element) overflows in float32:
// visible entries must match a per-row softmax, masked entries must be exactly 0.
func TestCausalSoftmaxForward(t *testing.T) {
	const T = 3
	x := []float64{
		0, 5, 5, // row 0 sees only its first entry
		1, 2, 9,
		-3000, -2999, -2998, // far below row 0: exp(x − x[0]) underflows to 0 everywhere
		2000, 1990, 1e9, // far above: overflows; masked 1e9 must not matter
		100, 200, 9,
		4, 4, 4,
	}
	for _, dtype := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		t.Run(dtype.String(), func(t *testing.T) {
			in, err := newValue(dtype, x, 2, T, T)
			if err != nil {
				t.Fatal(err)
			}
			out, err := causalSoftmaxOp{}.Do(in)
			if err != nil {
				t.Fatal(err)
			}
			y, _, err := float64s(out, "y")
			if err != nil {
				t.Fatal(err)
			}
			tol := 1e-15
			if dtype == tensor.Float32 {
				tol = 1e-7
			}
			for r := range 2 * T {
				i := r % T
				var z float64
				for j := 0; j <= i; j++ {
					z += math.Exp(x[r*T+j] - x[r*T+i]) // any visible entry stabilises these rows
				}
				for j := range T {
					want := 0.0
					if j <= i {
						want = math.Exp(x[r*T+j]-x[r*T+i]) / z
					}
					if got := y[r*T+j]; math.IsNaN(got) || math.Abs(got-want) > tol || (j > i && got != 0) {
						t.Errorf("row %d, column %d: got %v, want %v", r, j, got, want)
					}
				}
			}
		})
	}
}

// TestCrossEntropyForward checks the cross-entropy op against logsumexp − logit, computed
// directly, on rows that overflow a naive exp.
func TestCrossEntropyForward(t *testing.T) {
	logits := []float64{
		0, 1, 2,
		1000, 999, 0,
		-500, -501, -502,
	}
	targets := []float64{2, 1, 0}
	want := ((math.Log(1+math.E+math.E*math.E) - 2) +
		(1000 + math.Log(1+math.Exp(-1)+math.Exp(-1000)) - 999) +
		(-500 + math.Log(1+math.Exp(-1)+math.Exp(-2)) + 500)) / 3
	lv, err := newValue(tensor.Float64, logits, 3, 3)
	if err != nil {
		t.Fatal(err)
	}
	tv, err := newValue(tensor.Float64, targets, 3)
	if err != nil {
		t.Fatal(err)
	}
	out, err := crossEntropyOp{}.Do(lv, tv)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := float64s(out, "loss")
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got[0]-want) > 1e-13 {
		t.Errorf("cross-entropy %v, want %v", got[0], want)
	}
}

// TestOpsRejectBadIndices checks that a token id outside the table, or not an integer, is an
// error rather than a silent wrong gather.
func TestOpsRejectBadIndices(t *testing.T) {
	table, err := newValue(tensor.Float64, make([]float64, 6), 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ids  []float64
		want string
	}{
		{"negative", []float64{0, -1}, "ids[1] = -1"},
		{"past the table", []float64{3}, "ids[0] = 3"},
		{"fractional", []float64{1.5}, "ids[0] = 1.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids, err := newValue(tensor.Float64, tc.ids, len(tc.ids))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := (embeddingOp{vocab: 3, dim: 2}).Do(table, ids); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("embedding: error %v, want one containing %q", err, tc.want)
			}
			logits, err := newValue(tensor.Float64, make([]float64, 3*len(tc.ids)), len(tc.ids), 3)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := (crossEntropyOp{}).Do(logits, ids); err == nil || !strings.Contains(err.Error(), "targets") {
				t.Errorf("cross-entropy: error %v, want one about the targets", err)
			}
		})
	}
}

// TestGELUForward checks the GELU op against x·Φ(x) at points where Φ is known to 16
// digits (Φ(0) = 1/2, Φ(±1), Φ(±2), Φ(3)), and that large |x| saturates to x and 0,
// in both dtypes.
func TestGELUForward(t *testing.T) {
	x := []float64{0, 1, -1, 2, -2, 3, 40, -40}
	phi := []float64{0.5, 0.8413447460685429, 0.15865525393145707, 0.9772498680518208, 0.022750131948179212, 0.9986501019683699, 1, 0}
	for _, dtype := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		t.Run(dtype.String(), func(t *testing.T) {
			in, err := newValue(dtype, x, 2, 4)
			if err != nil {
				t.Fatal(err)
			}
			out, err := geluOp{}.Do(in)
			if err != nil {
				t.Fatal(err)
			}
			y, _, err := float64s(out, "y")
			if err != nil {
				t.Fatal(err)
			}
			tol := 1e-15
			if dtype == tensor.Float32 {
				tol = 1e-7
			}
			for i, v := range x {
				want := v * phi[i]
				if math.Abs(y[i]-want) > tol*math.Max(1, math.Abs(want)) {
					t.Errorf("gelu(%v) = %.17g, want %.17g", v, y[i], want)
				}
			}
		})
	}
}
