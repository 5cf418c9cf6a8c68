//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/cu"

	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/gemm"
	"github.com/sfsweep/sfsweep/training/model"
	_ "github.com/sfsweep/sfsweep/training/native" // the "cpu" backend, the reference
)

// testStream returns a stream of its own on d for a test's device work, closed when the
// test ends.
func testStream(t testing.TB, d *device) *stream {
	t.Helper()
	st, err := d.newStream()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer st.lock()()
		if err := st.close(); err != nil {
			t.Error(err)
		}
	})
	return st
}

func preset(t testing.TB, name string) model.Config {
	t.Helper()
	c, err := model.Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// oddConfig has shapes that differ from one another and from powers of two (heads 3, head
// size 4, hidden 20), run below its context.
func oddConfig() model.Config {
	return model.Config{Arch: model.LLaMA, Vocab: 20, Dim: 12, Layers: 2, Heads: 3, Context: 10, Hidden: 20, Batch: 3}.WithDefaults()
}

func randomTokens(n, vocab int, seed uint64) []int32 {
	rng := rand.New(rand.NewPCG(seed, 2))
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(rng.IntN(vocab))
	}
	return ids
}

// relErr returns ‖a − b‖/‖b‖ (‖a − b‖ when b = 0), in float64.
func relErr(a, b []float32) float64 {
	var d, n float64
	for i := range b {
		x := float64(a[i]) - float64(b[i])
		d += x * x
		n += float64(b[i]) * float64(b[i])
	}
	if n == 0 {
		return math.Sqrt(d)
	}
	return math.Sqrt(d / n)
}

func TestRecipe(t *testing.T) {
	info, err := Info()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("device: %+v", info)
	d, err := getDevice()
	if err != nil {
		t.Fatal(err)
	}
	st := testStream(t, d)
	// Each subtest runs on a goroutine of its own, so each takes the stream (and makes the
	// context current on its thread) itself.
	t.Run("kernel", func(t *testing.T) {
		defer st.lock()()
		const n = 1000
		x, y := randn(n, 1), randn(n, 2)
		dx, err := alloc(n, 4)
		if err != nil {
			t.Fatal(err)
		}
		dy, err := alloc(n, 4)
		if err != nil {
			t.Fatal(err)
		}
		if err := htod(st, dx, x); err != nil {
			t.Fatal(err)
		}
		if err := htod(st, dy, y); err != nil {
			t.Fatal(err)
		}
		if err := st.launch("scale_add", lin(n), blk, dy, dx, float32(0.5), n); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, n)
		if err := dtoh(st, got, dy); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if want := 0.5*x[i] + y[i]; got[i] != want {
				t.Fatalf("scale_add[%d] = %v, want %v", i, got[i], want)
			}
		}
	})

	for _, tf32 := range []bool{false, true} {
		// fp32 SGEMM agrees with the CPU to float32 rounding; TF32 to its 10-bit mantissa
		tol := 1e-6
		if tf32 {
			tol = 2e-3
		}
		for _, tc := range []struct{ tA, tB bool }{{false, false}, {false, true}, {true, false}, {true, true}} {
			t.Run(fmt.Sprintf("sgemm/tf32=%v/tA=%v/tB=%v", tf32, tc.tA, tc.tB), func(t *testing.T) {
				defer st.lock()()
				if err := st.setTF32(tf32); err != nil {
					t.Fatal(err)
				}
				defer st.setTF32(false)
				m, n, k := 67, 45, 131
				lda, ldb, ldc := k+3, n+1, n+2
				if tc.tA {
					lda = m + 3
				}
				if tc.tB {
					ldb = k + 1
				}
				ar, br := m, k
				if tc.tA {
					ar = k
				}
				if tc.tB {
					br = n
				}
				a, b, c := randn(ar*lda, 3), randn(br*ldb, 4), randn(m*ldc, 5)
				da, _ := alloc(len(a), 4)
				db, _ := alloc(len(b), 4)
				dc, _ := alloc(len(c), 4)
				for _, p := range []struct {
					d cu.DevicePtr
					h []float32
				}{{da, a}, {db, b}, {dc, c}} {
					if err := htod(st, p.d, p.h); err != nil {
						t.Fatal(err)
					}
				}
				if err := st.gemm(tc.tA, tc.tB, m, n, k, 0.75, da, lda, db, ldb, 0.5, dc, ldc); err != nil {
					t.Fatal(err)
				}
				got := make([]float32, len(c))
				if err := dtoh(st, got, dc); err != nil {
					t.Fatal(err)
				}
				gemm.Gemm(tc.tA, tc.tB, m, n, k, 0.75, a, lda, b, ldb, 0.5, c, ldc)
				if e := relErr(got, c); e > tol {
					t.Errorf("relative error %.3g against training/gemm, want ≤ %g", e, tol)
				} else {
					t.Logf("relative error %.3g against training/gemm", e)
				}
			})
		}
	}

	t.Run("sgemm-batched", func(t *testing.T) {
		defer st.lock()()
		m, n, k, count := 9, 7, 5, 4
		a, b := randn(count*m*k, 6), randn(count*n*k, 7)
		da, _ := alloc(len(a), 4)
		db, _ := alloc(len(b), 4)
		dc, _ := alloc(count*m*n, 4)
		if err := htod(st, da, a); err != nil {
			t.Fatal(err)
		}
		if err := htod(st, db, b); err != nil {
			t.Fatal(err)
		}
		// C_i = A_i·B_iᵀ
		if err := st.gemmBatched(false, true, m, n, k, 1, da, k, m*k, db, k, n*k, 0, dc, n, m*n, count); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, count*m*n)
		if err := dtoh(st, got, dc); err != nil {
			t.Fatal(err)
		}
		want := make([]float32, count*m*n)
		for i := range count {
			gemm.Gemm(false, true, m, n, k, 1, a[i*m*k:], k, b[i*n*k:], k, 0, want[i*m*n:], n)
		}
		if e := relErr(got, want); e > 1e-6 {
			t.Errorf("relative error %.3g, want ≤ 1e-6", e)
		}
	})
}

