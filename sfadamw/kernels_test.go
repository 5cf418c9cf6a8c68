//go:build amd64 && !purego

package sfadamw

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/cpu"

	"github.com/sfsweep/sfsweep/internal/par"
)

// simdKernelSets lists every SIMD kernel set with whether this CPU can run it.
var simdKernelSets = []struct {
	set kernelSet
	has bool
}{
	{avx512Kernels, cpu.X86.HasAVX512F},
	{avx2Kernels, cpu.X86.HasAVX2},
}

// sfScalarsFor returns the SF-AdamW kernel constants of step t, computed as SFAdamW.Step
// does.
func sfScalarsFor(b1, b2 float64, t int, eps, wd, gs, c, lr float64) sfScalars {
	return sfScalars{
		b2: float32(b2), omb2: float32(1 - b2),
		rs:  float32(1 / math.Sqrt(1-math.Pow(b2, float64(t)))),
		eps: float32(eps), wd: float32(wd), gs: float32(gs),
		c: float32(c), lr: float32(lr), coef: float32(lr * (b1*(1-c) - 1)),
	}
}

// adamScalarsFor returns the AdamW kernel constants of step t, computed as AdamW.Step does.
func adamScalarsFor(b1, b2 float64, t int, eps, wd, gs, lr float64) adamScalars {
	return adamScalars{
		decay: float32(1 - lr*wd),
		b1:    float32(b1), omb1: float32(1 - b1),
		b2: float32(b2), omb2: float32(1 - b2),
		step: float32(lr / (1 - math.Pow(b1, float64(t)))),
		rs:   float32(1 / math.Sqrt(1-math.Pow(b2, float64(t)))),
		eps:  float32(eps), gs: float32(gs),
	}
}

// kernelSFScalars are SF-AdamW constants drawn like real steps: β2 = 0.99 and 0.95, the
// bias correction of step 1 and step 1000, ε = 1e-8, gradient scales 1 and 0.3 (clipping),
// c_{t+1} from 1 (the first step) down to 0.001, plus a set of awkward values.
var kernelSFScalars = []sfScalars{
	sfScalarsFor(0.95, 0.99, 1, 1e-8, 0.1, 1, 1, 2e-3),
	sfScalarsFor(0.95, 0.99, 1000, 1e-8, 0.1, 1, 0.001, 2e-3),
	sfScalarsFor(0.9, 0.95, 1, 1e-8, 0.1, 0.3, 0.5, 1e-3),
	sfScalarsFor(0.9, 0.95, 1000, 1e-8, 0, 0.3, 0.001, 1e-3),
	sfScalarsFor(0.95, 0.99, 2, 1e-8, 0.05, 1, 0.5, 3e-4),
	sfScalarsFor(0, 0.999, 17, 1e-6, 0.1, 0.7, 1.0/17, 0.1),
	{b2: 0.5, omb2: 0.5, rs: 3, eps: 1e-30, wd: -2, gs: 1e20, c: 0.3, lr: 1e10, coef: -7},
	{b2: 1, omb2: 0, rs: 1, eps: 0, wd: 1, gs: 0, c: 0, lr: 0, coef: 0},
}

// kernelAdamScalars are AdamW constants drawn like real steps, plus a set of awkward values.
var kernelAdamScalars = []adamScalars{
	adamScalarsFor(0.9, 0.95, 1, 1e-8, 0.1, 1, 1e-3),
	adamScalarsFor(0.9, 0.95, 1000, 1e-8, 0.1, 0.3, 1e-3),
	adamScalarsFor(0.9, 0.99, 1, 1e-8, 0, 0.3, 6e-4),
	adamScalarsFor(0.9, 0.99, 1000, 1e-8, 0.1, 1, 6e-4),
	adamScalarsFor(0.5, 0.999, 3, 1e-6, 1, 1, 0.1),
	{decay: -1, b1: 2, omb1: -1, b2: 0.5, omb2: 0.5, step: 1e30, rs: 1e-30, eps: 1e-38, gs: 1e-20},
	{decay: 1, b1: 1, omb1: 0, b2: 1, omb2: 0, step: 0, rs: 0, eps: 0, gs: 1},
}

// specialFloats are the values mixed into kernel inputs: zeros of both signs, denormals,
// the smallest normal, values whose squares underflow or overflow, the largest finite
// values, infinities and NaN.
var specialFloats = []float32{
	0, float32(math.Copysign(0, -1)),
	math.Float32frombits(1), -math.Float32frombits(1), // smallest denormals
	math.Float32frombits(0x007fffff), -math.Float32frombits(0x00400000), // large denormals
	0x1p-126, -0x1p-126, // smallest normals
	1e-20, -3e-23, 1e20, -2e19,
	math.MaxFloat32, -math.MaxFloat32, 3e38, 1e38,
	float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
	math.Float32frombits(0xffc00001), // a NaN with sign and payload
	1, -1, 0.5,
}

