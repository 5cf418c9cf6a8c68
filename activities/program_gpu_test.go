package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/sfsweep/sfsweep/program"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/training/backend"
)

// lines records the waiting lines an admission heartbeats.
type lines struct {
	mu  sync.Mutex
	got []string
}

func (l *lines) add(s string) { l.mu.Lock(); l.got = append(l.got, s); l.mu.Unlock() }

func (l *lines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.got...)
}

// until polls cond for up to 10 s.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

var cudaTrial = training.Config{Setup: training.Setup{Backend: "cuda"}}

// gpuWithTrial is a worker on a GPU of 4 GiB, what trials may reserve there, and the
// release of a trial of 1 GiB admitted to it.
func gpuWithTrial(t *testing.T) (*Activities, *backend.Ledger, int64, func()) {
	t.Helper()
	gpu := backend.NewLedger("GPU 0", 4<<30)
	capacity := gpu.Usage().Free
	engine, err := gpu.Reserve(context.Background(), backend.Request{Need: 1 << 30}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Activities{GPU: gpu}, gpu, capacity, engine
}

// A program whose trainer states no gpu_memory takes its GPU whole: it waits for the trials
// admitted before it to end, showing the figures, and nothing is admitted beside it, even
// a trial that would fit, until it releases.
func TestAdmitProgramExclusive(t *testing.T) {
	ctx := context.Background()
	a, gpu, capacity, engine := gpuWithTrial(t)
	var waiting lines
	admitted := make(chan func())
	go func() {
		release, _, err := a.admitProgram(ctx, "p", cudaTrial, program.Spec{Name: "torch"}, waiting.add)
		if err != nil {
			t.Error(err)
		}
		admitted <- release
	}()
	want := fmt.Sprintf("waiting for GPU memory: needs %s, %s free on GPU 0", backend.GiB(capacity), backend.GiB(capacity-1<<30-backend.WorkspaceBytes))
	until(t, "the program to wait", func() bool { return len(waiting.all()) > 0 })
	if got := waiting.all(); got[0] != want {
		t.Errorf("waiting: %q, want %q", got, want)
	}
	small := make(chan func())
	go func() {
		release, err := gpu.Reserve(ctx, backend.Request{Need: 1 << 20}, nil)
		if err != nil {
			t.Error(err)
		}
		small <- release
	}()
	until(t, "a small trial to queue behind the program", func() bool { return gpu.Usage().Waiting == 2 })
	engine()
	release := <-admitted
	if u := gpu.Usage(); u.Reserved != capacity || u.Free != 0 || u.Trials != 1 || u.Waiting != 1 {
		t.Errorf("with the program admitted: %+v, want the whole GPU reserved and the small trial waiting", u)
	}
	if got := waiting.all(); got[len(got)-1] != "" {
		t.Errorf("waiting lines %q: the last should clear the line once admitted", got)
	}
	release()
	(<-small)()
	if u := gpu.Usage(); u.Reserved != 0 || u.Trials != 0 || u.Waiting != 0 {
		t.Errorf("all released: %+v", u)
	}
}

// A program whose trainer states its gpu_memory reserves that, beside what fits; a figure
// larger than the GPU fails at once, not retried, with the figures; a program given no GPU
// (a cpu trial) is not admitted at all; one canceled while it waits leaves the queue.
func TestAdmitProgramStated(t *testing.T) {
	ctx := context.Background()
	a, gpu, capacity, engine := gpuWithTrial(t)
	var waiting lines
	release, _, err := a.admitProgram(ctx, "p", cudaTrial, program.Spec{Name: "torch", GPUMemory: 2 << 30}, waiting.add)
	if err != nil {
		t.Fatal(err)
	}
	if u := gpu.Usage(); u.Reserved != 3<<30+backend.WorkspaceBytes || u.Trials != 2 {
		t.Errorf("a program of 2 GiB beside a trial of 1 GiB: %+v", u)
	}
	if got := waiting.all(); len(got) != 1 || got[0] != "" {
		t.Errorf("waiting lines %q for a program that fits", got)
	}

	_, _, err = a.admitProgram(ctx, "huge", cudaTrial, program.Spec{Name: "torch", GPUMemory: 8 << 30}, waiting.add)
	var app *temporal.ApplicationError
	if !errors.Is(err, backend.ErrTooLarge) || !errors.As(classify(err), &app) || !app.NonRetryable() {
		t.Fatalf("a program of 8 GiB on a GPU of 4: %v, want a non-retryable ErrTooLarge", err)
	}
	for _, w := range []string{"trial huge", "trainer torch", "needs 8.00 GiB", "the device has " + backend.GiB(capacity)} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the error does not say %q: %v", w, err)
		}
	}

	// a cpu trial's program has CUDA_VISIBLE_DEVICES empty: admitted on a full GPU
	cpuRelease, _, err := a.admitProgram(ctx, "cpu", training.Config{Setup: training.Setup{Backend: "cpu"}}, program.Spec{Name: "torch"}, waiting.add)
	if err != nil {
		t.Fatal(err)
	}
	cpuRelease()
	if u := gpu.Usage(); u.Trials != 2 || u.Waiting != 0 {
		t.Errorf("a cpu trial's program was admitted to the GPU: %+v", u)
	}

	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() {
		_, _, err := a.admitProgram(cctx, "whole", cudaTrial, program.Spec{Name: "torch"}, func(string) {})
		done <- err
	}()
	until(t, "the whole-GPU program to wait", func() bool { return gpu.Usage().Waiting == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("canceled while waiting: %v", err)
	}
	release()
	engine()
	if u := gpu.Usage(); u.Reserved != 0 || u.Trials != 0 || u.Waiting != 0 {
		t.Errorf("all released: %+v", u)
	}
}