// openEngine returns a CUDA engine closed when the test ends.
func openEngine(t *testing.T, cfg model.Config, batch, seqLen int, prec backend.Precision) *Engine {
	t.Helper()
	e, err := New(cfg, batch, seqLen, prec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	return e
}

// pair is a CPU and a CUDA engine with the same parameters.
type pair struct {
	cpu, gpu backend.Engine
}

func newPair(t *testing.T, cfg model.Config, batch, seqLen int, prec backend.Precision, seed uint64) pair {
	t.Helper()
	c, err := backend.New("cpu", cfg, batch, seqLen)
	if err != nil {
		t.Fatal(err)
	}
	g := openEngine(t, cfg, batch, seqLen, prec)
	p := make([]float32, cfg.NumParams())
	model.Init(cfg, seed, p)
	if err := c.WriteParams(p); err != nil {
		t.Fatal(err)
	}
	if err := g.WriteParams(p); err != nil {
		t.Fatal(err)
	}
	return pair{c, g}
}

// step runs Forward and Backward on both engines and returns both losses.
func (p pair) step(t *testing.T, tokens, targets []int32) (cpu, gpu float64) {
	t.Helper()
	lc, err := p.cpu.Forward(tokens, targets)
	if err != nil {
		t.Fatal(err)
	}
	lg, err := p.gpu.Forward(tokens, targets)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cpu.Backward(); err != nil {
		t.Fatal(err)
	}
	if err := p.gpu.Backward(); err != nil {
		t.Fatal(err)
	}
	return lc, lg
}

func TestMatchesCPU(t *testing.T) {
	for _, tc := range []struct {
		name           string
		cfg            model.Config
		batch, seqLen  int
		prec           backend.Precision
		lossTol, grTol float64
	}{
		// fp32 measured on an H100: loss ≤ 7.1e-9, per-tensor gradient ≤ 7.9e-7 (relative)
		{"micro-llama", preset(t, "micro-llama"), 2, 8, backend.FP32, 1e-6, 1e-5},
		{"odd", oddConfig(), 3, 7, backend.FP32, 1e-6, 1e-5},
		{"tiny-llama", preset(t, "tiny-llama"), 4, 128, backend.FP32, 1e-6, 1e-5},
		{"micro-gpt2", preset(t, "micro-gpt2"), 2, 8, backend.FP32, 1e-6, 1e-5},
		{"tiny-gpt2", preset(t, "tiny-gpt2"), 4, 100, backend.FP32, 1e-6, 1e-5},
		// TF32 measured: loss 6.3e-7, per-tensor gradient ≤ 8.8e-4
		{"tiny-llama/tf32", preset(t, "tiny-llama"), 4, 128, backend.TF32, 1e-5, 1e-2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			p := newPair(t, cfg, tc.batch, tc.seqLen, tc.prec, 1)
			n := tc.batch * tc.seqLen
			// two micro-batches: the gradients add up
			var worstLoss float64
			for mb := range 2 {
				toks := randomTokens(n+1, cfg.Vocab, uint64(10+mb))
				lc, lg := p.step(t, toks[:n], toks[1:])
				e := math.Abs(lg-lc) / math.Abs(lc)
				worstLoss = max(worstLoss, e)
				if e > tc.lossTol {
					t.Errorf("micro-batch %d: loss %.9g on the GPU, %.9g on the CPU: relative error %.3g > %g", mb, lg, lc, e, tc.lossTol)
				}
			}
			gc, gg := make([]float32, cfg.NumParams()), make([]float32, cfg.NumParams())
			if err := p.cpu.ReadGrads(gc); err != nil {
				t.Fatal(err)
			}
			if err := p.gpu.ReadGrads(gg); err != nil {
				t.Fatal(err)
			}
			var worst float64
			var worstName string
			for _, ts := range cfg.Layout().Tensors {
				a, b := gg[ts.Offset:ts.Offset+ts.Size], gc[ts.Offset:ts.Offset+ts.Size]
				e := relErr(a, b)
				if e > worst {
					worst, worstName = e, ts.Name
				}
				if e > tc.grTol || math.IsNaN(e) {
					t.Errorf("gradient of %s: relative error %.3g > %g", ts.Name, e, tc.grTol)
				}
			}
			t.Logf("loss relative error ≤ %.3g; worst gradient relative error %.3g (%s); whole gradient %.3g",
				worstLoss, worst, worstName, relErr(gg, gc))
		})
	}
}

