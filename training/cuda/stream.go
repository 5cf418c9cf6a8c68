//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"sync"
	"unsafe"

	"gorgonia.org/cu"
)

// An engine's work on the shared device goes to a stream of its own, so engines that share
// the GPU run at once rather than in turn. Each stream is non-blocking (it does not
// synchronise with the legacy default stream, which nothing here uses) and has its own
// cuBLAS handle bound to it, with a workspace of its own (blas.go). Every kernel, memset
// and copy of an engine is issued on its stream, in the order the engine issues it, so an
// engine's results are the same bits whatever the other streams hold: only the timing of
// its work changes.

// stream is one engine's view of the device: its CUDA stream, its cuBLAS handle and the
// lock on them. An engine's methods are not called concurrently; the lock makes a caller
// that does so wait rather than change the handle's math mode under another call.
type stream struct {
	d    *device
	mu   sync.Mutex
	s    cu.Stream
	blas handle
	lt   ltHandle // the lt path's products (lt.go)
}

// newStream makes a non-blocking stream on d, a cuBLAS handle bound to it and a cuBLASLt
// handle.
func (d *device) newStream() (*stream, error) {
	defer d.bind()()
	cs, err := cu.MakeStream(cu.NonBlocking)
	if err != nil {
		return nil, fmt.Errorf("cuda: creating a stream: %w", err)
	}
	st := &stream{d: d, s: cs}
	if st.blas, err = newHandle(st.s, workspaceBytes(d.major)); err != nil {
		_ = st.s.Destroy()
		return nil, err
	}
	if st.lt, err = newLt(); err != nil {
		_ = st.blas.destroy()
		_ = st.s.Destroy()
		return nil, err
	}
	return st, nil
}

// close waits for the stream's work and releases the handles, the workspace and the stream.
// The stream must not be used afterwards but for lock. cublasDestroy synchronises the
// whole device, so closing an engine waits for the work of the engines beside it: once per
// trial, not per step.
func (st *stream) close() error {
	err := st.sync()
	if lerr := st.lt.destroy(); err == nil {
		err = lerr
	}
	if herr := st.blas.destroy(); err == nil {
		err = herr
	}
	if serr := st.s.Destroy(); err == nil && serr != nil {
		err = fmt.Errorf("cuda: destroying a stream: %w", serr)
	}
	return err
}

// lock takes the stream and binds the calling goroutine to its OS thread with the
// device's context current; the returned function releases both. It locks the stream's
// engine only: engines on other streams run meanwhile.
func (st *stream) lock() func() {
	st.mu.Lock()
	unbind := st.d.bind()
	return func() {
		unbind()
		st.mu.Unlock()
	}
}

// sync waits for the stream's work; an asynchronous failure of a kernel surfaces here.
func (st *stream) sync() error {
	if err := st.s.Synchronize(); err != nil {
		return fmt.Errorf("synchronizing the stream: %w", err)
	}
	return nil
}

// launch runs kernel name on the stream. args are the kernel's parameters in order:
// cu.DevicePtr (a pointer), int (a C int), int64 (a C long) or float32.
func (st *stream) launch(name string, grid, block dim, args ...any) error {
	f, ok := st.d.fn[name]
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
	if err := f.Launch(grid.x, grid.y, grid.z, block.x, block.y, block.z, 0, st.s, ptrs); err != nil {
		return fmt.Errorf("cuda: launching %s on %dx%dx%d blocks of %dx%dx%d: %w",
			name, grid.x, grid.y, grid.z, block.x, block.y, block.z, err)
	}
	return nil
}

// htod copies src to dst on the stream and waits for the copy. The wait keeps src (Go
// memory, which the caller may change or the collector reuse once htod returns) from being
// read after the return: the driver documents only that an asynchronous copy from pageable
// memory "might be synchronous". The copy is ordered after the stream's earlier work, as
// the synchronous copy on the default stream was.
func htod[T any](st *stream, dst cu.DevicePtr, src []T) error {
	if len(src) == 0 {
		return nil
	}
	n := int64(len(src)) * int64(unsafe.Sizeof(src[0]))
	if err := cu.MemcpyHtoDAsync(dst, unsafe.Pointer(&src[0]), n, st.s); err != nil {
		return fmt.Errorf("cuda: copying %d bytes to the device: %w", n, err)
	}
	return st.sync()
}

// dtoh copies src to dst on the stream, after the stream's earlier work, and waits for
// the copy before dst is read.
func dtoh[T any](st *stream, dst []T, src cu.DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	n := int64(len(dst)) * int64(unsafe.Sizeof(dst[0]))
	if err := cu.MemcpyDtoHAsync(unsafe.Pointer(&dst[0]), src, n, st.s); err != nil {
		return fmt.Errorf("cuda: copying %d bytes from the device: %w", n, err)
	}
	return st.sync()
}

// dtod copies n float32 elements from src to dst on the stream.
func (st *stream) dtod(dst, src cu.DevicePtr, n int) error {
	if err := cu.MemcpyDtoDAsync(dst, src, int64(4*n), st.s); err != nil {
		return fmt.Errorf("cuda: copying %d bytes on the device: %w", 4*n, err)
	}
	return nil
}

// zero clears n float32 elements at p on the stream.
func (st *stream) zero(p cu.DevicePtr, n int) error {
	if err := cu.MemsetD32Async(p, 0, int64(n), st.s); err != nil {
		return fmt.Errorf("cuda: clearing %d elements: %w", n, err)
	}
	return nil
}

// alloc returns n float32-sized (or, with size, larger) elements of device memory.
// cuMemAlloc belongs to no stream: the memory is the engine's until it frees it.
func alloc(n, size int) (cu.DevicePtr, error) {
	p, err := cu.MemAlloc(int64(max(n, 1) * size))
	if err != nil {
		return 0, fmt.Errorf("cuda: allocating %d bytes: %w", max(n, 1)*size, err)
	}
	return p, nil
}

// streamHandle is the CUstream of s, for the package's own cgo calls: cu.Stream is a struct
// holding only its CUstream and exports no accessor this package can use (its C method
// returns the type of another cgo package).
func streamHandle(s cu.Stream) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&s)) }

// off returns p advanced by i float32 elements.
func off(p cu.DevicePtr, i int) cu.DevicePtr { return p + cu.DevicePtr(4*i) }

// dim is a launch shape.
type dim struct{ x, y, z int }

// blocks returns the number of blocks of per threads that cover n.
func blocks(n, per int) int { return (n + per - 1) / per }
