//go:build unix

package gpulock

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// held reports whether f returns within d (and releases what it took).
func within(d time.Duration, f func(ctx context.Context) (func(), error)) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	release, err := f(ctx)
	if err != nil {
		return false
	}
	release()
	return true
}

// Trials of one GPU share it; a trial of several takes it only once they have ended, and
// from when it asks, no new trial of one GPU starts on it.
func TestShareAndTake(t *testing.T) {
	Poll = 5 * time.Millisecond
	g := GPU{Dir: t.TempDir(), UUID: "GPU-x"}
	other := GPU{Dir: g.Dir, UUID: "GPU-y"}
	ctx := context.Background()
	one, err := g.Share(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !within(time.Second, func(ctx context.Context) (func(), error) { return g.Share(ctx, nil) }) {
		t.Fatal("a second trial of one GPU cannot share it")
	}
	if within(50*time.Millisecond, func(ctx context.Context) (func(), error) { return g.Take(ctx, nil) }) {
		t.Fatal("taken whole while a trial of one GPU is on it")
	}
	if !within(time.Second, func(ctx context.Context) (func(), error) { return other.Take(ctx, nil) }) {
		t.Fatal("another GPU cannot be taken")
	}
	taken := make(chan func())
	waited := make(chan struct{}, 1)
	go func() {
		release, err := g.Take(ctx, func() {
			select {
			case waited <- struct{}{}:
			default:
			}
		})
		if err != nil {
			t.Error(err)
		}
		taken <- release
	}()
	<-waited // it waits, holding the gate
	if within(50*time.Millisecond, func(ctx context.Context) (func(), error) { return g.Share(ctx, nil) }) {
		t.Error("a trial of one GPU started while a trial of several waits for the GPU")
	}
	one()
	release := <-taken
	if within(50*time.Millisecond, func(ctx context.Context) (func(), error) { return g.Share(ctx, nil) }) {
		t.Error("shared while taken whole")
	}
	release()
	if !within(time.Second, func(ctx context.Context) (func(), error) { return g.Share(ctx, nil) }) {
		t.Error("cannot share once the trial of several has released")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	hold, _ := g.Share(ctx, nil)
	if _, err := g.Take(cctx, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Take canceled: %v", err)
	}
	hold()
}

// The locks hold between processes, and a process that dies drops its own: flock(1)
// holds the use lock shared, as a worker process of the GPU would, until it is killed.
func TestAcrossProcesses(t *testing.T) {
	flock, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("no flock(1) (util-linux)")
	}
	Poll = 5 * time.Millisecond
	g := GPU{Dir: t.TempDir(), UUID: "GPU-z"}
	if err := os.WriteFile(filepath.Join(g.Dir, g.UUID+".use"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(flock, "--shared", filepath.Join(g.Dir, g.UUID+".use"), "sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // sleep holds the lock too
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kill := func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	defer kill()
	deadline := time.Now().Add(10 * time.Second)
	for within(20*time.Millisecond, func(ctx context.Context) (func(), error) { return g.Take(ctx, nil) }) {
		if time.Now().After(deadline) {
			t.Fatal("the other process never held the GPU")
		}
		time.Sleep(10 * time.Millisecond)
	}
	kill()
	cmd.Wait()
	if !within(5*time.Second, func(ctx context.Context) (func(), error) { return g.Take(ctx, nil) }) {
		t.Error("the GPU stays held after the process that held it was killed")
	}
}
