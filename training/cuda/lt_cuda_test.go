//go:build cuda

package cuda

import (
	"math"
	"testing"

	"gorgonia.org/cu"

	"github.com/sfsweep/sfsweep/training/backend"
)

// The lt path's products against float64 and against cublasGemmEx on the same bfloat16
// operands, for the shapes of the engine's products: a linear layer, its input and weight
// gradients (the last accumulating into C), a residual read apart from D, and attention's
// strided batches; B a view at a 2-byte offset, as the parameters' views are, and a C read
// apart from D at a 4-byte offset. Each within float32's accumulation error of float64,
// and the same bits on a second run; whether they are GemmEx's bits is logged, for
// signing the path off.
func TestLtProducts(t *testing.T) {
	st := testStream(t, needFast(t, 0))
	for _, tc := range []struct {
		name       string
		p          ltProduct
		beta       float32
		apart      bool // C is not D
		offB, offC int  // elements the operands sit past an aligned base
	}{
		{"linear", ltProduct{tB: true, m: 100, n: 96, k: 64, lda: 64, ldb: 64, ldc: 96, ldd: 96, count: 1}, 0, false, 1, 0},
		{"input-grad", ltProduct{m: 100, n: 64, k: 96, lda: 96, ldb: 64, ldc: 64, ldd: 64, count: 1}, 0, false, 3, 0},
		{"weight-grad", ltProduct{tA: true, m: 96, n: 64, k: 100, lda: 96, ldb: 64, ldc: 64, ldd: 64, count: 1}, 1, false, 0, 1},
		{"residual", ltProduct{tB: true, m: 100, n: 64, k: 96, lda: 96, ldb: 96, ldc: 64, ldd: 64, count: 1}, 1, true, 1, 1},
		{"scores", ltProduct{tB: true, m: 37, n: 37, k: 16, lda: 16, ldb: 16, ldc: 37, ldd: 37, sa: 37 * 16, sb: 37 * 16, sc: 37 * 37, sd: 37 * 37, count: 6}, 0, false, 0, 0},
		{"scores-grad", ltProduct{tA: true, m: 37, n: 16, k: 37, lda: 37, ldb: 16, ldc: 16, ldd: 16, sa: 37 * 37, sb: 37 * 16, sc: 37 * 16, sd: 37 * 16, count: 6}, 0, false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// a subtest is a goroutine of its own: it binds the context itself
			defer st.lock()()
			m := devMem{t, st}
			p := tc.p
			ar, br := p.m, p.k
			if p.tA {
				ar = p.k
			}
			if p.tB {
				br = p.n
			}
			na, nb, nc := (p.count-1)*p.sa+ar*p.lda, (p.count-1)*p.sb+br*p.ldb, (p.count-1)*p.sc+p.m*p.ldc
			a16, b16 := toBF16(randn(na, 41)), toBF16(randn(nb, 42))
			c := randn(nc, 43)
			a, b := make([]float64, na), make([]float64, nb)
			for i, h := range a16 {
				a[i] = float64(bf(h))
			}
			for i, h := range b16 {
				b[i] = float64(bf(h))
			}
			ref, bound := make([]float64, nc), make([]float64, nc)
			ltRowMajor(p, 1, float64(tc.beta), a, b, f64(c), ref)
			abs := func(x []float64) []float64 {
				y := make([]float64, len(x))
				for i, v := range x {
					y[i] = math.Abs(v)
				}
				return y
			}
			ltRowMajor(p, 1, float64(tc.beta), abs(a), abs(b), abs(f64(c)), bound)
			da := up(m, a16, 2)
			db := up(m, append(make([]uint16, tc.offB), b16...), 2) + cu.DevicePtr(2*tc.offB)
			dc := up(m, append(make([]float32, tc.offC), c...), 4) + cu.DevicePtr(4*tc.offC)
			// GemmEx: D is C, so a residual is first copied into D
			dx := m.alloc(nc, 4)
			if err := st.dtod(dx, dc, nc); err != nil {
				t.Fatal(err)
			}
			if err := st.gemmBF16(p.tA, p.tB, p.m, p.n, p.k, 1, da, p.lda, p.sa, db, p.ldb, p.sb, tc.beta, dx, p.ldc, p.sc, p.count); err != nil {
				t.Fatal(err)
			}
			ex := down[float32](m, dx, nc)
			lt := func() []float32 {
				dd := m.alloc(nc, 4)
				if err := st.dtod(dd, dc, nc); err != nil {
					t.Fatal(err)
				}
				cin := dd
				if tc.apart {
					cin = dc
				}
				if err := st.gemmLt(p, 1, da, db, tc.beta, cin, dd); err != nil {
					t.Fatal(err)
				}
				return down[float32](m, dd, nc)
			}
			got := lt()
			if i := firstDiff(bits32(lt()), bits32(got)); i >= 0 {
				t.Errorf("D[%d] differs on a second run", i)
			}
			// float32 accumulation of k terms: within (k+2)·2⁻²² of Σ|a·b| + |β·c|
			tol := float64(p.k+2) * math.Ldexp(1, -22)
			for _, r := range []struct {
				name string
				x    []float32
			}{{"cuBLASLt", got}, {"GemmEx", ex}} {
				for i := range ref {
					if d := math.Abs(float64(r.x[i]) - ref[i]); !(d <= tol*bound[i]) {
						t.Fatalf("%s: D[%d] = %v, float64 %v (bound %.3g)", r.name, i, r.x[i], ref[i], tol*bound[i])
					}
				}
			}
			t.Logf("%s: cuBLASLt and GemmEx differ in %d of %d elements", tc.name, bitsDiffer(got, ex), nc)
		})
	}
}

// An engine on the lt path stays as close to float32 as the default bf16 path (its losses
// and each tensor's gradient within twice that path's distance, plus 10⁻⁴ of the loss or
// 10⁻³ of the gradient's norm) and gives the same bits run to run, alone and with the exact
// fast paths; LLaMA and GPT-2, odd shapes included. A wrong layout or residual gives errors
// of order one. Whether its bits are the default path's is logged.
func TestLtEngine(t *testing.T) {
	needFast(t, exactOn(t))
	for _, tc := range []engineShape{
		{"micro-llama", preset(t, "micro-llama"), 2, 8},
		{"odd", oddConfig(), 3, 7},
		{"tiny-gpt2", preset(t, "tiny-gpt2"), 4, 100},
		{"llama-124m", preset(t, "llama-124m"), 2, 512},
	} {
		t.Run(tc.name, func(t *testing.T) {
			toks, p, exact := engineCase(t, tc.cfg, tc.batch, tc.seqLen, 51)
			for _, base := range []fastPaths{0, exactOn(t)} {
				_, old := trainFast(t, tc.cfg, tc.batch, tc.seqLen, backend.BF16, base, p, toks)
				f := base | fastLt
				e, got := trainFast(t, tc.cfg, tc.batch, tc.seqLen, backend.BF16, f, p, toks)
				nearFloat32(t, f, tc.cfg, got, runFast(t, e, f, toks), exact, old, 1e-4, 1e-3)
				t.Logf("%s: %d of %d gradients differ from the path without lt; losses %v and %v", f, bitsDiffer(got.grads, old.grads), len(got.grads), got.losses, old.losses)
			}
		})
	}
}

// bitsDiffer counts the elements of a and b whose bits differ.
func bitsDiffer(a, b []float32) int {
	n := 0
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			n++
		}
	}
	return n
}