// A trial of two GPUs takes the node's first two whole: it waits for a trial on either,
// is given both in CUDA_VISIBLE_DEVICES, and nothing is admitted to them beside it until
// it releases. One whose trainer has no launcher is invalid, and one of more GPUs than the
// worker has fails.
func TestAdmitNode(t *testing.T) {
	ctx := context.Background()
	a, gpu0, _, engine := gpuWithTrial(t)
	gpu1 := backend.NewLedger("GPU 1", 4<<30)
	a.Node = []NodeGPU{{Ledger: gpu0, UUID: "GPU-a"}, {Ledger: gpu1, UUID: "GPU-b"}, {Ledger: backend.NewLedger("GPU 2", 4<<30), UUID: "GPU-c"}}
	two := cudaTrial
	two.GPUs = 2
	ddp := program.Spec{Name: "ddp", Launcher: program.LauncherTorchrun}
	var waiting lines
	type admission struct {
		release func()
		devices string
	}
	admitted := make(chan admission)
	go func() {
		release, devices, err := a.admitProgram(ctx, "two", two, ddp, waiting.add)
		if err != nil {
			t.Error(err)
		}
		admitted <- admission{release, devices}
	}()
	until(t, "a waiting line", func() bool { return len(waiting.all()) > 0 })
	if w := waiting.all()[0]; !strings.Contains(w, "on GPU 0") || !strings.Contains(w, "GPU 1 of 2 for a trial of gpus: 2") {
		t.Errorf("waiting line %q: want GPU 0's, as the first of two", w)
	}
	select {
	case <-admitted:
		t.Fatal("admitted while a trial holds GPU 0")
	case <-time.After(50 * time.Millisecond):
	}
	engine()
	got := <-admitted
	if got.devices != "GPU-a,GPU-b" {
		t.Errorf("devices %q, want GPU-a,GPU-b", got.devices)
	}
	for _, g := range a.Node[:2] {
		if u := g.Ledger.Usage(); u.Free != 0 || u.Trials != 1 {
			t.Errorf("%s: %+v, want it held whole by one trial", u.Device, u)
		}
	}
	if u := a.Node[2].Ledger.Usage(); u.Trials != 0 {
		t.Errorf("GPU 2 held: %+v", u)
	}
	one := make(chan error)
	go func() {
		release, _, err := a.admitProgram(ctx, "one", cudaTrial, program.Spec{Name: "torch", GPUMemory: 1 << 30}, func(string) {})
		if err == nil {
			release()
		}
		one <- err
	}()
	select {
	case err := <-one:
		t.Fatalf("a trial of one GPU admitted to GPU 0 while the trial of two holds it: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	got.release()
	if err := <-one; err != nil {
		t.Fatal(err)
	}
	_, _, err := a.admitProgram(ctx, "plain", two, program.Spec{Name: "plain"}, waiting.add)
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || !app.NonRetryable() || !strings.Contains(err.Error(), "launcher: torchrun") {
		t.Errorf("a trial of two GPUs of a trainer without a launcher: %v, want a non-retryable error naming launcher: torchrun", err)
	}
	four := cudaTrial
	four.GPUs = 4
	if _, _, err := a.admitProgram(ctx, "four", four, ddp, waiting.add); err == nil || !strings.Contains(err.Error(), "this worker has 3 GPUs") {
		t.Errorf("a trial of four GPUs on three: %v", err)
	}
}
