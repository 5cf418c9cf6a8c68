package activities

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/training/data"
)

// A program reads its data from a local directory: a dataset in the store is copied out
// once, verified, and the copy is what a later trial reads.
func TestProgramDataFromStore(t *testing.T) {
	ctx := context.Background()
	store, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	splits := map[string][]uint16{"train": {1, 2, 3, 4, 5, 6, 7, 8}, "val": {3, 2, 1, 0}, "test": {4, 4}}
	if _, err := data.Write(ctx, store, "datasets/tiny", data.Meta{Tokenizer: "byte", Vocab: 257, EOT: 256, Source: "test"}, splits, nil); err != nil {
		t.Fatal(err)
	}
	a := &Activities{Store: store, CacheDir: t.TempDir()}
	dir, err := a.programData(ctx, training.DataConfig{Path: "datasets/tiny"})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := data.OpenDir(dir)
	if err != nil {
		t.Fatalf("the copy does not open as a dataset: %v", err)
	}
	for name, want := range splits {
		if got, err := ds.Split(name); err != nil || !slices.Equal(got, want) {
			t.Errorf("split %s: %v, %v; want %v", name, got, err, want)
		}
	}
	// a second trial reads the copy: of the store, only meta.json is read again
	for _, split := range []string{"train.bin", "val.bin", "test.bin"} {
		if err := os.Remove(filepath.Join(store.Root(), "datasets", "tiny", split)); err != nil {
			t.Fatal(err)
		}
	}
	if again, err := a.programData(ctx, training.DataConfig{Path: "datasets/tiny"}); err != nil || again != dir {
		t.Fatalf("second trial: %s, %v; want the copy %s", again, err, dir)
	}
	// a dataset changed in the store (another meta.json) is copied anew, and verified
	if _, err := data.Write(ctx, store, "datasets/tiny", data.Meta{Tokenizer: "byte", Vocab: 257, EOT: 256, Source: "other"}, splits, nil); err != nil {
		t.Fatal(err)
	}
	if other, err := a.programData(ctx, training.DataConfig{Path: "datasets/tiny"}); err != nil || other == dir {
		t.Fatalf("a changed dataset: %s, %v; want a new copy", other, err)
	}
}
