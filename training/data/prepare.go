package data

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/internal/blob"
)

// DefaultExtensions are the file extensions Prepare reads when PrepareOptions.Extensions is
// empty. Files ending in ".jsonl" hold one JSON object per line whose "text" field is a
// document; every other file is one document.
var DefaultExtensions = []string{".txt", ".md", ".jsonl"}

// DefaultFractions are the train, val and test fractions of Prepare.
var DefaultFractions = [3]float64{0.98, 0.01, 0.01}

// PrepareOptions says what Prepare reads and where it writes.
type PrepareOptions struct {
	Src        string     // folder of text files, walked recursively (names starting with "." are skipped)
	Store      blob.Store // where the dataset is written
	Prefix     string     // key prefix of the dataset in Store ("" for its root)
	Tokenizer  string     // "byte" or "gpt2"
	Extensions []string   // file extensions to read, e.g. ".txt" (matched case-insensitively); nil: DefaultExtensions
	Fractions  [3]float64 // train, val, test fractions of documents; all zero: DefaultFractions
	MaxBytes   int64      // 0: every file; otherwise the first files in sorted order whose sizes sum to ≤ MaxBytes
	Source     string     // the source text of meta.json; "" describes the folder and options
	// Progress, when set, is called with the bytes of files read and tokenised so far and
	// the total, from one goroutine at a time, with done increasing.
	Progress func(done, total int64)
}

// Prepared is the result of Prepare: the dataset written and what went into it.
type Prepared struct {
	*Dataset
	Files   int      // files selected
	Bytes   int64    // their total size
	Skipped []string // selected files left out because they are not UTF-8 text (NUL bytes or invalid UTF-8)
}

// Prepare tokenises a folder of text into a dataset. Files are read in sorted path order
// (slash-separated, relative to Src); each document is followed by EOT. A document goes to
// train, val or test by a hash of its path (with ":line" for a JSON line), so its split does
// not depend on the other documents: u = SHA-256(path) as a fraction in [0, 1), train for
// u < f_train, val for u < f_train + f_val, test otherwise. A split the hash leaves empty takes
// the document whose u lies nearest its interval from a split with more than one, so any
// folder of three or more documents gives three non-empty splits. The same folder and options
// give byte-identical files.
func Prepare(ctx context.Context, opt PrepareOptions) (*Prepared, error) {
	tok, exts, fr, err := opt.check()
	if err != nil {
		return nil, err
	}
	files, total, err := selectFiles(opt.Src, exts, opt.MaxBytes)
	if err != nil {
		return nil, err
	}
	docs, skipped, err := tokenizeFiles(ctx, opt.Src, files, total, tok, opt.Progress)
	if err != nil {
		return nil, err
	}
	if err := assignSplits(docs, fr); err != nil {
		return nil, fmt.Errorf("data: prepare %s: %w", opt.Src, err)
	}
	splits := map[string][]uint16{}
	counts := map[string]int64{}
	for _, d := range docs {
		name := SplitNames[d.split]
		splits[name] = append(append(splits[name], d.tokens...), tok.EOT())
		counts[name]++
	}
	src := opt.Source
	if src == "" {
		src = fmt.Sprintf("%d files (%d bytes) with extensions %s under %s, split %s",
			len(files), total, strings.Join(exts, ","), filepath.ToSlash(opt.Src), formatFractions(fr))
	}
	meta := Meta{Tokenizer: tok.Name(), Vocab: tok.Vocab(), EOT: int(tok.EOT()), Source: src}
	ds, err := Write(ctx, opt.Store, opt.Prefix, meta, splits, counts)
	if err != nil {
		return nil, err
	}
	return &Prepared{Dataset: ds, Files: len(files), Bytes: total, Skipped: skipped}, nil
}