// fillKernelInput fills s with a mix of realistic values of magnitude scale (positive
// when positive is set) and, with probability 1/4, special values.
func fillKernelInput(rng *rand.Rand, s []float32, scale float64, positive bool) {
	for i := range s {
		if rng.IntN(4) == 0 {
			s[i] = specialFloats[rng.IntN(len(specialFloats))]
			continue
		}
		x := rng.NormFloat64() * scale
		if positive {
			x = x * x
		}
		s[i] = float32(x)
	}
}

// sameFloat reports whether a and b have the same bits, or are both NaN.
func sameFloat(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
}

// kernelBuffers are four kernel operands carved out of larger buffers at an offset, with
// guard elements before and after so that a kernel writing out of bounds is caught.
type kernelBuffers struct {
	full [4][]float32 // whole buffers
	off  [4]int       // offset of each operand in its buffer
	n    int
}

const kernelGuard = 19

func newKernelBuffers(rng *rand.Rand, n int, off [4]int) *kernelBuffers {
	kb := &kernelBuffers{off: off, n: n}
	scales := [4]float64{1e-2, 1e-1, 1e-1, 1e-3} // gradient, parameters, state, second moment
	for j := range kb.full {
		kb.full[j] = make([]float32, off[j]+n+kernelGuard)
		fillKernelInput(rng, kb.full[j], scales[j], j == 3)
	}
	return kb
}

func (kb *kernelBuffers) clone() *kernelBuffers {
	c := *kb
	for j := range c.full {
		c.full[j] = slices.Clone(kb.full[j])
	}
	return &c
}

// operand returns operand j with its capacity reaching into the guard elements.
func (kb *kernelBuffers) operand(j int) []float32 { return kb.full[j][kb.off[j] : kb.off[j]+kb.n] }

// compare reports the first difference between kb and want, guard elements included.
func (kb *kernelBuffers) compare(want *kernelBuffers, names [4]string) error {
	for j := range kb.full {
		for i, w := range want.full[j] {
			if got := kb.full[j][i]; !sameFloat(got, w) {
				where := fmt.Sprintf("%s[%d]", names[j], i-kb.off[j])
				if i < kb.off[j] || i >= kb.off[j]+kb.n {
					where = fmt.Sprintf("guard element %d of %s's buffer", i, names[j])
				}
				return fmt.Errorf("%s = %g (%#08x), want %g (%#08x)", where, got, math.Float32bits(got), w, math.Float32bits(w))
			}
		}
	}
	return nil
}

// kernelLengths are the lengths the SIMD kernels are checked at: every length to 70 (all
// tails of both vector widths, several times over) and some large odd ones.
func kernelLengths() []int {
	var ns []int
	for n := range 71 {
		ns = append(ns, n)
	}
	return append(ns, 1001, 4099, 65537)
}

// kernelOffsets are element offsets of the four operands into their buffers, so that the
// kernels see unaligned and mutually misaligned slices.
var kernelOffsets = [][4]int{{0, 0, 0, 0}, {1, 1, 1, 1}, {3, 3, 3, 3}, {1, 3, 0, 2}, {16, 5, 7, 9}}

// TestSFAdamWKernelsBitwise checks that every SIMD SF-AdamW kernel the CPU can run gives
// the Go reference's results bit for bit.
func TestSFAdamWKernelsBitwise(t *testing.T) {
	checkKernelsBitwise(t, [4]string{"g", "y", "z", "v"}, 1, kernelSFScalars, sfAdamWGo,
		func(ks kernelSet) func(g, y, z, v []float32, k *sfScalars) { return ks.sf })
}

// TestAdamWKernelsBitwise checks that every SIMD AdamW kernel the CPU can run gives the Go
// reference's results bit for bit.
func TestAdamWKernelsBitwise(t *testing.T) {
	checkKernelsBitwise(t, [4]string{"g", "p", "m", "v"}, 3, kernelAdamScalars, adamWGo,
		func(ks kernelSet) func(g, p, m, v []float32, k *adamScalars) { return ks.adam })
}

