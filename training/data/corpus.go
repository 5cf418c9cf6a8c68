package data

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/internal/blob"
)

// DefaultCorpusBytes is the size cap of the default corpus when none is given: a few MB of
// Go source, which the byte tokenizer prepares in about a second.
const DefaultCorpusBytes = 4 << 20

// CorpusExtensions are the files of the Go source tree the default corpus reads.
var CorpusExtensions = []string{".go"}

// CorpusFractions are the train, val and test fractions of the default corpus; val and test
// are larger than Prepare's defaults so that small caps still give every split documents.
var CorpusFractions = [3]float64{0.9, 0.05, 0.05}

// CorpusOptions selects a default corpus.
type CorpusOptions struct {
	Tokenizer string // "byte" or "gpt2"
	CacheDir  string // local directory holding prepared corpora, e.g. ./.sfsweep/data
	MaxBytes  int64  // size cap of the selected source files; 0: DefaultCorpusBytes
	// Progress, when set, reports the preparation as PrepareOptions.Progress does; it is not
	// called when the corpus comes from the cache.
	Progress func(done, total int64)
}

// Corpus is a default corpus, opened from the cache or freshly prepared into it.
type Corpus struct {
	*Dataset
	Dir       string // the cache directory holding it
	GoVersion string // the Go version whose source tree it was made from
	Cached    bool   // whether it was read from the cache
}

// DefaultCorpus returns the offline corpus every machine that builds sfsweep has: the Go
// toolchain's own source tree ($(go env GOROOT)/src, falling back to runtime.GOROOT()),
// its .go files in sorted path order up to maxBytes (0: DefaultCorpusBytes), split
// CorpusFractions by document. It is tokenised once and cached under cacheDir, keyed by
// the Go version, the tokenizer and the cap; later calls open the cache and read nothing of
// the source tree. The dataset's digest depends only on those three, not on where Go is
// installed.
func DefaultCorpus(ctx context.Context, tokenizer string, cacheDir string, maxBytes int64) (*Dataset, error) {
	c, err := LoadCorpus(ctx, CorpusOptions{Tokenizer: tokenizer, CacheDir: cacheDir, MaxBytes: maxBytes})
	if err != nil {
		return nil, err
	}
	return c.Dataset, nil
}

// LoadCorpus is DefaultCorpus with progress and with where the corpus came from.
func LoadCorpus(ctx context.Context, opt CorpusOptions) (*Corpus, error) {
	if _, ok := tokenizerShapes[opt.Tokenizer]; !ok {
		return nil, &fielderr.Error{Field: "tokenizer", Value: fmt.Sprintf("%q", opt.Tokenizer), Reason: fmt.Sprintf("unknown tokenizer (want one of %v)", TokenizerNames)}
	}
	if opt.CacheDir == "" {
		return nil, &fielderr.Error{Field: "cache_dir", Value: `""`, Reason: "a cache directory is required"}
	}
	if opt.MaxBytes < 0 {
		return nil, &fielderr.Error{Field: "max_bytes", Value: opt.MaxBytes, Reason: "must be ≥ 0 (0: the default cap)"}
	}
	maxBytes := opt.MaxBytes
	if maxBytes == 0 {
		maxBytes = DefaultCorpusBytes
	}
	root, version, err := goSource(ctx)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("gosrc-%s-%s-%d", sanitizeVersion(version), opt.Tokenizer, maxBytes)
	dir := filepath.Join(opt.CacheDir, key)
	if ds, err := OpenDir(dir); err == nil {
		return &Corpus{Dataset: ds, Dir: dir, GoVersion: version, Cached: true}, nil
	}
	// Missing or damaged: prepare it again. Split files are written before meta.json, so an
	// interrupted preparation is found damaged next time and redone.
	src := filepath.Join(root, "src")
	if st, err := os.Stat(src); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("data: default corpus: the Go source tree %s is not there (GOROOT %s): %v", src, root, err)
	}
	st, err := blob.NewDir(dir)
	if err != nil {
		return nil, fmt.Errorf("data: default corpus: %w", err)
	}
	p, err := Prepare(ctx, PrepareOptions{
		Src:        src,
		Store:      st,
		Tokenizer:  opt.Tokenizer,
		Extensions: CorpusExtensions,
		Fractions:  CorpusFractions,
		MaxBytes:   maxBytes,
		Source: fmt.Sprintf("Go %s source tree (GOROOT/src): %s files in sorted path order up to %d bytes, split %s by document",
			version, strings.Join(CorpusExtensions, ","), maxBytes, formatFractions(CorpusFractions)),
		Progress: opt.Progress,
	})
	if err != nil {
		return nil, fmt.Errorf("data: default corpus: %w", err)
	}
	return &Corpus{Dataset: p.Dataset, Dir: dir, GoVersion: version}, nil
}

// goSource returns the GOROOT whose source tree the default corpus reads and its Go
// version. Tests replace it.
var goSource = func(ctx context.Context) (root, version string, err error) {
	cmd := exec.CommandContext(ctx, "go", "env", "GOROOT", "GOVERSION")
	// A neutral directory and GOTOOLCHAIN=local: no go.mod may make go switch toolchains.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	if out, err := cmd.Output(); err == nil {
		if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) == 2 && lines[0] != "" && lines[1] != "" {
			return lines[0], lines[1], nil
		}
	}
	// No go command on PATH: the GOROOT this program was built with, or $GOROOT.
	//lint:ignore SA1019 runtime.GOROOT is the documented fallback here
	root = runtime.GOROOT()
	if root == "" {
		return "", "", fmt.Errorf("data: default corpus: no go command on PATH and no GOROOT known")
	}
	version = runtime.Version()
	if f, err := os.Open(filepath.Join(root, "VERSION")); err == nil {
		sc := bufio.NewScanner(f)
		if sc.Scan() && strings.HasPrefix(sc.Text(), "go") {
			version = sc.Text()
		}
		f.Close()
	}
	return root, version, nil
}

// sanitizeVersion keeps a Go version usable as part of a directory name.
func sanitizeVersion(v string) string {
	b := []byte(v)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-') {
			b[i] = '_'
		}
	}
	return string(bytes.TrimSpace(b))
}
