package gemm

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/sfsweep/sfsweep/internal/par"
)

// The blocked driver follows BLIS/GotoBLAS. For each panel of nc columns of C and each
// slice of kc of the inner dimension, a kc×nc panel of op(B) is packed into nr-column
// slivers; for each block of mc rows an mc×kc block of op(A) is packed into mr-row
// slivers; then the micro-kernel computes every mr×nr tile of the block, going down the
// block for each B sliver, so that the B sliver is reused from L1 (or L2) while the A
// slivers stream from L2.
//
// Parallel calls cut the rows of C (or its columns, whichever leaves the smaller operand
// to be packed more than once) into a few tasks per worker, never the inner dimension; the
// workers claim tasks until none is left, so a worker that starts late or runs on a busy
// core simply does fewer. Every element of C is computed by the same sequence of
// operations whatever the cut: the kc slices depend only on k, and an edge tile runs the
// full-size micro-kernel on a copy of C. Results are therefore bitwise independent of the
// number of workers and of which worker ran which task.

// Tuning. Problems of fewer than parallelMNK multiply-adds (m·n·k) run on the calling
// goroutine: waking a parked worker can take 0.1 ms on a virtual machine. Parallel calls
// cut tasks of at least taskMNK, at most tasksPerWorker per worker; a worker keeps the
// operand its tasks share packed (see workspace) if it has at most shareMax elements, else
// there is one task per worker.
var (
	tinyMNK        = 8 * 8 * 8 // below this, the plain loop
	parallelMNK    = 256 * 256 * 256
	taskMNK        = 128 * 128 * 128
	tasksPerWorker = 4
	shareMax       = 1 << 21
)

// pool returns the worker pool for parallel calls; tests replace it.
var pool = gemmPool

var (
	poolOnce sync.Once
	ownPool  *par.Pool
	busy     atomic.Bool // a parallel call is using the pool
	calls    atomic.Uint64
)

// gemmPool returns the package's own pool of runtime.GOMAXPROCS workers. It is separate
// from par.Default so that Gemm may be called from inside a task of that pool (a
// parallel loop over attention heads, say) without deadlocking on it.
func gemmPool() *par.Pool {
	poolOnce.Do(func() { ownPool = par.NewPool(runtime.GOMAXPROCS(0)) })
	return ownPool
}

// workspace is one worker's packing buffers, kept and reused between calls. Each packed
// block is labelled with the call and position it holds, so that a worker running several
// tasks of one call packs the operand they share only once.
type workspace[T Float] struct {
	a, b         []T       // slots of packed blocks of A and panels of B
	aKeys, bKeys []packKey // what each slot holds
	tile         []T       // an mr×nr edge tile
}

// packKey identifies a packed block: the call, its first row (or column) and k, its size.
type packKey struct {
	call         uint64
	i0, p0, n, k int
}

// grow returns s resliced to n elements, reallocating only when its capacity is short.
func grow[T Float](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// growKeys is grow for packKeys.
func growKeys(s []packKey, n int) []packKey {
	if cap(s) < n {
		return make([]packKey, n)
	}
	return s[:n]
}

// job is one call of the blocked driver. Jobs and their workspaces are recycled through a
// free list, so steady-state calls allocate nothing.
type job[T Float] struct {
	kern           *kernel[T]
	transA, transB bool
	m, n, k        int
	alpha, beta    T
	a, b, c        []T
	lda, ldb, ldc  int

	call   uint64 // number of this call, for packKey
	kcb    int    // depth of the kc slices: all but the last are kcb deep
	slices int    // number of kc slices
	mcMax  int    // rows of the packed blocks of A
	ncMax  int    // columns of the packed panels of B
	splitM bool   // tasks cut the rows of C (else its columns)
	tasks  int    // number of tasks
	shareA bool   // workers keep all of op(A) packed for their tasks (which cut columns)
	shareB bool   // workers keep whole panels of op(B) packed for their tasks (which cut rows)
	next   atomic.Int64
	ws     []workspace[T]   // one per worker
	fn     func(lo, hi int) // run, bound once
}

// jobList is a free list of jobs for one element type.
type jobList[T Float] struct {
	mu   sync.Mutex
	free []*job[T]
}

var (
	jobs32 jobList[float32]
	jobs64 jobList[float64]
)

// jobs returns the free list for T (float32 or float64).
func jobs[T Float]() *jobList[T] {
	var z T
	if _, ok := any(z).(float32); ok {
		return any(&jobs32).(*jobList[T])
	}
	return any(&jobs64).(*jobList[T])
}

func (l *jobList[T]) get() *job[T] {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.free); n > 0 {
		j := l.free[n-1]
		l.free = l.free[:n-1]
		return j
	}
	j := new(job[T])
	j.fn = j.run
	return j
}