// checkKernelsBitwise runs the kernel of every SIMD set the CPU has (kernel picks it from
// the set) and the Go reference on the same buffers, for every length, offset and scalar
// set, and compares the four operands (names) bit for bit.
func checkKernelsBitwise[K any](t *testing.T, names [4]string, seed uint64, scalars []K,
	ref func(a, b, c, d []float32, k *K), kernel func(kernelSet) func(a, b, c, d []float32, k *K),
) {
	for _, ks := range simdKernelSets {
		t.Run(ks.set.name, func(t *testing.T) {
			if !ks.has {
				t.Skipf("CPU lacks %s", ks.set.name)
			}
			rng := rand.New(rand.NewPCG(seed, seed+1))
			for _, n := range kernelLengths() {
				for _, off := range kernelOffsets {
					for si := range scalars {
						k := &scalars[si]
						in := newKernelBuffers(rng, n, off)
						want, got := in.clone(), in.clone()
						ref(want.operand(0), want.operand(1), want.operand(2), want.operand(3), k)
						kernel(ks.set)(got.operand(0), got.operand(1), got.operand(2), got.operand(3), k)
						if err := got.compare(want, names); err != nil {
							t.Fatalf("n = %d, offsets %v, scalars %+v: %v", n, off, *k, err)
						}
					}
				}
			}
		})
	}
}

// TestKernelsRejectShortOperands checks that the SIMD kernels, like the Go ones, panic
// when an operand is shorter than the gradient instead of running past its end.
func TestKernelsRejectShortOperands(t *testing.T) {
	sk, ak := &kernelSFScalars[0], &kernelAdamScalars[0]
	long, short := make([]float32, 40), make([]float32, 39)
	for _, ks := range simdKernelSets {
		if !ks.has {
			continue
		}
		for j := range 3 {
			ops := [3][]float32{long, long, long}
			ops[j] = short
			for _, run := range []func(){
				func() { ks.set.sf(long, ops[0], ops[1], ops[2], sk) },
				func() { ks.set.adam(long, ops[0], ops[1], ops[2], ak) },
			} {
				panicked := func() (p bool) {
					defer func() { p = recover() != nil }()
					run()
					return false
				}()
				if !panicked {
					t.Errorf("%s: operand %d shorter than the gradient: no panic", ks.set.name, j+1)
				}
			}
		}
	}
}

// funcPC returns the entry address of the function f.
func funcPC(f any) uintptr { return reflect.ValueOf(f).Pointer() }

// checkKernelSet reports an error unless ks is the kernel set called want, with that set's
// functions.
func checkKernelSet(ks kernelSet, want kernelSet) error {
	switch {
	case ks.name != want.name:
		return fmt.Errorf("got kernel set %q, want %q", ks.name, want.name)
	case funcPC(ks.sf) != funcPC(want.sf):
		return fmt.Errorf("kernel set %q: SF-AdamW kernel is not %s's", ks.name, want.name)
	case funcPC(ks.adam) != funcPC(want.adam):
		return fmt.Errorf("kernel set %q: AdamW kernel is not %s's", ks.name, want.name)
	}
	return nil
}

// TestKernelSelection checks the kernels chosen at start-up — the widest SIMD set on this
// machine unless SFSWEEP_KERNELS says otherwise — and chooseKernels for every CPU and
// environment setting.
func TestKernelSelection(t *testing.T) {
	env := os.Getenv("SFSWEEP_KERNELS")
	want := goKernels
	switch {
	case env == "go":
	case cpu.X86.HasAVX512F && env != "avx2":
		want = avx512Kernels
	case cpu.X86.HasAVX2:
		want = avx2Kernels
	}
	inUse := kernelSet{kernelName, sfAdamWKernel, adamWKernel}
	if err := checkKernelSet(inUse, want); err != nil {
		t.Errorf("SFSWEEP_KERNELS=%q, AVX-512F %v, AVX2 %v: kernels in use: %v",
			env, cpu.X86.HasAVX512F, cpu.X86.HasAVX2, err)
	}
	if env == "" && (cpu.X86.HasAVX512F || cpu.X86.HasAVX2) && kernelName == "go" {
		t.Errorf("the CPU has AVX2 or AVX-512F but the Go kernels are in use")
	}

	for _, tc := range []struct {
		env          string
		avx512, avx2 bool
		want         kernelSet
	}{
		{"", true, true, avx512Kernels},
		{"", true, false, avx512Kernels},
		{"", false, true, avx2Kernels},
		{"", false, false, goKernels},
		{"go", true, true, goKernels},
		{"go", false, true, goKernels},
		{"go", false, false, goKernels},
		{"avx2", true, true, avx2Kernels},
		{"avx2", false, true, avx2Kernels},
		{"avx2", false, false, goKernels},
		{"avx512", false, true, avx2Kernels},
		{"other", true, true, avx512Kernels},
	} {
		if err := checkKernelSet(chooseKernels(tc.env, tc.avx512, tc.avx2), tc.want); err != nil {
			t.Errorf("chooseKernels(%q, AVX-512F %v, AVX2 %v): %v", tc.env, tc.avx512, tc.avx2, err)
		}
	}
}

// withKernels runs f with the kernels of ks in use.
func withKernels(ks kernelSet, f func()) {
	sf, aw := sfAdamWKernel, adamWKernel
	defer func() { sfAdamWKernel, adamWKernel = sf, aw }()
	sfAdamWKernel, adamWKernel = ks.sf, ks.adam
	f()
}

