//go:build cuda

package cuda

import (
	"math"
	"os"
	"slices"
	"testing"

	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/model"
)

// needFast returns the device, after skipping the test when the loaded PTX predates the
// paths of f (the embedded copy not yet rebuilt), or failing it when a PTX given by PTXEnv
// lacks them.
func needFast(t testing.TB, f fastPaths) *device {
	t.Helper()
	d, err := getDevice()
	if err != nil {
		t.Fatal(err)
	}
	if k := d.missing(fastKernels(f)); k != "" {
		if os.Getenv(PTXEnv) == "" {
			t.Skipf("the embedded PTX lacks kernel %s: set %s to a PTX built from kernels.cu", k, PTXEnv)
		}
		t.Fatalf("the PTX of %s lacks kernel %s", PTXEnv, k)
	}
	return d
}

// usable is f less the paths whose kernels the loaded PTX lacks where that is the embedded
// copy, which may predate a path off by default (each one left out is logged), so that the
// others are tested on any GPU; a PTX given by PTXEnv must hold every path's (needFast).
func usable(t testing.TB, f fastPaths) fastPaths {
	t.Helper()
	if os.Getenv(PTXEnv) != "" {
		return f
	}
	d, err := getDevice()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range fastNames {
		if k := d.missing(n.kernels); f.has(n.path) && k != "" {
			t.Logf("%s left out: the embedded PTX lacks kernel %s (set %s to a PTX built from kernels.cu)", n.name, k, PTXEnv)
			f &^= n.path
		}
	}
	for _, j := range fastJoint {
		if k := d.missing(j.kernels); f&j.paths == j.paths && k != "" {
			t.Logf("%s left out: the embedded PTX lacks kernel %s, which it needs with %s (set %s to a PTX built from kernels.cu)", j.user, k, j.paths&^j.user, PTXEnv)
			f &^= j.user
		}
	}
	return f
}

// loaded reports whether the loaded PTX holds the kernels of the paths f, logging the
// first it lacks where that is the embedded copy; a PTX given by PTXEnv must hold them.
func loaded(t testing.TB, f fastPaths) bool {
	t.Helper()
	if os.Getenv(PTXEnv) != "" {
		needFast(t, f)
		return true
	}
	d, err := getDevice()
	if err != nil {
		t.Fatal(err)
	}
	if k := d.missing(fastKernels(f)); k != "" {
		t.Logf("%s not run: the embedded PTX lacks kernel %s (set %s to a PTX built from kernels.cu)", f, k, PTXEnv)
		return false
	}
	return true
}

// exactOn and allOn are exactFast and allFast less what usable leaves out.
func exactOn(t testing.TB) fastPaths { return usable(t, exactFast()) }
func allOn(t testing.TB) fastPaths   { return usable(t, allFast()) }

// fastRun is what a fast path must leave bitwise as the default path does: the losses of
// two micro-batches (the second after an evaluation Forward without Backward) and the
// gradients they add up to.
type fastRun struct {
	losses []float64
	grads  []float32
}

func runFast(t *testing.T, e *Engine, f fastPaths, toks [][]int32) fastRun {
	t.Helper()
	e.fast = f
	e.ZeroGrad()
	var out fastRun
	n := e.n
	for i, tk := range toks {
		if i == 1 {
			// an evaluation Forward between micro-batches changes nothing
			l, err := e.Forward(toks[0][:n], toks[0][1:])
			if err != nil {
				t.Fatal(err)
			}
			out.losses = append(out.losses, l)
		}
		l, err := e.Forward(tk[:n], tk[1:])
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Backward(); err != nil {
			t.Fatal(err)
		}
		out.losses = append(out.losses, l)
	}
	out.grads = make([]float32, e.NumParams())
	if err := e.ReadGrads(out.grads); err != nil {
		t.Fatal(err)
	}
	return out
}

// Each fast path but flash gives bitwise the losses and gradients of the default path,
// for both architectures, in bf16 and float32, with vocabularies below, at and above the
// cross-entropy's block of 512 threads and not multiples of it.
func TestFastPathsBitwise(t *testing.T) {
	all := exactOn(t)
	needFast(t, all)
	odd := model.Config{Arch: model.LLaMA, Vocab: 1000, Dim: 64, Layers: 2, Heads: 4, Context: 40, Hidden: 96, Batch: 3}.WithDefaults()
	for _, tc := range []struct {
		name          string
		cfg           model.Config
		batch, seqLen int
		prec          backend.Precision
	}{
		{"micro-llama", preset(t, "micro-llama"), 2, 8, backend.BF16},
		{"odd-vocab", odd, 3, 37, backend.BF16},
		{"odd-vocab/fp32", odd, 3, 37, backend.FP32},
		{"tiny-llama", preset(t, "tiny-llama"), 4, 128, backend.BF16},
		{"tiny-gpt2", preset(t, "tiny-gpt2"), 4, 100, backend.BF16},
		{"micro-gpt2/tf32", preset(t, "micro-gpt2"), 2, 8, backend.TF32},
		{"llama-124m", preset(t, "llama-124m"), 2, 512, backend.BF16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := fastEngine(t, tc.cfg, tc.batch, tc.seqLen, tc.prec, all)
			n := tc.batch * tc.seqLen
			toks := [][]int32{randomTokens(n+1, tc.cfg.Vocab, 21), randomTokens(n+1, tc.cfg.Vocab, 22)}
			// a target at each edge of the vocabulary
			toks[0][1], toks[0][n] = 0, int32(tc.cfg.Vocab-1)
			e.roundPasses = 0
			old := runFast(t, e, 0, toks)
			if tc.prec == backend.BF16 && e.roundPasses == 0 {
				t.Errorf("the default path issued no rounding pass")
			}
			for _, fn := range append(slices.Clip(fastNames), fastPath{name: all.String(), path: all}) {
				if fn.path&^all != 0 {
					continue
				}
				e.roundPasses = 0
				got := runFast(t, e, fn.path, toks)
				// with every path on, a LLaMA micro-batch rounds no activation itself
				if fn.path == all && tc.cfg.Arch == model.LLaMA && e.roundPasses != 0 {
					t.Errorf("%s: %d rounding passes, want none", fn.name, e.roundPasses)
				}
				for i := range old.losses {
					if math.Float64bits(got.losses[i]) != math.Float64bits(old.losses[i]) {
						t.Errorf("%s: loss %d = %v, the default path's %v", fn.name, i, got.losses[i], old.losses[i])
					}
				}
				for _, ts := range tc.cfg.Layout().Tensors {
					for i := ts.Offset; i < ts.Offset+ts.Size; i++ {
						if math.Float32bits(got.grads[i]) != math.Float32bits(old.grads[i]) {
							t.Errorf("%s: gradient of %s[%d] = %v, the default path's %v", fn.name, ts.Name, i-ts.Offset, got.grads[i], old.grads[i])
							break
						}
					}
				}
			}
		})
	}
}

