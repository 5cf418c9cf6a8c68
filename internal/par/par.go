// Package par runs data-parallel loops over index ranges on a fixed set of goroutines.
//
// A Pool splits [0, n) into one contiguous range per worker. Which goroutine runs which range
// never changes the result of an elementwise kernel, and reductions use Chunks, whose
// boundaries depend only on n, so results are bitwise independent of scheduling and of the
// number of workers. A call allocates nothing when fn is a func value made once (a method
// value stored in a struct, say), which keeps training steps free of heap allocations.
package par

import (
	"runtime"
	"sync"
)

// Pool is a fixed set of worker goroutines. Its methods may be called from several
// goroutines; calls are serialised.
type Pool struct {
	mu      sync.Mutex
	workers int
	tasks   []chan task
	wg      sync.WaitGroup
	closed  bool
}

type task struct {
	fn     func(lo, hi int)
	lo, hi int
}

// NewPool starts a pool of n workers (n ≥ 1); the calling goroutine counts as one of them,
// so n−1 goroutines are started. Close stops them.
func NewPool(n int) *Pool {
	if n < 1 {
		n = 1
	}
	p := &Pool{workers: n, tasks: make([]chan task, n-1)}
	for i := range p.tasks {
		ch := make(chan task)
		p.tasks[i] = ch
		go p.loop(ch)
	}
	return p
}

func (p *Pool) loop(ch chan task) {
	for t := range ch {
		t.fn(t.lo, t.hi)
		p.wg.Done()
	}
}

// Workers reports the number of workers, the calling goroutine included.
func (p *Pool) Workers() int { return p.workers }

// Close stops the pool's goroutines. The pool must not be used afterwards.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	for _, ch := range p.tasks {
		close(ch)
	}
}

// Align is the granularity of range boundaries, in elements: 16 float32 values are one
// 64-byte cache line, so workers never write to the same line.
const Align = 16

// For calls fn on disjoint ranges covering [0, n), in parallel when n ≥ grain, and returns
// when all calls have returned. Below grain (or with one worker) it calls fn(0, n) inline.
func (p *Pool) For(n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if p == nil || p.workers == 1 || n < grain || n < 2*Align {
		fn(0, n)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.workers
	per := (n + w - 1) / w
	per = (per + Align - 1) / Align * Align
	lo := per // the caller takes [0, per)
	for i := 0; i < w-1 && lo < n; i++ {
		hi := min(lo+per, n)
		p.wg.Add(1)
		p.tasks[i] <- task{fn: fn, lo: lo, hi: hi}
		lo = hi
	}
	fn(0, min(per, n))
	p.wg.Wait()
}

// Chunks returns the number of fixed-size chunks of [0, n) used for deterministic
// reductions: chunk k covers [k·size, min((k+1)·size, n)).
func Chunks(n, size int) int { return (n + size - 1) / size }

var (
	defaultOnce sync.Once
	defaultPool *Pool
)

// Default returns the process-wide pool with one worker per available CPU
// (runtime.GOMAXPROCS). Its goroutines live as long as the process and idle when unused.
func Default() *Pool {
	defaultOnce.Do(func() { defaultPool = NewPool(runtime.GOMAXPROCS(0)) })
	return defaultPool
}
