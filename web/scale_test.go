package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training"
)

// scaleManifest is a grid of lrs learning rates × cs values of C × seeds seeds.
func scaleManifest(name string, lrs, cs, seeds int) string {
	var lr, c, sd []string
	for i := range lrs {
		lr = append(lr, fmt.Sprintf("%g", 1e-4*float64(i+1)))
	}
	for i := range cs {
		c = append(c, fmt.Sprint(20*(i+1)))
	}
	for i := range seeds {
		sd = append(sd, fmt.Sprint(i+1))
	}
	return fmt.Sprintf(`name: %s
model_config: {arch: llama, vocab: 257, dim: 32, layers: 2, heads: 2, context: 32, hidden: 64, batch: 4}
data: {default: byte}
batch_tokens: 128
steps: 10
eval_every: 2
seeds: [%s]
optimizers:
  - name: sfadamw
    lr: [%s]
    betas: [[0.9, 0.99]]
    c: [%s]
`, name, strings.Join(sd, ", "), strings.Join(lr, ", "), strings.Join(c, ", "))
}

// countingStore counts the objects read.
type countingStore struct {
	blob.Store
	gets, lists atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, key string) ([]byte, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, key)
}

func (c *countingStore) List(ctx context.Context, prefix string) ([]string, error) {
	c.lists.Add(1)
	return c.Store.List(ctx, prefix)
}

// A large sweep's page reads its index, its tables and the curves of the trials on
// the page: a number of objects that does not grow with the sweep.
func TestLargeSweepReadsItsIndex(t *testing.T) {
	dir := newDir(t)
	id, _ := fixture(t, dir, scaleManifest("large", 10, 10, 20), func(i int, p sweeps.Point) (*training.Result, string) {
		return curveResult(10, 3+float64(i%97)/100), ""
	})
	store := &countingStore{Store: dir}
	ts := newTestServer(t, store, Options{})
	code, _, page := get(t, nil, ts.URL+"/sweeps/"+id+"?sort=loss")
	if code != 200 {
		t.Fatal(code)
	}
	if n := strings.Count(page, `<tr data-trial="`); n != defaultPageSize || !strings.Contains(page, "page 1 of 40 · 2000 trials") {
		t.Errorf("%d rows on the page of a 2,000-trial sweep, want %d of 40 pages", n, defaultPageSize)
	}
	if g, l := store.gets.Load(), store.lists.Load(); g > 10 || l > 3 {
		t.Errorf("the page of 2,000 finished trials read %d objects and listed %d prefixes", g, l)
	}
}

// BenchmarkSweepPage loads the first page of a 10,000-trial sweep, sorted by loss, from a
// local store: with the index its table build wrote, by a server that has served it
// before (index) or not (index-cold), against reading every result (results: a sweep
// whose tables were never built, its index made by the request).
func BenchmarkSweepPage(b *testing.B) {
	store := newDir(b)
	id, _ := fixture(b, store, scaleManifest("bench", 25, 20, 20), func(i int, p sweeps.Point) (*training.Result, string) {
		return curveResult(10, 3+float64(i%97)/100), ""
	})
	ix, err := store.Get(context.Background(), keys.TrialIndex("sweeps/bench"))
	if err != nil {
		b.Fatal(err)
	}
	serve := func(b *testing.B, s *Server) {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/sweeps/"+id+"?sort=loss", nil))
		if w.Code != 200 || !strings.Contains(w.Body.String(), "page 1 of 200 · 10000 trials") {
			b.Fatalf("%d: %.300s", w.Code, w.Body.String())
		}
	}
	fresh := func(b *testing.B) *Server {
		s, err := New(Options{Store: store})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	b.Run("index", func(b *testing.B) { // one server, as a page's polls meet it
		s := fresh(b)
		for b.Loop() {
			serve(b, s)
		}
	})
	b.Run("index-cold", func(b *testing.B) { // a new server each time: nothing decoded yet
		for b.Loop() {
			serve(b, fresh(b))
		}
	})
	b.Run("results", func(b *testing.B) {
		if err := store.Delete(context.Background(), keys.TrialIndex("sweeps/bench")); err != nil {
			b.Fatal(err)
		}
		defer store.Put(context.Background(), keys.TrialIndex("sweeps/bench"), ix)
		for b.Loop() {
			serve(b, fresh(b))
		}
	})
}