// check validates the options before any work and returns them resolved.
func (opt *PrepareOptions) check() (Tokenizer, []string, [3]float64, error) {
	fr := opt.Fractions
	if fr == [3]float64{} {
		fr = DefaultFractions
	}
	if opt.Src == "" {
		return nil, nil, fr, &fielderr.Error{Field: "src", Value: `""`, Reason: "a source folder is required"}
	}
	if st, err := os.Stat(opt.Src); err != nil {
		return nil, nil, fr, &fielderr.Error{Field: "src", Value: opt.Src, Reason: fmt.Sprintf("cannot read: %v", err)}
	} else if !st.IsDir() {
		return nil, nil, fr, &fielderr.Error{Field: "src", Value: opt.Src, Reason: "is not a directory"}
	}
	if opt.Store == nil {
		return nil, nil, fr, &fielderr.Error{Field: "store", Value: nil, Reason: "an output store is required"}
	}
	if opt.Prefix != "" {
		if err := blob.ValidKey(opt.Prefix); err != nil {
			return nil, nil, fr, &fielderr.Error{Field: "prefix", Value: opt.Prefix, Reason: err.Error()}
		}
	}
	tok, err := NewTokenizer(opt.Tokenizer)
	if err != nil {
		return nil, nil, fr, err
	}
	exts := opt.Extensions
	if len(exts) == 0 {
		exts = DefaultExtensions
	}
	for _, e := range exts {
		if len(e) < 2 || e[0] != '.' || strings.ContainsAny(e[1:], "./\\") {
			return nil, nil, fr, &fielderr.Error{Field: "extensions", Value: fmt.Sprintf("%q", e), Reason: `must be a dot and a name, e.g. ".txt"`}
		}
	}
	if err := CheckFractions(fr); err != nil {
		return nil, nil, fr, err
	}
	if opt.MaxBytes < 0 {
		return nil, nil, fr, &fielderr.Error{Field: "max_bytes", Value: opt.MaxBytes, Reason: "must be ≥ 0 (0: no cap)"}
	}
	return tok, exts, fr, nil
}

// CheckFractions reports, as a *fielderr.Error, train/val/test fractions that are not all in
// (0, 1) or do not sum to 1 (within 1e-9).
func CheckFractions(fr [3]float64) error {
	for i, f := range fr {
		if !(f > 0 && f < 1) {
			return &fielderr.Error{Field: "fractions", Value: formatFractions(fr), Reason: fmt.Sprintf("%s fraction %v must be in (0, 1)", SplitNames[i], f)}
		}
	}
	if s := fr[0] + fr[1] + fr[2]; math.Abs(s-1) > 1e-9 {
		return &fielderr.Error{Field: "fractions", Value: formatFractions(fr), Reason: fmt.Sprintf("sum to %.6g, must sum to 1", s)}
	}
	return nil
}

func formatFractions(fr [3]float64) string {
	return fmt.Sprintf("%v/%v/%v", fr[0], fr[1], fr[2])
}

// sourceFile is a file selected for a dataset.
type sourceFile struct {
	rel  string // slash-separated path relative to the source folder
	size int64
}

