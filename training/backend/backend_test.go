package backend_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/model"
	_ "github.com/sfsweep/sfsweep/training/native" // registers "cpu"
)

func TestRegistry(t *testing.T) {
	if !slices.Contains(backend.Names(), "cpu") {
		t.Fatalf("Names() = %v, want it to hold cpu", backend.Names())
	}
	cfg, err := model.Preset("micro-llama")
	if err != nil {
		t.Fatal(err)
	}
	_, err = backend.New("tpu", cfg, 1, 4)
	if err == nil || !strings.Contains(err.Error(), `"tpu"`) || !strings.Contains(err.Error(), "cpu") {
		t.Errorf("New(tpu): error %v, want one naming the backend and the available ones", err)
	}
	if _, err := backend.New("cpu", cfg, 0, 4); err == nil || !strings.Contains(err.Error(), "batch = 0") {
		t.Errorf("New(cpu, batch 0): error %v, want one naming batch", err)
	}
	for _, name := range []string{"cpu", "tpu"} { // twice; not in the catalog
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%s) did not panic", name)
				}
			}()
			backend.Register(name, nil)
		}()
	}
}

// A backend of the catalog that this build lacks (cuda, without the cuda tag) is an
// *UnavailableError that names it and says how to build it in; the build's devices are
// those of the backends it carries.
func TestUnavailable(t *testing.T) {
	if slices.Contains(backend.Names(), "cuda") {
		t.Skip("this build carries the cuda backend")
	}
	cfg, err := model.Preset("micro-llama")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cuda", "cuda-tf32", "cuda-bf16"} {
		_, err := backend.New(name, cfg, 1, 4)
		var ue *backend.UnavailableError
		if !errors.As(err, &ue) || !errors.Is(err, backend.ErrUnavailable) || ue.Backend.Device != backend.DeviceCUDA {
			t.Fatalf("New(%s) = %v, want an *UnavailableError of device cuda", name, err)
		}
		for _, want := range []string{`"` + name + `"`, "not in this build", "it has cpu", "-tags cuda", "docs/gpu.md"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("New(%s): %q does not say %q", name, err, want)
			}
		}
	}
	if err := backend.Check("cpu"); err != nil {
		t.Errorf("Check(cpu) = %v", err)
	}
	if err := backend.Check("tpu"); err == nil || errors.Is(err, backend.ErrUnavailable) || !strings.Contains(err.Error(), "cpu, cuda, cuda-tf32, cuda-bf16") {
		t.Errorf("Check(tpu) = %v, want an error listing the catalog", err)
	}
	if d := backend.Devices(); !slices.Equal(d, []string{"cpu"}) {
		t.Errorf("Devices() = %v, want [cpu]", d)
	}
	for _, b := range backend.Catalog() {
		if b.Device != backend.DeviceCPU && b.Device != backend.DeviceCUDA || b.Summary == "" {
			t.Errorf("catalog entry %+v", b)
		}
	}
}

func TestOutOfMemoryError(t *testing.T) {
	cause := errors.New("CUDA_ERROR_OUT_OF_MEMORY")
	big := &backend.OutOfMemoryError{Backend: "cuda", Need: 90 << 30, Total: 80 << 30, Free: 79 << 30, What: "llama of 124M parameters", Err: cause}
	if big.Fits() || !errors.Is(big, cause) {
		t.Errorf("%+v: Fits or Unwrap wrong", big)
	}
	for _, want := range []string{"cuda: out of device memory", "needs 90.00 GiB", "has 80.00 GiB of which 79.00 GiB free", "does not fit", "micro_batch"} {
		if !strings.Contains(big.Error(), want) {
			t.Errorf("%q does not say %q", big, want)
		}
	}
	busy := &backend.OutOfMemoryError{Backend: "cuda", Need: 10 << 30, Total: 80 << 30, Free: 2 << 30, Err: cause}
	if !busy.Fits() || !strings.Contains(busy.Error(), "other processes hold the rest") {
		t.Errorf("%q: Fits %v", busy, busy.Fits())
	}
}

