package backend_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/model"
)

const gib = 1 << 30

// ledger returns the ledger of a GPU on which trials may reserve exactly room bytes.
func ledger(room int64) *backend.Ledger {
	return backend.NewLedger("GPU 3", room+backend.ContextBytes)
}

// trial is a request whose reservation, with the workspace, is exactly bytes.
func trial(bytes int64) backend.Request {
	return backend.Request{Backend: "cuda", What: "llama", Need: bytes - backend.WorkspaceBytes}
}

// waitingLines records the lines a Reserve reports while it waits.
type waitingLines struct {
	mu    sync.Mutex
	lines []string
	first chan struct{}
}

func newWaitingLines() *waitingLines { return &waitingLines{first: make(chan struct{})} }

func (w *waitingLines) add(s string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines = append(w.lines, s)
	if len(w.lines) == 1 {
		close(w.first)
	}
}

func (w *waitingLines) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.lines...)
}

// reserveAsync starts a Reserve that is expected to wait; it returns the result channel.
func reserveAsync(ctx context.Context, l *backend.Ledger, r backend.Request, w *waitingLines) chan func() {
	done := make(chan func(), 1)
	go func() {
		release, err := l.Reserve(ctx, r, w.add)
		if err != nil {
			close(done)
			return
		}
		done <- release
	}()
	return done
}

func TestLedgerAdmitsWhatFits(t *testing.T) {
	l := ledger(10 * gib)
	ctx := context.Background()
	var rel []func()
	for range 2 {
		release, err := l.Reserve(ctx, trial(4*gib), func(s string) { t.Errorf("a trial that fits waits: %s", s) })
		if err != nil {
			t.Fatal(err)
		}
		rel = append(rel, release)
	}
	u := l.Usage()
	if u.Reserved != 8*gib || u.Free != 2*gib || u.Trials != 2 || u.Waiting != 0 || u.Device != "GPU 3" || u.Total != 10*gib+backend.ContextBytes {
		t.Errorf("usage %+v", u)
	}
	rel[0]()
	rel[0]() // releasing twice releases once
	if u := l.Usage(); u.Reserved != 4*gib || u.Trials != 1 {
		t.Errorf("after one release: %+v", u)
	}
	rel[1]()
	if u := l.Usage(); u.Reserved != 0 || u.Free != 10*gib || u.Trials != 0 {
		t.Errorf("after both: %+v", u)
	}
}

// A trial that does not fit waits, saying what it needs and what is free, and is admitted
// as soon as a release makes room: not before.
func TestLedgerWaitsForMemory(t *testing.T) {
	l := ledger(10 * gib)
	ctx := context.Background()
	first, err := l.Reserve(ctx, trial(6*gib), nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := l.Reserve(ctx, trial(3*gib), nil)
	if err != nil {
		t.Fatal(err)
	}
	w := newWaitingLines()
	done := reserveAsync(ctx, l, trial(5*gib), w)
	<-w.first
	if got, want := w.all()[0], "waiting for GPU memory: needs 5.00 GiB, 1.00 GiB free on GPU 3"; got != want {
		t.Errorf("waiting line %q, want %q", got, want)
	}
	second() // 4 GiB free: still too little
	waitLines(t, w, 2)
	if got := w.all()[1]; !strings.Contains(got, "4.00 GiB free") {
		t.Errorf("after a release that does not make room: %q", got)
	}
	select {
	case <-done:
		t.Fatal("admitted with 4 GiB free for 5")
	case <-time.After(20 * time.Millisecond):
	}
	first()
	release, ok := <-done
	if !ok {
		t.Fatal("not admitted after the release")
	}
	if u := l.Usage(); u.Reserved != 5*gib || u.Waiting != 0 {
		t.Errorf("usage %+v", u)
	}
	release()
}

func waitLines(t *testing.T, w *waitingLines, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); len(w.all()) < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d waiting lines, want %d: %q", len(w.all()), n, w.all())
		}
	}
}

// Trials are admitted in the order they asked: a small trial does not pass a large one
// that waits before it.
func TestLedgerFirstComeFirstServed(t *testing.T) {
	l := ledger(10 * gib)
	ctx := context.Background()
	held, _ := l.Reserve(ctx, trial(8*gib), nil)
	wl, ws := newWaitingLines(), newWaitingLines()
	large := reserveAsync(ctx, l, trial(9*gib), wl)
	<-wl.first
	small := reserveAsync(ctx, l, trial(1*gib), ws) // fits in the 2 GiB free, but waits behind
	<-ws.first
	if u := l.Usage(); u.Waiting != 2 || u.Trials != 1 {
		t.Fatalf("usage %+v", u)
	}
	held()
	releaseLarge, releaseSmall := <-large, <-small // both fit now
	if u := l.Usage(); u.Reserved != 10*gib || u.Trials != 2 {
		t.Fatalf("after the release: %+v", u)
	}
	releaseLarge()
	releaseSmall()
}

