//go:build cuda

package cuda

import (
	_ "embed" // the kernels' PTX
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"

	"gorgonia.org/cu"
)

// kernelsPTX is kernels.cu compiled to PTX by
//
//	nvcc -ptx -arch=sm_80 -O3 -fmad=false -o kernels.ptx kernels.cu
//
// (CUDA 13.0); the driver compiles it for the GPU at hand (Ampere and later).
//
//go:generate nvcc -ptx -arch=sm_80 -O3 -fmad=false -o kernels.ptx kernels.cu
//go:embed kernels.ptx
var kernelsPTX string

// PTXEnv names an environment variable that, when set, is a path to a PTX file loaded
// instead of the embedded kernels (for developing kernels without rebuilding).
const PTXEnv = "SFSWEEP_CUDA_PTX"

// device is GPU 0 as the backend uses it: its primary context and the loaded kernels. It
// is made once per process and shared by every engine, and read-only once made, so engines
// use it without a lock; what an engine changes (its stream, cuBLAS handle and math mode)
// is its own (stream.go).
type device struct {
	dev          cu.Device
	ctx          cu.CUContext
	mod          cu.Module
	fn           map[string]cu.Function
	name         string
	sms          int
	major, minor int // compute capability
}

var (
	devOnce sync.Once
	theDev  *device
	errDev  error
)

// deviceWide orders the engines' stream captures (graph.go) against what reaches the
// whole device: making an engine (cuBLAS and cuBLASLt handles, device and page-locked
// allocations) and closing one (cublasDestroy synchronises the device; cuMemFree and
// cuMemFreeHost may). Engines share the device, and a capture on one engine's stream is
// invalidated by a device-wide synchronisation from any thread, whatever the capture mode
// (CUDA Programming Guide, stream capture, prohibited operations). Captures take it to
// read, so they run beside each other; New and Close take it to write, so they wait for
// the captures in flight, which are short (one micro-batch's launches, no waits).
var deviceWide sync.RWMutex

// getDevice returns the shared device, initialising it on first use.
func getDevice() (*device, error) {
	devOnce.Do(func() { theDev, errDev = openDevice() })
	return theDev, errDev
}

func openDevice() (*device, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	n, err := cu.NumDevices()
	if err != nil {
		return nil, fmt.Errorf("cuda: counting devices: %w", err)
	}
	if n < 1 {
		return nil, fmt.Errorf("cuda: no CUDA device")
	}
	d := &device{dev: cu.Device(0), fn: map[string]cu.Function{}}
	if d.name, err = d.dev.Name(); err != nil {
		return nil, fmt.Errorf("cuda: device name: %w", err)
	}
	if d.sms, err = d.dev.Attribute(cu.MultiprocessorCount); err != nil {
		return nil, fmt.Errorf("cuda: device attribute: %w", err)
	}
	if d.major, d.minor, err = d.dev.ComputeCapability(); err != nil {
		return nil, fmt.Errorf("cuda: compute capability: %w", err)
	}
	// The primary context, not cuCtxCreate: it is the context the CUDA runtime (and so
	// cuBLAS) uses too, and its entry point did not change across CUDA versions.
	if d.ctx, err = d.dev.RetainPrimaryCtx(); err != nil {
		return nil, fmt.Errorf("cuda: retaining the primary context of %s: %w", d.name, err)
	}
	if err := cu.SetCurrentContext(d.ctx); err != nil {
		return nil, fmt.Errorf("cuda: setting the context: %w", err)
	}
	ptx := kernelsPTX
	if path := os.Getenv(PTXEnv); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("cuda: %s: %w", PTXEnv, err)
		}
		ptx = string(b)
	}
	if d.mod, err = cu.LoadData(ptx); err != nil {
		return nil, fmt.Errorf("cuda: loading the kernels' PTX (%d bytes): %w", len(ptx), err)
	}
	for _, name := range kernelNames {
		f, err := d.mod.Function(name)
		if err != nil {
			return nil, fmt.Errorf("cuda: kernel %s: %w", name, err)
		}
		d.fn[name] = f
	}
	// The kernels of the fast paths (fast.go) are newer than some PTX in use (SFSWEEP_CUDA_PTX,
	// or an embedded copy not yet rebuilt): the module loads without them, and an engine
	// asked for a path whose kernels are absent is refused.
	for _, name := range fastKernels(allFast()) {
		f, err := d.mod.Function(name)
		if errors.Is(err, cu.NotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cuda: kernel %s: %w", name, err)
		}
		d.fn[name] = f
	}
	return d, nil
}

// missing returns the first kernel in names that the loaded PTX lacks, or "".
func (d *device) missing(names []string) string {
	for _, name := range names {
		if _, ok := d.fn[name]; !ok {
			return name
		}
	}
	return ""
}

// bind binds the calling goroutine to its OS thread with the device's context current;
// the returned function undoes the binding. Bindings nest (runtime.LockOSThread counts).
func (d *device) bind() func() {
	runtime.LockOSThread()
	// cuCtxSetCurrent fails only for an invalid context, which d.ctx is not.
	_ = cu.SetCurrentContext(d.ctx)
	return runtime.UnlockOSThread
}

// Device describes the GPU the backend runs on.
type Device struct {
	Name           string
	Multiprocessor int // streaming multiprocessors
	Major, Minor   int // compute capability
	DriverVersion  int // as cuDriverGetVersion: 1000·major + 10·minor
}

// Info returns the GPU the backend runs on, initialising it if needed.
func Info() (Device, error) {
	d, err := getDevice()
	if err != nil {
		return Device{}, err
	}
	return Device{Name: d.name, Multiprocessor: d.sms, Major: d.major, Minor: d.minor, DriverVersion: cu.Version()}, nil
}
