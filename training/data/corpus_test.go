package data

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/fielderr"
)

func TestDefaultCorpusCaches(t *testing.T) {
	ctx := context.Background()
	root, version, err := goSource(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	const cap = 256 << 10
	var progressed int64
	c1, err := LoadCorpus(ctx, CorpusOptions{Tokenizer: ByteTokenizer, CacheDir: cache, MaxBytes: cap,
		Progress: func(done, total int64) { progressed = done }})
	if err != nil {
		t.Fatal(err)
	}
	if c1.Cached || c1.GoVersion != version || !strings.Contains(c1.Meta.Source, version) {
		t.Errorf("first load: cached %v, version %q, source %q; want fresh, %s", c1.Cached, c1.GoVersion, c1.Meta.Source, version)
	}
	var tokens, docs int64
	for _, s := range SplitNames {
		sm := c1.Meta.Splits[s]
		if sm.Tokens == 0 || sm.Documents == 0 {
			t.Errorf("split %s is empty: %+v", s, sm)
		}
		tokens += sm.Tokens
		docs += sm.Documents
	}
	// Byte tokens are the bytes of the selected files plus one EOT each, within the cap.
	if tokens-docs > cap || tokens-docs != progressed {
		t.Errorf("%d tokens − %d EOT = %d bytes; want ≤ cap %d and = bytes read %d", tokens, docs, tokens-docs, cap, progressed)
	}
	// The first document is the first .go file of GOROOT/src in sorted order.
	first := firstGoFile(t, filepath.Join(root, "src"))
	body, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range SplitNames {
		toks, _ := c1.Split(s)
		if len(toks) > len(body) && string(bytesOf(toks[:len(body)])) == string(body) && toks[len(body)] == 256 {
			found = true
		}
	}
	if !found {
		t.Errorf("no split starts with %s", first)
	}

	// The second load reads the cache: the source tree is made unreachable.
	defer func(f func(context.Context) (string, string, error)) { goSource = f }(goSource)
	goSource = func(context.Context) (string, string, error) {
		return filepath.Join(t.TempDir(), "no-goroot"), version, nil
	}
	c2, err := LoadCorpus(ctx, CorpusOptions{Tokenizer: ByteTokenizer, CacheDir: cache, MaxBytes: cap,
		Progress: func(int64, int64) { t.Error("progress called for a cached corpus") }})
	if err != nil {
		t.Fatalf("second load without a source tree: %v", err)
	}
	if !c2.Cached || c2.Digest() != c1.Digest() || c2.Dir != c1.Dir {
		t.Errorf("second load: cached %v, digest %s, dir %s; want cached, %s, %s", c2.Cached, c2.Digest(), c2.Dir, c1.Digest(), c1.Dir)
	}
	ds, err := DefaultCorpus(ctx, ByteTokenizer, cache, cap)
	if err != nil || ds.Digest() != c1.Digest() {
		t.Errorf("DefaultCorpus = %v, %v; want the cached dataset", ds, err)
	}

	// A damaged cache is prepared again, which here fails for want of a source tree.
	flipByte(t, filepath.Join(c1.Dir, "val.bin"), 0)
	if _, err := DefaultCorpus(ctx, ByteTokenizer, cache, cap); err == nil || !strings.Contains(err.Error(), "no-goroot") {
		t.Errorf("DefaultCorpus with a damaged cache and no source = %v, want an error naming the missing tree", err)
	}
	// Another cap is another cache entry.
	if _, err := DefaultCorpus(ctx, ByteTokenizer, cache, cap+1); err == nil {
		t.Error("DefaultCorpus with a new cap and no source tree: no error")
	}
}

func TestDefaultCorpusBadOptions(t *testing.T) {
	ctx := context.Background()
	var fe *fielderr.Error
	if _, err := DefaultCorpus(ctx, "words", t.TempDir(), 0); !errors.As(err, &fe) || fe.Field != "tokenizer" {
		t.Errorf("unknown tokenizer: %v", err)
	}
	if _, err := DefaultCorpus(ctx, "byte", "", 0); !errors.As(err, &fe) || fe.Field != "cache_dir" {
		t.Errorf("no cache dir: %v", err)
	}
	if _, err := DefaultCorpus(ctx, "byte", t.TempDir(), -5); !errors.As(err, &fe) || fe.Field != "max_bytes" {
		t.Errorf("negative cap: %v", err)
	}
}

// firstGoFile returns the first .go file under dir in sorted slash-path order, skipping names
// that start with ".".
func firstGoFile(t *testing.T, dir string) string {
	t.Helper()
	best := ""
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && strings.HasSuffix(p, ".go") {
			rel, _ := filepath.Rel(dir, p)
			rel = filepath.ToSlash(rel)
			if best == "" || rel < best {
				best = rel
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, filepath.FromSlash(best))
}
