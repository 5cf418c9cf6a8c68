//go:build cuda

package cuda

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>

// gorgonia.org/cu frees page-locked host memory (MemFreeHost) but does not allocate it.
static int sfsweepMemAllocHost(void **p, size_t bytes) { return (int)cuMemAllocHost(p, bytes); }
*/
import "C"

import (
	"fmt"
	"unsafe"

	"gorgonia.org/cu"
)

// The engine's host memory that the device copies to and from: page-locked (pinned), so
// that a copy from it is asynchronous on the stream and runs at the bus's speed, where a
// copy from Go memory is staged by the driver and waited for. A micro-batch's tokens and
// targets go through one of two staging buffers, used in turn: the host fills one while
// the copy from the other may still be queued, and refills a buffer only after the copy
// that last read it has run (its event), so the host never writes what a copy in flight
// reads. The losses come back into pinned memory too, and are read after a wait.

// cuErr is the gorgonia.org/cu error of a CUresult returned by a shim, nil for success.
func cuErr(code C.int) error {
	if code == 0 {
		return nil
	}
	return withCode(cu.Success, int(code))
}

// withCode converts code to the type of cu's results (unexported: it is inferred from v),
// which is an error that errors.Is compares with cu's named results.
func withCode[T ~int](_ T, code int) T { return T(code) }

// allocPinned returns n elements of page-locked host memory; the context must be current.
func allocPinned[T any](n int) ([]T, error) {
	var zero T
	bytes := max(n, 1) * int(unsafe.Sizeof(zero))
	var p unsafe.Pointer
	if err := cuErr(C.sfsweepMemAllocHost(&p, C.size_t(bytes))); err != nil {
		// %v: a host allocation that fails is not the device's memory running out
		return nil, fmt.Errorf("cuda: allocating %d bytes of pinned host memory: %v", bytes, err)
	}
	return unsafe.Slice((*T)(p), n), nil
}

// freePinned frees what allocPinned returned (nothing for nil).
func freePinned[T any](s []T) error {
	if cap(s) == 0 {
		return nil
	}
	return cu.MemFreeHost(unsafe.Pointer(unsafe.SliceData(s)))
}

// staging is the two pinned buffers a micro-batch's tokens and targets go through to the
// device, each with the event recorded after the copies that last read it.
type staging struct {
	buf    [2][]int32 // (2n) each: tokens, then targets; with embed, then embedIndex's (3n+2)
	copied [2]cu.Event
	made   [2]bool // copied[i] exists
	next   int     // the buffer the next micro-batch fills
}

// allocHost allocates the engine's pinned buffers and events; the context must be current.
// What it made before a failure is freed by freeHost.
func (e *Engine) allocHost() error {
	var err error
	for i := range e.pin.buf {
		size := 2 * e.n
		if e.embIdx != 0 {
			size += 3*e.n + 2
		}
		if e.pin.buf[i], err = allocPinned[int32](size); err != nil {
			return err
		}
		if e.pin.copied[i], err = cu.MakeEvent(cu.DisableTiming); err != nil {
			return fmt.Errorf("cuda: creating an event: %w", err)
		}
		e.pin.made[i] = true
	}
	if e.lossHost, err = allocPinned[float64](e.n); err != nil {
		return err
	}
	e.queue.host, err = allocPinned[float64](lossSlots * e.n)
	return err
}

// freeHost frees the pinned buffers and events; the stream's copies must have run.
func (e *Engine) freeHost() {
	for i := range e.pin.buf {
		_ = freePinned(e.pin.buf[i])
		if e.pin.made[i] {
			_ = cu.DestroyEvent(&e.pin.copied[i])
		}
	}
	_ = freePinned(e.lossHost)
	_ = freePinned(e.queue.host)
	e.pin = staging{}
	e.lossHost, e.queue.host = nil, nil
}

// stage copies the micro-batch's tokens and targets to e.tokens and e.targets on the
// stream, after its earlier work, through the next staging buffer: it waits only for the
// copies from that buffer, two micro-batches ago, and returns before its own copies run.
// With the embed path on, it lists each token's rows there too (embedIndex) and copies
// the list to e.embIdx. The copies are charged to the forward pass's transfers; the call
// is not counted.
func (e *Engine) stage(tokens, targets []int32) error {
	defer e.call(PhaseForward, numCategories, false)()
	i := e.pin.next
	if err := e.pin.copied[i].Synchronize(); err != nil {
		return fmt.Errorf("cuda: waiting for a staging buffer's copy: %w", err)
	}
	buf, n := e.pin.buf[i], e.n
	copy(buf[:n], tokens)
	copy(buf[n:2*n], targets)
	type copyIn struct {
		what string
		dst  cu.DevicePtr
		src  []int32
	}
	copies := []copyIn{{"tokens", e.tokens, buf[:n]}, {"targets", e.targets, buf[n : 2*n]}}
	if e.embedOn() {
		embedIndex(tokens, buf[2*n:5*n+2], e.embSeen)
		copies = append(copies, copyIn{"tokens' rows", e.embIdx, buf[2*n : 5*n+2]})
	}
	r := &run{st: e.st, e: e}
	for _, c := range copies {
		r.doAs(Transfer, func() error {
			if err := cu.MemcpyHtoDAsync(c.dst, unsafe.Pointer(&c.src[0]), int64(4*len(c.src)), e.st.s); err != nil {
				return fmt.Errorf("cuda: copying the %s to the device: %w", c.what, err)
			}
			return nil
		})
	}
	r.do(func() error {
		if err := e.pin.copied[i].Record(e.st.s); err != nil {
			return fmt.Errorf("cuda: recording a staging buffer's copy: %w", err)
		}
		return nil
	})
	if r.err != nil {
		// copies enqueued before the failure may still read the buffer, which the next
		// call fills again: wait for them
		_ = e.st.s.Synchronize()
		return r.err
	}
	e.pin.next = 1 - i
	return nil
}
