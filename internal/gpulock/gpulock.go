//go:build unix

// Package gpulock shares a node's GPUs between its worker processes: the process of each
// GPU, whose trials take one GPU (or part of it), and the node's process, whose trials take
// several GPUs whole (gpus: N). Two files per GPU under Dir, locked with flock(2), say who
// holds it:
//
//   - <uuid>.use: each trial of one GPU holds it shared while it trains; a trial of several
//     holds it exclusive, and so starts only once no trial of one GPU is on it.
//   - <uuid>.gate: a trial of several holds it exclusive from when it asks for the GPU;
//     a trial of one GPU takes it shared, briefly, before it takes .use. So a trial of
//     several that waits for a GPU to drain is not starved by trials of one GPU that keep
//     arriving: they wait behind it.
//
// A lock is the kernel's: a process that dies, even by SIGKILL, drops its locks, and
// nothing is left to clean. Waiting polls, so that a waiter can be canceled.
package gpulock

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Poll is how often a waiter tries again.
var Poll = 200 * time.Millisecond

// Dir is the directory of the node's locks: one per user, as the GPUs of a node are shared
// by that user's workers. SFSWEEP_GPU_LOCKS overrides it (the tests' own node).
func Dir() string {
	if d := os.Getenv("SFSWEEP_GPU_LOCKS"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "sfsweep-gpus-"+strconv.Itoa(os.Getuid()))
}

// GPU is the locks of one GPU of the node, by its UUID.
type GPU struct {
	Dir, UUID string
}

// Share holds the GPU for a trial of one GPU until release is called: once no trial of
// several holds it or waits for it. waiting, if set, is told each time it is still waiting.
func (g GPU) Share(ctx context.Context, waiting func()) (release func(), err error) {
	gate, err := g.lock(ctx, "gate", syscall.LOCK_SH, waiting)
	if err != nil {
		return nil, err
	}
	defer gate.Close() // the gate only orders the arrivals
	use, err := g.lock(ctx, "use", syscall.LOCK_SH, waiting)
	if err != nil {
		return nil, err
	}
	return func() { use.Close() }, nil
}

// Take holds the GPU whole for a trial of several: it bars trials of one GPU from starting
// on it at once, then waits for those on it to end. release gives it back.
func (g GPU) Take(ctx context.Context, waiting func()) (release func(), err error) {
	gate, err := g.lock(ctx, "gate", syscall.LOCK_EX, waiting)
	if err != nil {
		return nil, err
	}
	use, err := g.lock(ctx, "use", syscall.LOCK_EX, waiting)
	if err != nil {
		gate.Close()
		return nil, err
	}
	return func() { use.Close(); gate.Close() }, nil
}

// lock opens the GPU's file of kind and locks it how (LOCK_SH, LOCK_EX), trying every Poll
// until it holds it or ctx ends. Each call opens the file anew: flock's locks are those of
// an open file, so two trials in one process hold two locks.
func (g GPU) lock(ctx context.Context, kind string, how int, waiting func()) (*os.File, error) {
	if err := os.MkdirAll(g.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("gpulock: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(g.Dir, g.UUID+"."+kind), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("gpulock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			f.Close()
			return nil, fmt.Errorf("gpulock: %s of %s: %w", kind, g.UUID, err)
		}
		if waiting != nil {
			waiting()
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(Poll):
		}
	}
}