func TestDeterministic(t *testing.T) {
	cfg := preset(t, "tiny-llama")
	p := newPair(t, cfg, 4, 128, backend.FP32, 3)
	n := 4 * 128
	toks := randomTokens(n+1, cfg.Vocab, 5)
	var losses [2]float64
	var grads [2][]float32
	for i := range 2 {
		p.gpu.ZeroGrad()
		l, err := p.gpu.Forward(toks[:n], toks[1:])
		if err != nil {
			t.Fatal(err)
		}
		if err := p.gpu.Backward(); err != nil {
			t.Fatal(err)
		}
		losses[i] = l
		grads[i] = make([]float32, cfg.NumParams())
		if err := p.gpu.ReadGrads(grads[i]); err != nil {
			t.Fatal(err)
		}
	}
	if losses[0] != losses[1] {
		t.Errorf("losses %v and %v differ", losses[0], losses[1])
	}
	for i := range grads[0] {
		if math.Float32bits(grads[0][i]) != math.Float32bits(grads[1][i]) {
			t.Fatalf("gradient %d: %v then %v", i, grads[0][i], grads[1][i])
		}
	}
}

// Each backend of the cuda family in the catalog is an engine of that backend's precision.
func TestRegisteredPrecisions(t *testing.T) {
	cfg := preset(t, "micro-llama")
	for _, b := range backend.Family(family) {
		eng, err := backend.New(b.Name, cfg, 2, 8)
		if err != nil {
			t.Fatal(err)
		}
		e := eng.(*Engine)
		if e.prec != b.Precision || e.name != b.Name || e.bf.on != (b.Precision == backend.BF16) {
			t.Errorf("backend %s: an engine of precision %s named %s (bf16 %v)", b.Name, e.prec, e.name, e.bf.on)
		}
		e.Close()
	}
}

