package activities

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/internal/blob"
)

// gridSearch is the test manifest as a grid of lrs × cs configurations (learning rates
// from 1e-3 up, C from 10 up), searched as block says (a YAML flow mapping).
func gridSearch(lrs, cs int, block string) string {
	var lr, c []string
	for i := range lrs {
		lr = append(lr, fmt.Sprintf("%g", 1e-3*(1+float64(i)/64)))
	}
	for i := range cs {
		c = append(c, fmt.Sprint(10+5*i))
	}
	opt := fmt.Sprintf("lr: [%s], betas: [[0.9, 0.99]], c: [%s]}\nsearch: %s", strings.Join(lr, ", "), strings.Join(c, ", "), block)
	return strings.Replace(manifest, "lr: 3e-3, betas: [[0.9, 0.99]], c: [vanilla, 50]}", opt, 1)
}

// A manifest's searcher is made once for its bytes: asked again it is the same one, and a
// manifest of other bytes has its own; the cache keeps at most maxSearchers.
func TestSearcherCached(t *testing.T) {
	store, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := &Activities{Store: store}
	ctx := context.Background()
	get := func(key, src string) *searcher {
		t.Helper()
		if err := store.Put(ctx, key, []byte(src)); err != nil {
			t.Fatal(err)
		}
		sr, err := a.searcher(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return sr
	}
	first := get("m/a.yaml", gridSearch(3, 2, "{method: grid, seed: 1}"))
	if again := get("m/b.yaml", gridSearch(3, 2, "{method: grid, seed: 1}")); again != first {
		t.Error("the same manifest under another key made a second searcher")
	}
	other := get("m/a.yaml", gridSearch(3, 2, "{method: grid, seed: 2}"))
	if other == first || other.m.Search.Seed != 2 {
		t.Errorf("a manifest of other bytes under the same key: seed %d, the first searcher %v", other.m.Search.Seed, other == first)
	}
	for seed := range 2 * maxSearchers {
		get("m/a.yaml", gridSearch(3, 2, fmt.Sprintf("{method: grid, seed: %d}", seed+3)))
	}
	if n := len(a.searchers.by); n != maxSearchers || len(a.searchers.order) != n {
		t.Errorf("%d searchers kept (%d in order), want %d", n, len(a.searchers.order), maxSearchers)
	}
}

// BenchmarkSearcher is what each decision of a grid search of 2,000 configurations pays
// for its searcher: made anew (parse, expand, plan: the path before the cache) against
// found in the cache, in the same run.
func BenchmarkSearcher(b *testing.B) {
	store, err := blob.NewDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	const key = "sweeps/s/manifest.yaml"
	if err := store.Put(ctx, key, []byte(gridSearch(40, 50, "{method: grid, seed: 1, early_stopping: {rule: asha, min_steps: 2}}"))); err != nil {
		b.Fatal(err)
	}
	a := &Activities{Store: store}
	b.Run("new", func(b *testing.B) {
		for b.Loop() {
			m, err := a.readManifest(ctx, key)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := newSearcher(m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		if _, err := a.searcher(ctx, key); err != nil { // made once, outside the loop
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := a.searcher(ctx, key); err != nil {
				b.Fatal(err)
			}
		}
	})
}