// A waiting trial whose context ends leaves the queue, and those behind it move up.
func TestLedgerWaitCanceled(t *testing.T) {
	l := ledger(10 * gib)
	bg := context.Background()
	held, _ := l.Reserve(bg, trial(8*gib), nil)
	ctx, cancel := context.WithCancel(bg)
	wl, ws := newWaitingLines(), newWaitingLines()
	var err error
	canceled := make(chan struct{})
	go func() {
		_, err = l.Reserve(ctx, trial(9*gib), wl.add)
		close(canceled)
	}()
	<-wl.first
	small := reserveAsync(bg, l, trial(1*gib), ws)
	<-ws.first
	cancel()
	<-canceled
	if !errors.Is(err, context.Canceled) {
		t.Errorf("canceled wait: %v", err)
	}
	release := <-small
	if u := l.Usage(); u.Reserved != 9*gib || u.Waiting != 0 || u.Trials != 2 {
		t.Errorf("usage %+v", u)
	}
	release()
	held()
}

// A trial larger than the whole GPU fails at once, with the figures, as an
// *OutOfMemoryError that does not fit (never retried).
func TestLedgerTooLarge(t *testing.T) {
	l := ledger(10 * gib)
	_, err := l.Reserve(context.Background(), trial(11*gib), func(s string) { t.Errorf("waits: %s", s) })
	var oom *backend.OutOfMemoryError
	if !errors.As(err, &oom) || !errors.Is(err, backend.ErrTooLarge) || oom.Fits() || oom.Need != 11*gib || oom.Total != 10*gib {
		t.Fatalf("err %v (%+v)", err, oom)
	}
	for _, want := range []string{"llama needs 11.00 GiB", "the device has 10.00 GiB", "does not fit on this device", "GPU 3 has 10.00 GiB for trials"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q: %v", want, err)
		}
	}
	if u := l.Usage(); u.Reserved != 0 || u.Waiting != 0 {
		t.Errorf("usage %+v", u)
	}
}

var registerTF32Need = sync.OnceFunc(func() {
	backend.RegisterNeed("cuda-tf32", func(c model.Config, b, s int) int64 { return int64(c.Dim * b * s) })
})

func TestNeed(t *testing.T) {
	cfg := model.Config{Dim: 8}
	if _, ok := backend.Need("cpu", cfg, 1, 1); ok {
		t.Error("the cpu backend has a need")
	}
	registerTF32Need() // once per process: -count=N runs this test N times
	if n, ok := backend.Need("cuda-tf32", cfg, 2, 3); !ok || n != 48 {
		t.Errorf("Need = %d, %v", n, ok)
	}
	for _, name := range []string{"cuda-tf32", "nosuch"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("RegisterNeed(%s) did not panic", name)
				}
			}()
			backend.RegisterNeed(name, nil)
		}()
	}
}

// A ledger shared with the node's other processes (ShareWith) admits a trial only once its
// share is held, says why it waits meanwhile, gives the share back when the trial releases,
// and gives it back too when the trial is canceled while it waits for memory.
func TestLedgerShareWith(t *testing.T) {
	l := ledger(4 * gib)
	var mu sync.Mutex
	held, gate := 0, make(chan struct{})
	l.ShareWith(func(ctx context.Context, waiting func()) (func(), error) {
		waiting()
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		mu.Lock()
		held++
		mu.Unlock()
		return func() { mu.Lock(); held--; mu.Unlock() }, nil
	})
	count := func() int { mu.Lock(); defer mu.Unlock(); return held }
	lines := make(chan string, 8)
	admitted := make(chan func(), 1)
	go func() {
		release, err := l.Reserve(context.Background(), backend.Request{Need: gib}, func(s string) { lines <- s })
		if err != nil {
			t.Error(err)
		}
		admitted <- release
	}()
	if line := <-lines; !strings.Contains(line, "waiting for GPU 3: a trial of several GPUs holds it") {
		t.Errorf("waiting line %q", line)
	}
	select {
	case <-admitted:
		t.Fatal("admitted before its share was held")
	case <-time.After(20 * time.Millisecond):
	}
	close(gate)
	release := <-admitted
	if count() != 1 {
		t.Errorf("%d shares held while admitted, want 1", count())
	}
	big, err := l.Reserve(context.Background(), backend.Request{Need: 2 * gib}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := l.Reserve(ctx, backend.Request{Need: 2 * gib}, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a trial that does not fit: %v, want it to wait until canceled", err)
	}
	if count() != 2 {
		t.Errorf("%d shares held after a canceled wait, want the two admitted trials'", count())
	}
	release()
	big()
	if count() != 0 {
		t.Errorf("%d shares held after every release", count())
	}
}
