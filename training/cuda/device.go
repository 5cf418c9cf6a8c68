//go:build cuda

package cuda

/*
#cgo LDFLAGS: -lcublas -lcuda
#include <cuda.h>
#include <cublas_v2.h>

// gorgonia.org/cu/blas wraps neither the math mode nor the strided-batched GEMM; these two
// calls take the handle that cu/blas created.
static int sfsweepSetTF32(void *h, int on) {
	return (int)cublasSetMathMode((cublasHandle_t)h, on ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
}

static int sfsweepSgemmStridedBatched(void *h, int ta, int tb, int m, int n, int k, float alpha,
		unsigned long long a, int lda, long long sa, unsigned long long b, int ldb, long long sb,
		float beta, unsigned long long c, int ldc, long long sc, int count) {
	return (int)cublasSgemmStridedBatched((cublasHandle_t)h, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
		tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &alpha, (const float *)a, lda, sa,
		(const float *)b, ldb, sb, &beta, (float *)c, ldc, sc, count);
}

// sfsweepGemmBF16 is the mixed-precision GEMM (count = 1) or strided-batched GEMM: A and B
// bfloat16, C float32, products accumulated in float32 on the tensor cores.
static int sfsweepGemmBF16(void *h, int ta, int tb, int m, int n, int k, float alpha,
		unsigned long long a, int lda, long long sa, unsigned long long b, int ldb, long long sb,
		float beta, unsigned long long c, int ldc, long long sc, int count) {
	cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
	if (count == 1)
		return (int)cublasGemmEx((cublasHandle_t)h, opa, opb, m, n, k, &alpha, (const void *)a,
			CUDA_R_16BF, lda, (const void *)b, CUDA_R_16BF, ldb, &beta, (void *)c, CUDA_R_32F, ldc,
			CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP);
	return (int)cublasGemmStridedBatchedEx((cublasHandle_t)h, opa, opb, m, n, k, &alpha,
		(const void *)a, CUDA_R_16BF, lda, sa, (const void *)b, CUDA_R_16BF, ldb, sb, &beta,
		(void *)c, CUDA_R_32F, ldc, sc, count, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP);
}
*/
import "C"

import (
	_ "embed" // the kernels' PTX
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"unsafe"

	"gonum.org/v1/gonum/blas"
	"gorgonia.org/cu"
	cublas "gorgonia.org/cu/blas"
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

var kernelNames = []string{
	"scale_add", "encoder_forward", "encoder_backward", "rmsnorm_forward", "rmsnorm_backward_dx",
	"rmsnorm_backward_dw_part", "sum_rows_add", "rope", "permute", "permute_backward", "unpermute",
	"softmax_causal", "softmax_causal_backward", "swiglu_forward", "swiglu_backward",
	"crossentropy_forward", "crossentropy_backward", "sumsq_chunks", "sfadamw_step", "adamw_step",
	"position_forward", "position_backward", "layernorm_forward", "layernorm_backward_dx",
	"layernorm_backward_dwdb_part", "bias_forward", "colsum_part", "gelu_forward", "gelu_backward",
	"scale", "ewa_update", "sf_x", "ewa_update_x", "to_bf16",
}

// device is GPU 0 as the backend uses it: its primary context, one cuBLAS handle and the
// kernels. It is made once per process and shared by every engine; all work goes to the
// default stream, so it runs in the order it is issued.
type device struct {
	mu     sync.Mutex // one caller at a time: the cuBLAS handle and its math mode are shared
	dev    cu.Device
	ctx    cu.CUContext
	blas   *cublas.Standard
	handle unsafe.Pointer // the cuBLAS handle inside blas
	mod    cu.Module
	fn     map[string]cu.Function
	name   string
	sms    int
	tf32   bool // the math mode currently set on the handle
}

var (
	devOnce sync.Once
	theDev  *device
	errDev  error
)

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
	d.blas = &cublas.Standard{}
	if err := d.blas.Init(); err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	// Standard keeps its cublasHandle_t as its first field and exports no accessor; the
	// math mode and the batched GEMM need it.
	d.handle = *(*unsafe.Pointer)(unsafe.Pointer(d.blas))
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

// lock binds the calling goroutine to its OS thread with the device's context current, and
// takes the device; the returned function releases both.
func (d *device) lock() func() {
	d.mu.Lock()
	runtime.LockOSThread()
	// cuCtxSetCurrent fails only for an invalid context, which d.ctx is not.
	_ = cu.SetCurrentContext(d.ctx)
	return func() {
		runtime.UnlockOSThread()
		d.mu.Unlock()
	}
}

// setTF32 sets the math mode of the cuBLAS handle.
func (d *device) setTF32(on bool) error {
	if d.tf32 == on {
		return nil
	}
	b := 0
	if on {
		b = 1
	}
	if st := C.sfsweepSetTF32(d.handle, C.int(b)); st != 0 {
		return fmt.Errorf("cuda: cublasSetMathMode: %v", cublas.Status(st))
	}
	d.tf32 = on
	return nil
}

// alloc returns n float32-sized (or, with size, larger) elements of device memory.
func alloc(n, size int) (cu.DevicePtr, error) {
	p, err := cu.MemAlloc(int64(max(n, 1) * size))
	if err != nil {
		return 0, fmt.Errorf("cuda: allocating %d bytes: %w", max(n, 1)*size, err)
	}
	return p, nil
}

// off returns p advanced by i float32 elements.
func off(p cu.DevicePtr, i int) cu.DevicePtr { return p + cu.DevicePtr(4*i) }

// f32 is the device memory at p as a []float32 of n elements, the form cu/blas takes. The
// slice must never be read or written from Go.
func f32(p cu.DevicePtr, n int) []float32 {
	return unsafe.Slice((*float32)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), n)
}

