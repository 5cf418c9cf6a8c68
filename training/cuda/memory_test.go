//go:build cuda

package cuda

import (
	"errors"
	"strings"
	"testing"

	"gorgonia.org/cu"

	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/model"
)

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