// fastEngine is an engine made with the fast paths f, its parameters initialised from
// seed 7, closed when the test ends.
func fastEngine(t *testing.T, cfg model.Config, batch, seqLen int, prec backend.Precision, f fastPaths) *Engine {
	t.Helper()
	e, err := newEngine(cfg, batch, seqLen, prec, f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	p := make([]float32, cfg.NumParams())
	model.Init(cfg, 7, p)
	if err := e.WriteParams(p); err != nil {
		t.Fatal(err)
	}
	return e
}

// trainFast is an engine made with the fast paths f and the parameters p, closed when
// the test ends, and runFast's run of toks on it.
func trainFast(t *testing.T, cfg model.Config, batch, seqLen int, prec backend.Precision, f fastPaths, p []float32, toks [][]int32) (*Engine, fastRun) {
	t.Helper()
	e, err := newEngine(cfg, batch, seqLen, prec, f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if err := e.WriteParams(p); err != nil {
		t.Fatal(err)
	}
	return e, runFast(t, e, f, toks)
}

// engineShape is an engine test's model and micro-batch.
type engineShape struct {
	name          string
	cfg           model.Config
	batch, seqLen int
}

// engineCase is an engine test's inputs and reference: two micro-batches of tokens drawn
// from seed and seed+1, the parameters initialised from seed 9, and runFast's float32 run
// of them on the default path.
func engineCase(t *testing.T, cfg model.Config, batch, seqLen int, seed uint64) (toks [][]int32, p []float32, exact fastRun) {
	t.Helper()
	n := batch * seqLen
	toks = [][]int32{randomTokens(n+1, cfg.Vocab, seed), randomTokens(n+1, cfg.Vocab, seed+1)}
	p = make([]float32, cfg.NumParams())
	model.Init(cfg, 9, p)
	_, exact = trainFast(t, cfg, batch, seqLen, backend.FP32, 0, p, toks)
	return toks, p, exact
}

// nearFloat32 checks a run of the paths f that changes the bits: the same bits on a
// second run (again), and its losses and each tensor's gradient within twice the distance
// from float32 (exact) of the bf16 run without them (old), plus lossTol of the loss and
// gradTol of the gradient's norm; no gradient 5 % off.
func nearFloat32(t *testing.T, f fastPaths, cfg model.Config, got, again, exact, old fastRun, lossTol, gradTol float64) {
	t.Helper()
	for i := range got.losses {
		if math.Float64bits(got.losses[i]) != math.Float64bits(again.losses[i]) {
			t.Errorf("%s: loss %d = %v, then %v", f, i, got.losses[i], again.losses[i])
		}
		if d := math.Abs(got.losses[i] - exact.losses[i]); d > 2*math.Abs(old.losses[i]-exact.losses[i])+lossTol*math.Abs(exact.losses[i]) {
			t.Errorf("%s: loss %d = %v, float32 %v, the bf16 path without it %v", f, i, got.losses[i], exact.losses[i], old.losses[i])
		}
	}
	if i := firstDiff(bits32(got.grads), bits32(again.grads)); i >= 0 {
		t.Errorf("%s: gradient %d = %v, then %v", f, i, got.grads[i], again.grads[i])
	}
	oldErr := gradErrs(cfg, old.grads, exact.grads)
	for name, err := range gradErrs(cfg, got.grads, exact.grads) {
		if !(err <= 2*oldErr[name]+gradTol) || !(err <= 5e-2) {
			t.Errorf("%s: gradient of %s off float32's by %.3g, the bf16 path without it by %.3g", f, name, err, oldErr[name])
		}
	}
}

// NeedBytes follows the buffers of the fast paths.
func TestFastPathsNeedBytes(t *testing.T) {
	all := allOn(t)
	needFast(t, all)
	for _, name := range []string{"micro-llama", "micro-gpt2"} {
		cfg := preset(t, name)
		for _, p := range []backend.Precision{backend.FP32, backend.BF16} {
			var held [2]int64
			for i, f := range []fastPaths{0, all} {
				e, err := newEngine(cfg, 3, 8, p, f)
				if err != nil {
					t.Fatal(err)
				}
				held[i] = int64(e.DeviceBytes())
				e.Close()
			}
			if got, want := needBytes(cfg, 3, 8, p, all)-needBytes(cfg, 3, 8, p, 0), held[1]-held[0]; got != want {
				t.Errorf("%s, %s: the fast paths add %d bytes to NeedBytes, %d to the engine", name, p, got, want)
			}
		}
	}
}