// TestOptimizersMatchGoKernels runs SF-AdamW and AdamW for a few steps over a buffer long
// enough to be split between workers, with the Go kernels and with each SIMD set, and
// checks that parameters and state agree bit for bit.
func TestOptimizersMatchGoKernels(t *testing.T) {
	const n, steps = 3*grain + 37, 5
	run := func(ks kernelSet) (params []float32, vectors []Vector[float32]) {
		rng := rand.New(rand.NewPCG(5, 6))
		p, g := make([]float32, n), make([]float32, n)
		fillKernelInput(rng, p, 1, false)
		withKernels(ks, func() {
			sf, err := New(Config{LR: 1e-3, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1}, p[:n/2])
			if err != nil {
				t.Fatal(err)
			}
			aw, err := NewAdamW(AdamWConfig{Schedule: Schedule{Kind: Constant, Peak: 1e-3}, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1}, p[n/2:])
			if err != nil {
				t.Fatal(err)
			}
			for range steps {
				fillKernelInput(rng, g, 1e-2, false)
				sf.Step(g[:n/2])
				aw.Step(g[n/2:])
			}
			vectors = append(sf.State().Vectors, aw.State().Vectors...)
		})
		return p, vectors
	}
	wantP, wantV := run(goKernels)
	for _, ks := range simdKernelSets {
		if !ks.has {
			continue
		}
		gotP, gotV := run(ks.set)
		for i := range wantP {
			if !sameFloat(gotP[i], wantP[i]) {
				t.Fatalf("%s: params[%d] = %g, want %g", ks.set.name, i, gotP[i], wantP[i])
			}
		}
		for j, v := range wantV {
			for i := range v.Data {
				if !sameFloat(gotV[j].Data[i], v.Data[i]) {
					t.Fatalf("%s: %s[%d] = %g, want %g", ks.set.name, v.Name, i, gotV[j].Data[i], v.Data[i])
				}
			}
		}
	}
}

// BenchmarkKernels times the Go and the SIMD versions of both kernels over the same
// 10M-element buffers, interleaved in one loop and run on the default worker pool as the
// optimizers run them, and reports ns per parameter for each and the SIMD speed-ups. The
// SIMD set is the one selected at start-up (SFSWEEP_KERNELS=avx2 benchmarks AVX2).
func BenchmarkKernels(b *testing.B) {
	simd := kernelSet{kernelName, sfAdamWKernel, adamWKernel}
	if simd.name == "go" {
		b.Skip("the Go kernels are in use: no SIMD kernels to compare")
	}
	g, p := benchBuffers()
	y, z, v := slices.Clone(p), slices.Clone(p), make([]float32, benchParams)
	m := make([]float32, benchParams)
	sk, ak := sfScalarsFor(0.95, 0.99, 1000, 1e-8, 0.1, 1, 0.001, 2e-3), adamScalarsFor(0.9, 0.95, 1000, 1e-8, 0.1, 1, 1e-3)
	kernel := func(f func(g, a, b, c []float32)) func(lo, hi int) {
		return func(lo, hi int) { f(g[lo:hi], y[lo:hi], z[lo:hi], v[lo:hi]) }
	}
	runs := [4]func(lo, hi int){
		kernel(func(g, y, z, v []float32) { sfAdamWGo(g, y, z, v, &sk) }),
		kernel(func(g, y, z, v []float32) { simd.sf(g, y, z, v, &sk) }),
		func(lo, hi int) { adamWGo(g[lo:hi], p[lo:hi], m[lo:hi], v[lo:hi], &ak) },
		func(lo, hi int) { simd.adam(g[lo:hi], p[lo:hi], m[lo:hi], v[lo:hi], &ak) },
	}
	pool := par.Default()
	for _, r := range runs { // warm up: fault in all pages
		pool.For(benchParams, grain, r)
	}
	var d [4]time.Duration
	b.ResetTimer()
	for range b.N {
		for i, r := range runs {
			t0 := time.Now()
			pool.For(benchParams, grain, r)
			d[i] += time.Since(t0)
		}
	}
	n := float64(b.N) * benchParams
	perParam := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / n }
	b.ReportMetric(perParam(d[0]), "sf-go-ns/param")
	b.ReportMetric(perParam(d[1]), "sf-"+simd.name+"-ns/param")
	b.ReportMetric(perParam(d[2]), "adamw-go-ns/param")
	b.ReportMetric(perParam(d[3]), "adamw-"+simd.name+"-ns/param")
	b.ReportMetric(float64(d[0])/float64(d[1]), "sf-speedup")
	b.ReportMetric(float64(d[2])/float64(d[3]), "adamw-speedup")
	b.ReportMetric(0, "ns/op")
}