// The cpu engine through the interface: a host engine whose Read/Write copy its buffers,
// whose Backward accumulates, and whose misuse is an error, not a panic.
func TestCPUEngine(t *testing.T) {
	cfg, err := model.Preset("micro-llama")
	if err != nil {
		t.Fatal(err)
	}
	e, err := backend.New("cpu", cfg, 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	h, ok := e.(backend.HostEngine)
	if !ok {
		t.Fatal("the cpu engine is not a HostEngine")
	}
	n := e.NumParams()
	if n != cfg.NumParams() || e.Batch() != 2 || e.SeqLen() != 4 {
		t.Fatalf("NumParams, Batch, SeqLen = %d, %d, %d; want %d, 2, 4", n, e.Batch(), e.SeqLen(), cfg.NumParams())
	}
	w := make([]float32, n)
	model.Init(cfg, 7, w)
	if err := e.WriteParams(w); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.Params(), w) {
		t.Fatal("WriteParams did not set Params")
	}
	if err := e.WriteParams(w[1:]); err == nil || !strings.Contains(err.Error(), "want") {
		t.Errorf("WriteParams of a short slice: error %v", err)
	}
	if err := e.Backward(); err == nil {
		t.Error("Backward without Forward: no error")
	}
	tok := []int32{1, 2, 3, 4, 5, 6, 7, 8}
	tgt := []int32{2, 3, 4, 5, 6, 7, 8, 9}
	g1 := make([]float32, n)
	g2 := make([]float32, n)
	e.ZeroGrad()
	for i := range 2 {
		loss, err := e.Forward(tok, tgt)
		if err != nil || !(loss > 0) {
			t.Fatalf("Forward: loss %v, error %v", loss, err)
		}
		if err := e.Backward(); err != nil {
			t.Fatal(err)
		}
		dst := []([]float32){g1, g2}[i]
		if err := e.ReadGrads(dst); err != nil {
			t.Fatal(err)
		}
	}
	// Each micro-batch adds two terms into the tied embedding's gradient (the head's and the
	// gather's), so there the sum of two equal micro-batches rounds as ((h+e)+h)+e, not as
	// 2(h+e): within a few ulps of the tensor's largest entry. Elsewhere it is exact.
	wte, _ := cfg.Layout().Tensor("transformer.wte.weight")
	var scale float32
	for _, g := range g1[wte.Offset : wte.Offset+wte.Size] {
		scale = max(scale, abs(g))
	}
	var nonzero int
	for i := range g1 {
		if g1[i] != 0 {
			nonzero++
		}
		tol := float32(0)
		if i >= wte.Offset && i < wte.Offset+wte.Size {
			tol = 1e-6 * scale
		}
		if abs(g2[i]-2*g1[i]) > tol {
			t.Fatalf("gradient %d after two equal micro-batches = %v, want 2 × %v", i, g2[i], g1[i])
		}
	}
	if nonzero == 0 {
		t.Fatal("all gradients zero")
	}
	got := make([]float32, n)
	if err := e.ReadParams(got); err != nil || !slices.Equal(got, w) {
		t.Fatalf("ReadParams: %v, equal %v", err, slices.Equal(got, w))
	}
}

// Resolve maps a backend and a precision to the catalog's backend of that family, and
// names the family's precisions when it has no such one.
func TestResolve(t *testing.T) {
	for _, c := range []struct {
		name string
		prec backend.Precision
		want string
	}{
		{"cpu", "", "cpu"}, {"cpu", "fp32", "cpu"}, {"cuda", "", "cuda"}, {"cuda", "fp32", "cuda"},
		{"cuda", "bf16", "cuda-bf16"}, {"cuda", "tf32", "cuda-tf32"}, {"cuda-tf32", "bf16", "cuda-bf16"},
		{"cuda-bf16", "fp32", "cuda"}, {"", "", "cpu"}, {"", "fp32", "cpu"},
	} {
		if got, err := backend.Resolve(c.name, c.prec); got != c.want || err != nil {
			t.Errorf("Resolve(%q, %q) = %q, %v; want %q", c.name, c.prec, got, err, c.want)
		}
	}
	if _, err := backend.Resolve("cpu", "bf16"); err == nil || !strings.Contains(err.Error(), `precision = "bf16"`) || !strings.Contains(err.Error(), "it has fp32") {
		t.Errorf("Resolve(cpu, bf16) = %v, want an error naming the precision and cpu's", err)
	}
	if _, err := backend.Resolve("tpu", ""); err == nil {
		t.Error("Resolve(tpu) gave no error")
	}
	// an arithmetic of its own keeps its precision: another is refused, not swapped for
	// another arithmetic of its family
	if got, err := backend.Resolve("cuda-bf16-flash", "bf16"); got != "cuda-bf16-flash" || err != nil {
		t.Errorf("Resolve(cuda-bf16-flash, bf16) = %q, %v", got, err)
	}
	if got, err := backend.Resolve("cuda-bf16-flash", "fp32"); err == nil || !strings.Contains(err.Error(), "in bf16 only") {
		t.Errorf("Resolve(cuda-bf16-flash, fp32) = %q, %v; want an error", got, err)
	}
}

// The catalog is consistent: the default backend is in it, and each family has one backend
// that routes by device of each of its precisions, all precisions a config may name, so that
// Resolve's answer is one backend; a backend with a route of its own (an arithmetic) is
// named, and Resolve keeps it at its precision.
func TestCatalogFamilies(t *testing.T) {
	if b, ok := backend.Lookup(backend.Default); !ok || b.Build != "" {
		t.Errorf("the default backend %q: %+v, in the catalog %v; want one every build carries", backend.Default, b, ok)
	}
	for _, b := range backend.Catalog() {
		if !slices.Contains(backend.Precisions, b.Precision) || b.Family == "" {
			t.Errorf("catalog entry %+v: no family, or a precision a config cannot name", b)
		}
		n := 0
		for _, c := range backend.Family(b.Family) {
			if c.Precision == b.Precision && c.Route == "" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("family %s has %d backends of precision %s that route by device", b.Family, n, b.Precision)
		}
	}
	if got := len(backend.Family("cuda")); got != 4 {
		t.Errorf("family cuda has %d backends, want 4", got)
	}
	for _, c := range []struct {
		name string
		p    backend.Precision
		want string
	}{{"cuda", backend.BF16, "cuda-bf16"}, {"cuda-bf16-flash", backend.BF16, "cuda-bf16-flash"}, {"cuda-bf16-flash", "", "cuda-bf16-flash"}} {
		if got, err := backend.Resolve(c.name, c.p); got != c.want || err != nil {
			t.Errorf("Resolve(%s, %q) = %q, %v; want %s", c.name, c.p, got, err, c.want)
		}
	}
}

func abs(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}