func (l *jobList[T]) put(j *job[T]) {
	j.a, j.b, j.c = nil, nil, nil
	l.mu.Lock()
	l.free = append(l.free, j)
	l.mu.Unlock()
}

// blocked computes C = alpha·op(A)·op(B) + beta·C with kernel kern on the workers of p
// (one worker when p is nil). Arguments are as for Gemm and already checked; m, n, k > 0.
func blocked[T Float](kern *kernel[T], p *par.Pool, transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	l := jobs[T]()
	j := l.get()
	j.kern = kern
	j.transA, j.transB = transA, transB
	j.m, j.n, j.k = m, n, k
	j.alpha, j.beta = alpha, beta
	j.a, j.b, j.c = a, b, c
	j.lda, j.ldb, j.ldc = lda, ldb, ldc
	j.call = calls.Add(1)

	// Balanced kc slices: as few as kern.kc allows, of equal depth rounded up to 16.
	ns := (k + kern.kc - 1) / kern.kc
	j.kcb = min(k, ((k+ns-1)/ns+15)/16*16)

	// Tasks. Cutting the rows makes every task pack all of op(B) (k·n elements), cutting
	// the columns all of op(A) (m·k): cut the larger side. A call that finds the pool in
	// use by another runs on its own goroutine rather than wait.
	workers := 1
	if p != nil && p.Workers() > 1 && m*n*k >= parallelMNK && busy.CompareAndSwap(false, true) {
		workers = p.Workers()
		defer busy.Store(false)
	}
	j.splitM = m >= n
	tiles := (n + kern.nr - 1) / kern.nr
	if j.splitM {
		tiles = (m + kern.mr - 1) / kern.mr
	}
	j.tasks, j.shareA, j.shareB = 1, false, false
	if workers > 1 {
		// The operand every task packs: op(B) when cutting rows, op(A) when cutting columns.
		shared := k * min(n, kern.nc)
		if !j.splitM {
			shared = m * k
		}
		j.tasks = workers
		if shared <= shareMax {
			j.tasks = max(workers, min(m*n*k/taskMNK, workers*tasksPerWorker))
			j.shareA, j.shareB = !j.splitM, j.splitM
		}
		j.tasks = min(j.tasks, tiles)
	}
	// Blocking, and workspaces big enough for any task, allocated here rather than by
	// the workers so that a steady state allocates nothing whichever worker runs what.
	j.mcMax = min(kern.mc, (m+kern.mr-1)/kern.mr*kern.mr)
	j.ncMax = min(kern.nc, (n+kern.nr-1)/kern.nr*kern.nr)
	j.slices = (k + j.kcb - 1) / j.kcb
	aSlots, bSlots := 1, 1
	if j.shareA {
		aSlots = (m + j.mcMax - 1) / j.mcMax * j.slices
	}
	if j.shareB {
		bSlots = j.slices
	}
	if len(j.ws) < workers {
		j.ws = append(j.ws, make([]workspace[T], workers-len(j.ws))...)
	}
	for w := range workers {
		ws := &j.ws[w]
		ws.a = grow(ws.a, aSlots*j.mcMax/kern.mr*aStride(kern.mr, j.kcb))
		ws.b = grow(ws.b, bSlots*j.ncMax*j.kcb)
		ws.tile = grow(ws.tile, kern.mr*kern.nr)
		ws.aKeys = growKeys(ws.aKeys, aSlots)
		ws.bKeys = growKeys(ws.bKeys, bSlots)
	}
	j.next.Store(0)
	if j.tasks == 1 {
		j.run(0, 1)
	} else {
		// par.Pool.For hands out ranges aligned to par.Align: with workers·Align indices
		// each worker gets one range, whose start identifies its workspace.
		p.For(workers*par.Align, 1, j.fn)
	}
	l.put(j)
}

