package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// testSupervisor supervises "sfsweep args..." (this test binary as the command) on one
// stand-in GPU, writing its output to out.
func testSupervisor(t *testing.T, out *syncBuffer, args ...string) *supervisor {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	saved := childEnv
	childEnv = []string{reexecEnv + "=1"}
	t.Cleanup(func() { childEnv = saved })
	return &supervisor{exe: exe, args: args, gpus: []gpu{{"0", "GPU-stand-in-0", 1 << 30}}, slots: []int{1}, out: &lineWriter{w: out}}
}

// A worker process that exits is started again, after a delay that doubles while it keeps
// exiting; its output is the supervisor's, each line headed with its GPU.
func TestSupervisorRestarts(t *testing.T) {
	var out syncBuffer
	s := testSupervisor(t, &out, "worker", "-trainers", "/nonexistent/trainers.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.run(ctx) }()
	for !strings.Contains(out.String(), "starting it again in 2s") {
		select {
		case err := <-done:
			t.Fatalf("supervisor returned %v\n%s", err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("stopped supervisor: %v", err)
	}
	o := out.String()
	for _, want := range []string{
		"worker: GPU 0 (GPU-stand-in-0, 1.00 GiB): worker process ",
		"GPU 0: sfsweep worker: ", // the child's error, headed with its GPU
		"/nonexistent/trainers.yaml",
		"worker: GPU 0: worker process exited (exit status 1): starting it again in 1s",
		"worker: GPU 0: worker process exited (exit status 1): starting it again in 2s",
	} {
		if !strings.Contains(o, want) {
			t.Errorf("output does not say %q:\n%s", want, o)
		}
	}
}

// A worker process that refuses its flags would refuse them again: the supervisor stops
// and says so.
func TestSupervisorUsageError(t *testing.T) {
	var out syncBuffer
	s := testSupervisor(t, &out, "worker", "-nosuchflag")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := s.run(ctx)
	if err == nil || !strings.Contains(err.Error(), "worker: GPU 0: the worker process refused its flags (exit status 2)") {
		t.Errorf("supervisor: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "-nosuchflag") || strings.Contains(out.String(), "starting it again") {
		t.Errorf("output:\n%s", out.String())
	}
	var b bytes.Buffer
	if code := runMain(ctx, []string{"worker", "-gpus", "all", "-queue", "cpu"}, &b, &b); code != 2 || !strings.Contains(b.String(), `-gpus = "all" with -queue cpu`) {
		t.Errorf("worker -gpus -queue cpu: exit %d: %s", code, b.String())
	}
}
