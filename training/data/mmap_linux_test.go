package data

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/internal/blob"
)

// rssAnon is the process's resident anonymous memory (heap, stacks; not file mappings).
func rssAnon(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "RssAnon:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no RssAnon in /proc/self/status")
	return 0
}

// A local dataset's splits are mapped, not read: opening 64 MiB of training tokens costs
// the process almost no memory of its own, the file shows among its mappings, and the
// tokens are those written.
func TestOpenDirMapsSplits(t *testing.T) {
	dir := t.TempDir()
	st, err := blob.NewDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	train := make([]uint16, 32<<20)
	for i := range train {
		train[i] = uint16(i*7919) % 257
	}
	meta := Meta{Tokenizer: ByteTokenizer, Vocab: 257, EOT: 256}
	if _, err := Write(context.Background(), st, "big", meta, map[string][]uint16{Train: train, Val: {1, 2}, Test: {3, 4}}, nil); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	before := rssAnon(t)
	ds, err := OpenDir(filepath.Join(dir, "big"))
	if err != nil {
		t.Fatal(err)
	}
	grew := rssAnon(t) - before
	got, _ := ds.Split(Train)
	if len(got) != len(train) {
		t.Fatalf("%d training tokens, want %d", len(got), len(train))
	}
	for i := range train {
		if got[i] != train[i] {
			t.Fatalf("token %d = %d, want %d", i, got[i], train[i])
		}
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(maps), filepath.Join(dir, "big", "train.bin")) {
		t.Error("train.bin is not mapped")
	}
	if grew > 16<<20 {
		t.Errorf("opening 64 MiB of tokens grew the process's own memory by %d MiB, want < 16 (a mapping)", grew>>20)
	}
	t.Logf("OpenDir of 64 MiB of tokens: process memory +%d MiB", grew>>20)
}
