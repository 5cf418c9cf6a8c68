package backend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// Admission to a GPU's memory. Several trials train on one GPU at once when they fit: each
// reserves what its engine will allocate before the engine is made, against the memory the
// trials already admitted hold. One that does not fit now waits for memory to free (it is
// not failed and retried blindly); one larger than the whole GPU fails at once. Trials are
// admitted in the order they asked, so a large trial is not starved by small ones that
// keep arriving after it.

// The memory a GPU spends beyond the engines' buffers (NeedFunc), in bytes.
const (
	// ContextBytes is held once per GPU by the worker's process: the CUDA context, the
	// loaded kernels and cuBLAS's shared state and workspace.
	ContextBytes = 768 << 20
	// WorkspaceBytes is held per trial beyond its engine's buffers: the workspace of its
	// own cuBLAS handle and the allocator's rounding.
	WorkspaceBytes = 64 << 20
)

// ErrTooLarge matches (errors.Is) the error of a trial larger than its whole GPU.
var ErrTooLarge = errors.New("larger than the whole device")

// Ledger is the memory of one GPU shared by the trials a worker admits to it: its size,
// what the process holds besides the engines, and what each admitted trial reserved.
type Ledger struct {
	device   string // as messages name it: "GPU 3"
	total    int64  // the device's memory
	capacity int64  // what trials may reserve: total less ContextBytes

	// share, if set, holds the GPU against the node's other processes for each trial
	// admitted (ShareWith)
	share func(ctx context.Context, waiting func()) (release func(), err error)

	mu       sync.Mutex
	reserved int64
	trials   int
	queue    []*waiter // in the order they asked
}

type waiter struct {
	need    int64
	granted chan struct{} // closed once the memory is reserved for it
	changed chan struct{} // a reservation was released (buffered, 1)
}

// NewLedger returns the ledger of a GPU named device (as messages name it: "GPU 3") with
// total bytes of memory.
func NewLedger(device string, total int64) *Ledger {
	return &Ledger{device: device, total: total, capacity: max(total-ContextBytes, 0)}
}

// ShareWith makes each trial the ledger admits first hold the GPU with share (a node's
// lock, gpulock.GPU.Share) until it releases: a trial waits, saying so, while another
// process of the node holds the GPU whole for a trial of several GPUs, or waits for it.
func (l *Ledger) ShareWith(share func(ctx context.Context, waiting func()) (release func(), err error)) {
	l.share = share
}

// Request is what a trial asks of its GPU: Need bytes (its engine's NeedFunc; Reserve adds
// WorkspaceBytes), with the backend and a description of its shape for errors.
type Request struct {
	Backend, What string
	Need          int64
}

// Reserve reserves r's memory on the GPU and returns the function that releases it, to be
// called once the trial's engine is closed. When the memory is taken by trials admitted
// earlier, Reserve waits for them to release it, calling waiting with a line that says so
// (again each time memory frees and the trial still does not fit), until ctx ends. A
// trial that needs more than the whole GPU is an *OutOfMemoryError that matches
// ErrTooLarge, returned at once.
func (l *Ledger) Reserve(ctx context.Context, r Request, waiting func(status string)) (release func(), err error) {
	need := r.Need + WorkspaceBytes
	l.mu.Lock()
	if need > l.capacity {
		free := l.capacity - l.reserved
		l.mu.Unlock()
		return nil, &OutOfMemoryError{Backend: r.Backend, Need: need, Total: l.capacity, Free: free, What: r.What,
			Err: fmt.Errorf("%w: %s has %s for trials (%s less %s for the CUDA context)", ErrTooLarge, l.device, GiB(l.capacity), GiB(l.total), GiB(ContextBytes))}
	}
	l.mu.Unlock()
	unshare := func() {}
	if l.share != nil {
		told := false
		unshare, err = l.share(ctx, func() {
			if waiting != nil && !told {
				told = true
				waiting(fmt.Sprintf("waiting for %s: a trial of several GPUs holds it, or waits for it", l.device))
			}
		})
		if err != nil {
			return nil, err
		}
	}
	l.mu.Lock()
	w := &waiter{need: need, granted: make(chan struct{}), changed: make(chan struct{}, 1)}
	l.queue = append(l.queue, w)
	l.grant()
	l.mu.Unlock()
	release = sync.OnceFunc(func() {
		defer unshare()
		l.mu.Lock()
		defer l.mu.Unlock()
		l.reserved -= need
		l.trials--
		for _, o := range l.queue {
			select {
			case o.changed <- struct{}{}:
			default:
			}
		}
		l.grant()
	})
	for {
		select {
		case <-w.granted:
			return release, nil
		default:
		}
		if waiting != nil {
			waiting(l.waitingLine(need))
		}
		select {
		case <-w.granted:
			return release, nil
		case <-w.changed:
		case <-ctx.Done():
			if l.withdraw(w) {
				release() // granted as ctx ended: give it back
			} else {
				unshare()
			}
			return nil, ctx.Err()
		}
	}
}

// withdraw takes w out of the queue, or reports that it was granted already.
func (l *Ledger) withdraw(w *waiter) (granted bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-w.granted:
		return true
	default:
	}
	l.queue = slices.DeleteFunc(l.queue, func(o *waiter) bool { return o == w })
	l.grant() // those behind it may fit now
	return false
}

// grant reserves memory for the waiters at the head of the queue that fit. l.mu is held.
func (l *Ledger) grant() {
	for len(l.queue) > 0 && l.reserved+l.queue[0].need <= l.capacity {
		w := l.queue[0]
		l.queue = l.queue[1:]
		l.reserved += w.need
		l.trials++
		close(w.granted)
	}
}

func (l *Ledger) waitingLine(need int64) string {
	l.mu.Lock()
	free := l.capacity - l.reserved
	l.mu.Unlock()
	return fmt.Sprintf("waiting for GPU memory: needs %s, %s free on %s", GiB(need), GiB(free), l.device)
}

// Usage is a GPU's memory as a ledger sees it, in bytes.
type Usage struct {
	Device   string `json:"device"`
	Total    int64  `json:"total"`    // the device's memory
	Reserved int64  `json:"reserved"` // by the trials admitted
	Free     int64  `json:"free"`     // what further trials may reserve
	Trials   int    `json:"trials"`   // admitted
	Waiting  int    `json:"waiting"`  // asked and not admitted yet
}

// Usage returns the GPU's memory now.
func (l *Ledger) Usage() Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Usage{Device: l.device, Total: l.total, Reserved: l.reserved, Free: l.capacity - l.reserved, Trials: l.trials, Waiting: len(l.queue)}
}