// dim is a launch shape.
type dim struct{ x, y, z int }

// blocks returns the number of blocks of per threads that cover n.
func blocks(n, per int) int { return (n + per - 1) / per }

// launch runs kernel name on the default stream. args are the kernel's parameters in order:
// cu.DevicePtr (a pointer), int (a C int), int64 (a C long) or float32.
func (d *device) launch(name string, grid, block dim, args ...any) error {
	f, ok := d.fn[name]
	if !ok {
		return fmt.Errorf("cuda: no kernel %s", name)
	}
	vals := make([]uint64, len(args))
	ptrs := make([]unsafe.Pointer, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case cu.DevicePtr:
			vals[i] = uint64(v)
		case int:
			if v < math.MinInt32 || v > math.MaxInt32 {
				return fmt.Errorf("cuda: kernel %s: argument %d = %d overflows a C int", name, i, v)
			}
			vals[i] = uint64(uint32(int32(v)))
		case int64:
			vals[i] = uint64(v)
		case float32:
			vals[i] = uint64(math.Float32bits(v))
		default:
			return fmt.Errorf("cuda: kernel %s: argument %d has unsupported type %T", name, i, a)
		}
		ptrs[i] = unsafe.Pointer(&vals[i])
	}
	grid.y, grid.z = max(grid.y, 1), max(grid.z, 1)
	block.y, block.z = max(block.y, 1), max(block.z, 1)
	if err := f.Launch(grid.x, grid.y, grid.z, block.x, block.y, block.z, 0, cu.Stream{}, ptrs); err != nil {
		return fmt.Errorf("cuda: launching %s on %dx%dx%d blocks of %dx%dx%d: %w",
			name, grid.x, grid.y, grid.z, block.x, block.y, block.z, err)
	}
	return nil
}

func trans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// gemm is training/gemm.Gemm on the device: C = alpha·op(A)·op(B) + beta·C with row-major
// m×n C, op(A) m×k and op(B) k×n. cuBLAS is column-major, so it computes Cᵀ = op(B)ᵀ·op(A)ᵀ.
func (d *device) gemm(tA, tB bool, m, n, k int, alpha float32, a cu.DevicePtr, lda int, b cu.DevicePtr, ldb int, beta float32, c cu.DevicePtr, ldc int) error {
	ar, br := m, k // rows of A and B as stored
	if tA {
		ar = k
	}
	if tB {
		br = n
	}
	d.blas.Sgemm(trans(tB), trans(tA), n, m, k, alpha, f32(b, br*ldb), ldb, f32(a, ar*lda), lda, beta, f32(c, m*ldc), ldc)
	if err := d.blas.Err(); err != nil {
		return fmt.Errorf("cuda: cublasSgemm(%v, %v, m=%d, n=%d, k=%d): %w", tA, tB, m, n, k, err)
	}
	return nil
}

// gemmBF16 is gemmBatched (gemm for count = 1) on bfloat16 operands a and b: C stays
// float32 and the products accumulate in float32 on the tensor cores.
func (d *device) gemmBF16(tA, tB bool, m, n, k int, alpha float32, a cu.DevicePtr, lda, sa int, b cu.DevicePtr, ldb, sb int, beta float32, c cu.DevicePtr, ldc, sc, count int) error {
	st := C.sfsweepGemmBF16(d.handle, cbool(tB), cbool(tA), C.int(n), C.int(m), C.int(k), C.float(alpha),
		C.ulonglong(b), C.int(ldb), C.longlong(sb), C.ulonglong(a), C.int(lda), C.longlong(sa),
		C.float(beta), C.ulonglong(c), C.int(ldc), C.longlong(sc), C.int(count))
	if st != 0 {
		return fmt.Errorf("cuda: cublasGemmEx bf16 (%v, %v, m=%d, n=%d, k=%d, count=%d): %v", tA, tB, m, n, k, count, cublas.Status(st))
	}
	return nil
}

func cbool(t bool) C.int {
	if t {
		return 1
	}
	return 0
}

// gemmBatched is gemm over count matrices at strides sa, sb, sc (in elements).
func (d *device) gemmBatched(tA, tB bool, m, n, k int, alpha float32, a cu.DevicePtr, lda, sa int, b cu.DevicePtr, ldb, sb int, beta float32, c cu.DevicePtr, ldc, sc, count int) error {
	st := C.sfsweepSgemmStridedBatched(d.handle, cbool(tB), cbool(tA), C.int(n), C.int(m), C.int(k), C.float(alpha),
		C.ulonglong(b), C.int(ldb), C.longlong(sb), C.ulonglong(a), C.int(lda), C.longlong(sa),
		C.float(beta), C.ulonglong(c), C.int(ldc), C.longlong(sc), C.int(count))
	if st != 0 {
		return fmt.Errorf("cuda: cublasSgemmStridedBatched(%v, %v, m=%d, n=%d, k=%d, count=%d): %v", tA, tB, m, n, k, count, cublas.Status(st))
	}
	return nil
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
	unlock := d.lock()
	defer unlock()
	major, minor, err := d.dev.ComputeCapability()
	if err != nil {
		return Device{}, fmt.Errorf("cuda: compute capability: %w", err)
	}
	return Device{Name: d.name, Multiprocessor: d.sms, Major: major, Minor: minor, DriverVersion: cu.Version()}, nil
}