// selectFiles lists the regular files under root with one of exts in sorted order, up to
// maxBytes in total (0: all).
func selectFiles(root string, exts []string, maxBytes int64) ([]sourceFile, int64, error) {
	want := map[string]bool{}
	for _, e := range exts {
		want[strings.ToLower(e)] = true
	}
	var files []sourceFile
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !want[strings.ToLower(filepath.Ext(p))] {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		files = append(files, sourceFile{filepath.ToSlash(rel), info.Size()})
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("data: list %s: %w", root, err)
	}
	if len(files) == 0 {
		return nil, 0, &fielderr.Error{Field: "src", Value: root, Reason: fmt.Sprintf("holds no files with extensions %s", strings.Join(exts, ","))}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	var total int64
	for i, f := range files {
		if maxBytes > 0 && total+f.size > maxBytes {
			if i == 0 {
				return nil, 0, &fielderr.Error{Field: "max_bytes", Value: maxBytes, Reason: fmt.Sprintf("is smaller than the first file %s (%d bytes)", f.rel, f.size)}
			}
			files = files[:i]
			break
		}
		total += f.size
	}
	return files, total, nil
}

// document is one document of a dataset: its key (path, or path:line for a JSON line), its
// tokens and, once assigned, its split (an index into SplitNames) and hash point u.
type document struct {
	key    string
	tokens []uint16
	u      float64
	split  int
}

// tokenizeFiles reads and tokenises files on up to GOMAXPROCS goroutines; the documents come
// back in file order whatever the scheduling.
func tokenizeFiles(ctx context.Context, root string, files []sourceFile, total int64, tok Tokenizer, progress func(done, total int64)) ([]document, []string, error) {
	type result struct {
		docs    []document
		skipped bool
		err     error
	}
	results := make([]result, len(files))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next atomic.Int64
		mu   sync.Mutex // serialises progress
		done int64
		wg   sync.WaitGroup
	)
	if progress != nil {
		progress(0, total)
	}
	workers := min(runtime.GOMAXPROCS(0), len(files))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(files) || ctx.Err() != nil {
					return
				}
				r := &results[i]
				r.docs, r.skipped, r.err = tokenizeFile(root, files[i].rel, tok)
				if r.err != nil {
					cancel()
					return
				}
				if progress != nil {
					mu.Lock()
					done += files[i].size
					progress(done, total)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	var docs []document
	var skipped []string
	for i, r := range results {
		if r.err != nil {
			return nil, nil, r.err
		}
		if r.skipped {
			skipped = append(skipped, files[i].rel)
		}
		docs = append(docs, r.docs...)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("data: prepare %s: %w", root, err)
	}
	return docs, skipped, nil
}

// tokenizeFile returns the documents of one file; skipped reports a file that is not UTF-8
// text. Empty documents are left out.
func tokenizeFile(root, rel string, tok Tokenizer) (docs []document, skipped bool, err error) {
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, false, fmt.Errorf("data: %w", err)
	}
	if !strings.EqualFold(filepath.Ext(rel), ".jsonl") {
		if bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b) {
			return nil, true, nil
		}
		if len(b) == 0 {
			return nil, false, nil
		}
		t, err := tok.Encode(nil, string(b))
		if err != nil {
			return nil, false, fmt.Errorf("data: %s: %w", rel, err)
		}
		return []document{{key: rel, tokens: t}}, false, nil
	}
	for n, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var rec struct {
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			return nil, false, fmt.Errorf("data: %s:%d: %w", rel, n+1, err)
		}
		if rec.Text == nil {
			return nil, false, fmt.Errorf("data: %s:%d: no \"text\" field", rel, n+1)
		}
		if *rec.Text == "" {
			continue
		}
		// encoding/json replaces invalid UTF-8 with U+FFFD, so the text is valid here.
		t, err := tok.Encode(nil, *rec.Text)
		if err != nil {
			return nil, false, fmt.Errorf("data: %s:%d: %w", rel, n+1, err)
		}
		docs = append(docs, document{key: fmt.Sprintf("%s:%d", rel, n+1), tokens: t})
	}
	return docs, false, nil
}

// hashPoint maps a document key to a point in [0, 1): the first 53 bits of its SHA-256.
func hashPoint(key string) float64 {
	s := sha256.Sum256([]byte(key))
	return float64(binary.BigEndian.Uint64(s[:8])>>11) / (1 << 53)
}

// assignSplits sets each document's split from its hash point and the fractions, then fills
// any empty split as Prepare describes.
func assignSplits(docs []document, fr [3]float64) error {
	if len(docs) < len(SplitNames) {
		return fmt.Errorf("%d non-empty documents: need at least %d, one for each of %v", len(docs), len(SplitNames), SplitNames)
	}
	lo := [3]float64{0, fr[0], fr[0] + fr[1]}
	hi := [3]float64{fr[0], fr[0] + fr[1], math.Inf(1)}
	var count [3]int
	for i := range docs {
		d := &docs[i]
		d.u = hashPoint(d.key)
		switch {
		case d.u < hi[0]:
			d.split = 0
		case d.u < hi[1]:
			d.split = 1
		default:
			d.split = 2
		}
		count[d.split]++
	}
	for _, s := range []int{1, 2, 0} {
		if count[s] > 0 {
			continue
		}
		best, bestDist := -1, math.Inf(1)
		for i, d := range docs {
			if count[d.split] < 2 {
				continue
			}
			dist := max(lo[s]-d.u, d.u-hi[s], 0)
			if dist < bestDist {
				best, bestDist = i, dist
			}
		}
		count[docs[best].split]--
		docs[best].split = s
		count[s]++
	}
	return nil
}