func TestErrors(t *testing.T) {
	cfg := preset(t, "micro-llama")
	if _, err := New(cfg, 0, 8, backend.FP32); err == nil || !strings.Contains(err.Error(), "batch") {
		t.Errorf("New(batch = 0) = %v, want an error naming batch", err)
	}
	if _, err := New(cfg, 2, cfg.Context+1, backend.FP32); err == nil || !strings.Contains(err.Error(), "seqLen") {
		t.Errorf("New(seqLen > context) = %v, want an error naming seqLen", err)
	}
	if _, err := New(cfg, 2, 8, "fp8"); err == nil || !strings.Contains(err.Error(), `precision = "fp8"`) {
		t.Errorf("New(precision fp8) = %v, want an error naming the precision", err)
	}
	e, err := New(cfg, 2, 8, backend.FP32)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.Backward(); err == nil {
		t.Error("Backward without Forward: no error")
	}
	toks := randomTokens(16, cfg.Vocab, 1)
	bad := slices.Clone(toks)
	bad[5] = int32(cfg.Vocab)
	if _, err := e.Forward(bad, toks); err == nil || !strings.Contains(err.Error(), "tokens[5]") {
		t.Errorf("Forward(out-of-vocabulary token) = %v, want an error naming tokens[5]", err)
	}
	if _, err := e.Forward(toks, toks); err != nil {
		t.Fatal(err)
	}
	if err := e.Backward(); err != nil {
		t.Fatal(err)
	}
	if err := e.Backward(); err == nil {
		t.Error("second Backward: no error")
	}
	if err := e.ReadParams(make([]float32, 3)); err == nil || !strings.Contains(err.Error(), "3 elements") {
		t.Errorf("ReadParams(3 elements) = %v, want a length error", err)
	}
	if _, err := e.NewSFAdamW(sfadamw.Config{LR: -1, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8}); err == nil || !strings.Contains(err.Error(), "lr") {
		t.Errorf("NewSFAdamW(lr = -1) = %v, want an error naming lr", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Forward(toks, toks); err == nil {
		t.Error("Forward after Close: no error")
	}
}

// patterned returns n+1 tokens of a learnable sequence: runs of an arithmetic progression
// modulo vocab with random restarts.
func patterned(n, vocab int, seed uint64) []int32 {
	rng := rand.New(rand.NewPCG(seed, 3))
	ids := make([]int32, n+1)
	cur, stride := rng.IntN(vocab), 1+rng.IntN(7)
	for i := range ids {
		if rng.IntN(16) == 0 {
			cur, stride = rng.IntN(vocab), 1+rng.IntN(7)
		}
		ids[i] = int32(cur)
		cur = (cur + stride) % vocab
	}
	return ids
}

func TestTrainingCurve(t *testing.T) {
	cfg := preset(t, "tiny-llama")
	const batch, seqLen, steps = 8, 64, 50
	const tol = 1e-5 // relative difference of the losses at any step (measured: 3.6e-7)
	p := newPair(t, cfg, batch, seqLen, backend.FP32, 4)
	sf := sfadamw.DefaultConfig()
	sf.WarmupSteps = 5
	hostParams := p.cpu.(backend.HostEngine).Params()
	host, err := sfadamw.New(sf, hostParams)
	if err != nil {
		t.Fatal(err)
	}
	dev, err := p.gpu.(backend.DeviceOptimizers).NewSFAdamW(sf)
	if err != nil {
		t.Fatal(err)
	}
	n := batch * seqLen
	var worst float64
	var first, last [2]float64
	for s := range steps {
		toks := patterned(n, cfg.Vocab, uint64(s))
		p.cpu.ZeroGrad()
		p.gpu.ZeroGrad()
		lc, lg := p.step(t, toks[:n], toks[1:])
		host.Step(p.cpu.(backend.HostEngine).Grads())
		if err := dev.Step(); err != nil {
			t.Fatal(err)
		}
		e := math.Abs(lg-lc) / lc
		worst = max(worst, e)
		if e > tol {
			t.Errorf("step %d: loss %.6f on the GPU, %.6f on the CPU: relative difference %.3g > %g", s, lg, lc, e, tol)
		}
		if s == 0 {
			first = [2]float64{lc, lg}
		}
		last = [2]float64{lc, lg}
		if s%10 == 0 || s == steps-1 {
			t.Logf("step %2d: loss cpu %.6f gpu %.6f", s, lc, lg)
		}
	}
	t.Logf("%d steps: worst relative loss difference %.3g", steps, worst)
	if last[1] > first[1]-1 {
		t.Errorf("the GPU loss went from %.4f to %.4f: it should fall by more than 1 nat", first[1], last[1])
	}
}
