package activities

// The GPU memory of a program trainer's attempt: reserved on the worker's GPU before the
// program starts, released once it has exited (docs/trainer.md, "GPU memory").

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/sfsweep/sfsweep/program"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/training/backend"
)

// onGPU reports whether a trial's program is given the worker's GPU (CUDA_VISIBLE_DEVICES):
// that of a trial whose backend computes on one.
func onGPU(cfg training.Config) bool {
	info, _ := backend.Lookup(cfg.WithDefaults().Backend)
	return info.Device != backend.DeviceCPU
}

// admitProgram reserves on this worker's GPU (GPU) what the program of trial id holds
// there, before it starts: its trainer's gpu_memory in the worker's registry, or, where
// the registry states none, the whole GPU, so that it starts only on an empty GPU and
// nothing is admitted beside it until it ends. A PyTorch program's caching allocator keeps
// what it once allocated and may grow to the GPU's memory: without a figure from the
// operator, sharing is what makes trials fail. While the memory is taken it waits,
// heartbeating the line waiting is given; a stated figure larger than the GPU fails at
// once. Without a ledger, or for a program given no GPU, it admits at once. The caller
// releases once the program has exited (program.Run returns only then), so the driver has
// freed its memory.
//
// A trial of several GPUs (gpus: N) takes N of the node's (Node) whole: those the fewest
// other such trials of this worker hold or wait for, the first of them on a tie, one after
// another in the node's order, so that two such trials never hold a GPU each that the
// other waits for; devices is then their CUDA_VISIBLE_DEVICES.
func (a *Activities) admitProgram(ctx context.Context, id string, cfg training.Config, spec program.Spec, waiting func(string)) (release func(), devices string, err error) {
	if n := cfg.WithDefaults().GPUs; n > 1 {
		return a.admitNode(ctx, id, n, spec, waiting)
	}
	if a.GPU == nil || !onGPU(cfg) {
		return func() {}, "", nil
	}
	// Reserve adds WorkspaceBytes to a need: a program's own figure is all it holds
	what, need := fmt.Sprintf("the program of trainer %s (gpu_memory %s in the worker's registry)", spec.Name, backend.GiB(spec.GPUMemory)), spec.GPUMemory
	if need == 0 {
		u := a.GPU.Usage()
		what, need = fmt.Sprintf("the program of trainer %s, which states no gpu_memory in the worker's registry, with the whole GPU", spec.Name), u.Reserved+u.Free
	}
	release, err = a.GPU.Reserve(ctx, backend.Request{Backend: cfg.Backend, What: what, Need: need - backend.WorkspaceBytes}, func(s string) {
		a.log().Info(s, "trial", id, "trainer", spec.Name)
		waiting(s)
	})
	if err != nil {
		return nil, "", fmt.Errorf("trial %s: %w", id, err)
	}
	waiting("") // admitted: the program starts
	return release, "", nil
}

// NodeGPU is one GPU of a worker's node: its memory, its name to CUDA, and how a trial of
// several GPUs holds it against the node's other processes.
type NodeGPU struct {
	Ledger *backend.Ledger
	UUID   string // GPU-… or MIG-…
	// Take, if set, holds the GPU whole against the node's other processes until release
	// (gpulock.GPU.Take), telling waiting while it waits; nil: this process is the only one
	// that trains on it (sfsweep run).
	Take func(ctx context.Context, waiting func()) (release func(), err error)
}

// nodeUse counts the trials of several GPUs that hold or wait for each GPU of Node.
type nodeUse struct {
	mu   sync.Mutex
	held []int
}

// pick chooses n of the node's GPUs, in the node's order, and counts them held; free gives
// them back.
func (u *nodeUse) pick(gpus, n int) (picked []int, free func()) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.held) != gpus {
		u.held = make([]int, gpus)
	}
	idx := make([]int, gpus)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return u.held[a] - u.held[b] })
	picked = slices.Sorted(slices.Values(idx[:n]))
	for _, i := range picked {
		u.held[i]++
	}
	return picked, sync.OnceFunc(func() {
		u.mu.Lock()
		defer u.mu.Unlock()
		for _, i := range picked {
			u.held[i]--
		}
	})
}

// admitNode reserves the first n GPUs of the node whole, in order, for the program of
// trial id, and returns their CUDA_VISIBLE_DEVICES.
func (a *Activities) admitNode(ctx context.Context, id string, n int, spec program.Spec, waiting func(string)) (release func(), devices string, err error) {
	if spec.Launcher == "" {
		return nil, "", invalid(fmt.Errorf("trial %s: gpus = %d: trainer %s has no launcher, and a program of several GPUs runs once per GPU: give it launcher: torchrun", id, n, spec.Name))
	}
	if len(a.Node) < n {
		return nil, "", fmt.Errorf("trial %s: gpus = %d: this worker has %d GPUs", id, n, len(a.Node))
	}
	picked, free := a.nodeUse.pick(len(a.Node), n)
	releases := []func(){free}
	release = func() {
		for _, r := range slices.Backward(releases) {
			r()
		}
	}
	say := func(s string) {
		a.log().Info(s, "trial", id, "trainer", spec.Name)
		waiting(s)
	}
	hold := func(r func(), err error) error {
		if err != nil {
			release()
			return fmt.Errorf("trial %s: %w", id, err)
		}
		releases = append(releases, r)
		return nil
	}
	uuids := make([]string, n)
	for i, gi := range picked {
		g := a.Node[gi]
		of := fmt.Sprintf("GPU %d of %d for a trial of gpus: %d", i+1, n, n)
		if g.Take != nil {
			told := false
			if err := hold(g.Take(ctx, func() {
				if !told {
					told = true
					say(fmt.Sprintf("waiting for %s, %s: trials of one GPU are on it", g.Ledger.Usage().Device, of))
				}
			})); err != nil {
				return nil, "", err
			}
		}
		u := g.Ledger.Usage()
		what := fmt.Sprintf("the program of trainer %s, a trial of %d GPUs, with the whole of %s (GPU %d of %d)", spec.Name, n, u.Device, i+1, n)
		if err := hold(g.Ledger.Reserve(ctx, backend.Request{What: what, Need: u.Reserved + u.Free - backend.WorkspaceBytes}, func(s string) {
			say(fmt.Sprintf("%s (%s)", s, of))
		})); err != nil {
			return nil, "", err
		}
		uuids[i] = g.UUID
	}
	waiting("")
	return release, strings.Join(uuids, ","), nil
}
