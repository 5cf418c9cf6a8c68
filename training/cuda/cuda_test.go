//go:build cuda

package cuda

import (
	"errors"
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

func randn(n int, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
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
	// Each subtest runs on a goroutine of its own, so each takes the device (and makes its
	// context current on its thread) itself.
	t.Run("kernel", func(t *testing.T) {
		defer d.lock()()
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
		if err := htod(dx, x); err != nil {
			t.Fatal(err)
		}
		if err := htod(dy, y); err != nil {
			t.Fatal(err)
		}
		if err := d.launch("scale_add", lin(n), blk, dy, dx, float32(0.5), n); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, n)
		if err := dtoh(got, dy); err != nil {
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
				defer d.lock()()
				if err := d.setTF32(tf32); err != nil {
					t.Fatal(err)
				}
				defer d.setTF32(false)
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
					if err := htod(p.d, p.h); err != nil {
						t.Fatal(err)
					}
				}
				if err := d.gemm(tc.tA, tc.tB, m, n, k, 0.75, da, lda, db, ldb, 0.5, dc, ldc); err != nil {
					t.Fatal(err)
				}
				got := make([]float32, len(c))
				if err := dtoh(got, dc); err != nil {
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
		defer d.lock()()
		m, n, k, count := 9, 7, 5, 4
		a, b := randn(count*m*k, 6), randn(count*n*k, 7)
		da, _ := alloc(len(a), 4)
		db, _ := alloc(len(b), 4)
		dc, _ := alloc(count*m*n, 4)
		if err := htod(da, a); err != nil {
			t.Fatal(err)
		}
		if err := htod(db, b); err != nil {
			t.Fatal(err)
		}
		// C_i = A_i·B_iᵀ
		if err := d.gemmBatched(false, true, m, n, k, 1, da, k, m*k, db, k, n*k, 0, dc, n, m*n, count); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, count*m*n)
		if err := dtoh(got, dc); err != nil {
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
	g, err := New(cfg, batch, seqLen, prec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Error(err)
		}
	})
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

// NeedBytes counts exactly what an engine and its optimizer allocate, for both
// architectures and both optimizers.
func TestNeedBytes(t *testing.T) {
	for _, name := range []string{"micro-llama", "micro-gpt2"} {
		cfg := preset(t, name)
		for _, sf := range []bool{true, false} {
			for _, p := range []backend.Precision{backend.FP32, backend.BF16} {
				e, err := New(cfg, 3, 8, p)
				if err != nil {
					t.Fatal(err)
				}
				var o backend.Optimizer
				if sf {
					o, err = e.NewSFAdamW(sfadamw.Config{LR: 1e-3, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8})
				} else {
					o, err = e.NewAdamW(sfadamw.DefaultAdamWConfig(10))
				}
				if err == nil {
					err = o.(backend.Averager).StartAverages(0.99)
				}
				if err != nil {
					t.Fatal(err)
				}
				// AdamW keeps one average of the two NeedBytes counts.
				extra := int64(0)
				if !sf {
					extra = 4 * int64(e.NumParams())
				}
				if got, want := NeedBytes(cfg, 3, 8, p), int64(e.DeviceBytes())+extra; got != want {
					t.Errorf("%s, %s, SF-AdamW %v: NeedBytes = %d, the engine, its optimizer and averages hold %d", name, p, sf, got, want)
				}
				e.Close()
			}
		}
	}
}

// A trial larger than the GPU is an *backend.OutOfMemoryError that gives what it needs and
// what the device has, and says it does not fit.
func TestOutOfMemory(t *testing.T) {
	cfg := model.Config{Arch: model.LLaMA, Vocab: 50304, Dim: 8192, Layers: 48, Heads: 64, Context: 4096, Hidden: 22016, Batch: 64}.WithDefaults()
	_, err := backend.New("cuda", cfg, 64, 4096)
	var oom *backend.OutOfMemoryError
	if !errors.As(err, &oom) {
		t.Fatalf("New(a model larger than the GPU) = %v, want an *backend.OutOfMemoryError", err)
	}
	if !errors.Is(err, cu.OutOfMemory) || oom.Fits() || oom.Need != NeedBytes(cfg, 64, 4096, backend.FP32) || oom.Total <= 0 || oom.Free <= 0 || oom.Free > oom.Total {
		t.Errorf("out of memory: %+v", oom)
	}
	for _, want := range []string{"out of device memory", "needs", "GiB", "does not fit"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// the device is usable afterwards: nothing of the failed engine is left allocated
	e, err := New(preset(t, "micro-llama"), 2, 8, backend.FP32)
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
}

// hostOpt is an sfadamw optimizer over host parameters, stepped with a given gradient.
type hostOpt interface {
	Step(grad []float32)
	State() sfadamw.State[float32]
	Restore(sfadamw.State[float32]) error
}

func TestOptimizersMatchCPU(t *testing.T) {
	cfg := preset(t, "tiny-llama")
	sf := sfadamw.DefaultConfig()
	sf.WarmupSteps = 3
	refined := sf
	refined.C, refined.GradClip = 200, 0.5
	aw := sfadamw.DefaultAdamWConfig(20) // gradient clipping at 1, cosine schedule
	for _, tc := range []struct {
		name string
		dev  func(e *Engine) (backend.Optimizer, error)
		host func(p []float32) (hostOpt, error)
	}{
		{"sfadamw", func(e *Engine) (backend.Optimizer, error) { return e.NewSFAdamW(sf) },
			func(p []float32) (hostOpt, error) { return sfadamw.New(sf, p) }},
		{"sfadamw-refined-clipped", func(e *Engine) (backend.Optimizer, error) { return e.NewSFAdamW(refined) },
			func(p []float32) (hostOpt, error) { return sfadamw.New(refined, p) }},
		{"adamw", func(e *Engine) (backend.Optimizer, error) { return e.NewAdamW(aw) },
			func(p []float32) (hostOpt, error) { return sfadamw.NewAdamW(aw, p) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const batch, seqLen = 2, 64
			e, err := New(cfg, batch, seqLen, backend.FP32)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			params := make([]float32, cfg.NumParams())
			model.Init(cfg, 2, params)
			if err := e.WriteParams(params); err != nil {
				t.Fatal(err)
			}
			dev, err := tc.dev(e)
			if err != nil {
				t.Fatal(err)
			}
			host, err := tc.host(params)
			if err != nil {
				t.Fatal(err)
			}
			grad, got := make([]float32, len(params)), make([]float32, len(params))
			n := batch * seqLen
			stepBoth := func(step int) {
				// the gradient at the device's parameters, used by both optimizers
				e.ZeroGrad()
				toks := randomTokens(n+1, cfg.Vocab, uint64(100+step))
				if _, err := e.Forward(toks[:n], toks[1:]); err != nil {
					t.Fatal(err)
				}
				if err := e.Backward(); err != nil {
					t.Fatal(err)
				}
				if err := e.ReadGrads(grad); err != nil {
					t.Fatal(err)
				}
				host.Step(grad)
				if err := dev.Step(); err != nil {
					t.Fatal(err)
				}
				if err := e.ReadParams(got); err != nil {
					t.Fatal(err)
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(params[i]) {
						t.Fatalf("step %d: parameter %d = %v on the device, %v on the host", step, i, got[i], params[i])
					}
				}
			}
			for step := range 5 {
				stepBoth(step)
			}
			equalStates(t, dev.State(), host.State())
			// The device's state restored on the host and the host's on the device: both
			// continue identically.
			host2, err := tc.host(params)
			if err != nil {
				t.Fatal(err)
			}
			if err := host2.Restore(dev.State()); err != nil {
				t.Fatal(err)
			}
			if err := dev.Restore(host.State()); err != nil {
				t.Fatal(err)
			}
			host = host2
			for step := 5; step < 8; step++ {
				stepBoth(step)
			}
			equalStates(t, dev.State(), host.State())
			bad := host.State()
			bad.Vectors = bad.Vectors[:1]
			if err := dev.Restore(bad); err == nil {
				t.Error("Restore of a state with a vector missing: no error")
			}
		})
	}
}

func equalStates(t *testing.T, a, b sfadamw.State[float32]) {
	t.Helper()
	if a.Algorithm != b.Algorithm || a.Step != b.Step || a.SumLR2 != b.SumLR2 || a.MaxLR != b.MaxLR ||
		a.LastLR != b.LastLR || a.LastC != b.LastC || len(a.Vectors) != len(b.Vectors) {
		t.Fatalf("device state %+v\nhost state %+v", strip(a), strip(b))
	}
	for i, v := range a.Vectors {
		w := b.Vectors[i]
		if v.Name != w.Name || !slices.Equal(v.Data, w.Data) {
			t.Fatalf("state vector %d: %q on the device, %q on the host, or their values differ", i, v.Name, w.Name)
		}
	}
}

func strip(s sfadamw.State[float32]) sfadamw.State[float32] {
	s.Vectors = nil
	return s
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
