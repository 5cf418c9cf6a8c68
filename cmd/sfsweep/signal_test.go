package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestValidateHostileManifests validates manifests built to be slow: 6 MB of 400,000
// keys, refused by its size before anything parses it, and 40,000 keys under the size
// limit, refused by their number. Each is refused at once, naming what is wrong.
func TestValidateHostileManifests(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		keys int
		want string
	}{{400_000, "manifest = 6"}, {40_000, "manifest = a mapping of 40001 keys: must have at most 1000"}} {
		var b strings.Builder
		b.WriteString("name: hostile\n")
		for i := range c.keys {
			fmt.Fprintf(&b, "k%06d: %d\n", i, i)
		}
		file := filepath.Join(dir, fmt.Sprintf("keys-%d.yaml", c.keys))
		if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var stdout, stderr bytes.Buffer
		code := runMain(context.Background(), []string{"validate", file}, &stdout, &stderr)
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%d keys: validate took %v, want well under 3s", c.keys, d)
		}
		if code != 1 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%d keys: exit %d, stderr %q: want 1 and %q", c.keys, code, stderr.String(), c.want)
		}
	}
}

// TestValidateEndsOnSIGTERM runs sfsweep validate as a process on a manifest that never
// ends (a FIFO nobody writes) and sends it SIGTERM: it exits at once, with the status a
// shell gives a process SIGTERM ended (143), saying so.
func TestValidateEndsOnSIGTERM(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "manifest.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := startProcess(ctx, t, dir, "validate", "validate", fifo)
	// it has reached the read once the FIFO has a reader: a writer's open without blocking
	// succeeds only then. The writer stays open and writes nothing, so the read blocks.
	var w *os.File
	for deadline := time.Now().Add(30 * time.Second); w == nil && time.Now().Before(deadline) && !p.exited(); time.Sleep(20 * time.Millisecond) {
		w, _ = os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	}
	if w == nil {
		t.Fatalf("validate never opened the FIFO:\n%s", p.output())
	}
	defer w.Close()
	if p.exited() {
		t.Fatalf("validate of a FIFO exited before the signal:\n%s", p.output())
	}
	sent := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		t.Fatalf("validate still running 5s after SIGTERM:\n%s", p.output())
	}
	if code := p.exitCode(); code != 143 || !strings.Contains(p.output(), "sfsweep validate: interrupted by SIGTERM") {
		t.Errorf("exit %d after %v, output:\n%s\nwant 143, interrupted by SIGTERM", code, time.Since(sent), p.output())
	}
}

// TestStopOnSignal: the first signal cancels the command's context with its cause; a
// second, or the end of the grace, ends the process with 128 + the signal's number.
func TestStopOnSignal(t *testing.T) {
	for _, second := range []bool{true, false} {
		sigs := make(chan os.Signal, 2)
		ctx, cancel := context.WithCancelCause(context.Background())
		exited := make(chan int, 1)
		var stderr syncBuffer
		grace := time.Hour
		if !second {
			grace = 50 * time.Millisecond
		}
		go stopOnSignal(sigs, cancel, &stderr, grace, func(code int) { exited <- code })
		sigs <- syscall.SIGTERM
		<-ctx.Done()
		if err := context.Cause(ctx); err.Error() != "interrupted by SIGTERM" {
			t.Errorf("cause %v", err)
		}
		want := 143
		if second {
			sigs <- os.Interrupt
			want = 130
		}
		select {
		case code := <-exited:
			if code != want {
				t.Errorf("second signal %v: exit %d, want %d (%s)", second, code, want, stderr.String())
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("second signal %v: no exit", second)
		}
	}
}
