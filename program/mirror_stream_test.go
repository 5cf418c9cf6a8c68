package program_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/infra/s3gw"
	"github.com/sfsweep/sfsweep/infra/s3store"
	"github.com/sfsweep/sfsweep/program"
)

// streamBytesEnv sets the size of the checkpoint TestMirrorStreamsMemory pushes and
// restores, in MiB (default 256): 2048 gives the figure docs/trainer.md states.
const streamBytesEnv = "SFSWEEP_TEST_MIRROR_MIB"

// A program's checkpoint goes to the store and back through a few parts of memory: the
// mirror pushes a file larger than the bound to the embedded S3 gateway (the test's own
// process serves it, so its memory counts too) and restores it on a fresh mirror, and the
// process's peak resident memory grows by less than 128 MiB in each, where a copy in
// memory would take the file's size. The restored file is the pushed one, byte for byte.
func TestMirrorStreamsMemory(t *testing.T) {
	if _, err := os.Stat("/proc/self/clear_refs"); err != nil {
		t.Skip("needs Linux's /proc to measure peak resident memory")
	}
	if testing.Short() {
		t.Skip("writes and moves a file of hundreds of MiB (-short)")
	}
	mib := int64(256)
	if v := os.Getenv(streamBytesEnv); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			t.Fatalf("%s = %q: want a whole number of MiB", streamBytesEnv, v)
		}
		mib = n
	}
	const bound = 128 << 20
	ctx := context.Background()
	dir := t.TempDir()
	gw, err := s3gw.Start(ctx, s3gw.Options{Root: filepath.Join(dir, "s3")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Stop() })
	store, err := s3store.New(ctx, gw.StoreConfig(""))
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "ckpt")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	want := writeRandom(t, filepath.Join(src, "step-100.pt"), mib<<20)

	push := &program.Mirror{Store: store, Prefix: "trials/t/program/checkpoints", Dir: src}
	grew := peakGrowth(t, func() {
		if _, err := push.Push(ctx, nil); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("push of %d MiB: peak resident memory grew by %.1f MiB", mib, float64(grew)/(1<<20))
	if grew >= bound {
		t.Errorf("push of %d MiB: peak resident memory grew by %.1f MiB, want < %d MiB", mib, float64(grew)/(1<<20), bound>>20)
	}

	restored := filepath.Join(dir, "restored")
	pull := &program.Mirror{Store: store, Prefix: push.Prefix, Dir: restored}
	grew = peakGrowth(t, func() {
		if err := pull.Restore(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("restore of %d MiB: peak resident memory grew by %.1f MiB", mib, float64(grew)/(1<<20))
	if grew >= bound {
		t.Errorf("restore of %d MiB: peak resident memory grew by %.1f MiB, want < %d MiB", mib, float64(grew)/(1<<20), bound>>20)
	}
	if got := hashFile(t, filepath.Join(restored, "step-100.pt")); got != want {
		t.Fatal("the restored checkpoint is not the one pushed")
	}
}

// writeRandom writes n random bytes to p, a MiB at a time, and returns their hash.
func writeRandom(t *testing.T, p string, n int64) [sha256.Size]byte {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	r := rand.NewChaCha8([32]byte{1})
	buf := make([]byte, 1<<20)
	for left := n; left > 0; left -= int64(len(buf)) {
		b := buf[:min(int64(len(buf)), left)]
		r.Read(b)
		h.Write(b)
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	return [sha256.Size]byte(h.Sum(nil))
}

func hashFile(t *testing.T, p string) [sha256.Size]byte {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return [sha256.Size]byte(h.Sum(nil))
}

// peakGrowth runs f and returns how far the process's peak resident memory (VmHWM) rose
// above its resident memory before f, the peak reset (clear_refs) after a collection.
func peakGrowth(t *testing.T, f func()) int64 {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak resident memory: %v", err)
	}
	before := procStatus(t, "VmRSS")
	f()
	return procStatus(t, "VmHWM") - before
}

// procStatus is a field of /proc/self/status in bytes.
func procStatus(t *testing.T, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for l := range bytes.Lines(b) {
		if v, ok := strings.CutPrefix(string(l), field+":"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err != nil {
				t.Fatalf("%s: %q: %v", field, v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}