// run claims and computes tasks until none is left, with workspace lo/Align.
func (j *job[T]) run(lo, hi int) {
	ws := &j.ws[lo/par.Align]
	for {
		t := int(j.next.Add(1) - 1)
		if t >= j.tasks {
			return
		}
		j.task(ws, t)
	}
}

// task computes task t of C: a contiguous range of whole tiles of rows (or columns).
func (j *job[T]) task(ws *workspace[T], t int) {
	K := j.kern
	r0, r1, c0, c1 := 0, j.m, 0, j.n
	if j.tasks > 1 {
		if j.splitM {
			tiles := (j.m + K.mr - 1) / K.mr
			r0, r1 = t*tiles/j.tasks*K.mr, min((t+1)*tiles/j.tasks*K.mr, j.m)
		} else {
			tiles := (j.n + K.nr - 1) / K.nr
			c0, c1 = t*tiles/j.tasks*K.nr, min((t+1)*tiles/j.tasks*K.nr, j.n)
		}
	}
	if r0 < r1 && c0 < c1 {
		j.block(ws, r0, r1, c0, c1)
	}
}

// block computes rows [r0, r1) and columns [c0, c1) of C.
func (j *job[T]) block(ws *workspace[T], r0, r1, c0, c1 int) {
	K := j.kern
	mr, nr := K.mr, K.nr
	mcMax, ncMax, slices := j.mcMax, j.ncMax, j.slices
	aSize, bSize := mcMax/mr*aStride(mr, j.kcb), ncMax*j.kcb
	ldc := j.ldc
	for jc := c0; jc < c1; jc += ncMax {
		nc := min(ncMax, c1-jc)
		for pc := 0; pc < j.k; pc += j.kcb {
			kc := min(j.kcb, j.k-pc)
			slot := 0
			if j.shareB {
				slot = pc / j.kcb
			}
			bp := ws.b[slot*bSize : (slot+1)*bSize]
			if key := (packKey{j.call, jc, pc, nc, kc}); ws.bKeys[slot] != key {
				K.packB(bp, j.b, j.ldb, j.transB, j.n, pc, jc, kc, nc)
				ws.bKeys[slot] = key
			}
			beta, beta0 := T(1), false
			if pc == 0 {
				beta, beta0 = j.beta, j.beta == 0
			}
			for ic := r0; ic < r1; ic += mcMax {
				mc := min(mcMax, r1-ic)
				slot := 0
				if j.shareA {
					slot = ic/mcMax*slices + pc/j.kcb
				}
				ap := ws.a[slot*aSize : (slot+1)*aSize]
				if key := (packKey{j.call, ic, pc, mc, kc}); ws.aKeys[slot] != key {
					K.packA(ap, j.a, j.lda, j.transA, j.m, ic, pc, mc, kc)
					ws.aKeys[slot] = key
				}
				as := aStride(mr, kc)
				for jr := 0; jr < nc; jr += nr {
					bs := bp[jr*kc : (jr+nr)*kc]
					nrr := min(nr, nc-jr)
					for ir := 0; ir < mc; ir += mr {
						a := ap[ir/mr*as:]
						j.tile(ws, kc, a[:mr*kc], bs, (ic+ir)*ldc+jc+jr, min(mr, mc-ir), nrr, beta, beta0)
					}
				}
			}
		}
	}
}

// tile computes the mrr×nrr tile of C at offset off from packed slivers as and bs.
func (j *job[T]) tile(ws *workspace[T], kc int, as, bs []T, off, mrr, nrr int, beta T, beta0 bool) {
	K := j.kern
	mr, nr, ldc := K.mr, K.nr, j.ldc
	if mrr == mr && nrr == nr {
		K.micro(kc, as, bs, j.c[off:off+(mr-1)*ldc+nr], ldc, j.alpha, beta, beta0)
		return
	}
	// Edge tile: the same kernel on a copy, so the arithmetic is the same as for a full tile.
	t := ws.tile
	if !beta0 {
		for i := range mrr {
			copy(t[i*nr:i*nr+nrr], j.c[off+i*ldc:off+i*ldc+nrr])
		}
	}
	K.micro(kc, as, bs, t, nr, j.alpha, beta, beta0)
	for i := range mrr {
		copy(j.c[off+i*ldc:off+i*ldc+nrr], t[i*nr:i*nr+nrr])
	}
}
