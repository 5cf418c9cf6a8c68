package data

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/internal/blob"
)

// writeTree writes files (slash paths relative to dir) and returns dir.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// corpusFiles returns n text files in nested folders, each with distinct content.
func corpusFiles(n int) map[string]string {
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("part%d/doc%03d.txt", i%3, i)] = fmt.Sprintf("document %d: %s\n", i, strings.Repeat("río ", i%7+1))
	}
	return files
}

func prepareTo(t *testing.T, opt PrepareOptions) (*Prepared, string) {
	t.Helper()
	out := t.TempDir()
	st, err := blob.NewDir(out)
	if err != nil {
		t.Fatal(err)
	}
	opt.Store = st
	p, err := Prepare(context.Background(), opt)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	return p, out
}

// refPoint is the split rule's hash point, computed here from its definition.
func refPoint(key string) float64 {
	s := sha256.Sum256([]byte(key))
	return float64(binary.BigEndian.Uint64(s[:8])>>11) / math.Exp2(53)
}

func TestPrepareDeterministic(t *testing.T) {
	src := writeTree(t, corpusFiles(30))
	for _, tok := range TokenizerNames {
		opt := PrepareOptions{Src: src, Tokenizer: tok, Fractions: [3]float64{0.6, 0.2, 0.2}}
		p1, out1 := prepareTo(t, opt)
		p2, out2 := prepareTo(t, opt)
		if p1.Digest() != p2.Digest() {
			t.Errorf("%s: digests differ: %s, %s", tok, p1.Digest(), p2.Digest())
		}
		for _, f := range []string{MetaFile, "train.bin", "val.bin", "test.bin"} {
			a, err1 := os.ReadFile(filepath.Join(out1, f))
			b, err2 := os.ReadFile(filepath.Join(out2, f))
			if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
				t.Errorf("%s: %s differs between two runs (%v, %v)", tok, f, err1, err2)
			}
		}
		if _, err := OpenDir(out1); err != nil {
			t.Errorf("%s: OpenDir of a prepared dataset: %v", tok, err)
		}
	}
}

// Each document lands in the split its hash point says, whole, followed by EOT, in path
// order within its split.
func TestPrepareSplitAssignment(t *testing.T) {
	files := corpusFiles(40)
	src := writeTree(t, files)
	fr := [3]float64{0.5, 0.3, 0.2}
	p, _ := prepareTo(t, PrepareOptions{Src: src, Tokenizer: ByteTokenizer, Fractions: fr})
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	want := map[string][]string{}
	for _, name := range names {
		u := refPoint(name)
		switch {
		case u < fr[0]:
			want[Train] = append(want[Train], files[name])
		case u < fr[0]+fr[1]:
			want[Val] = append(want[Val], files[name])
		default:
			want[Test] = append(want[Test], files[name])
		}
	}
	for _, split := range SplitNames {
		if len(want[split]) == 0 {
			t.Fatalf("fixture leaves %s empty; the rule is tested on non-empty splits", split)
		}
		toks, err := p.Split(split)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		start := 0
		for i, id := range toks {
			if id == 256 {
				got = append(got, string(bytesOf(toks[start:i])))
				start = i + 1
			}
		}
		if start != len(toks) {
			t.Errorf("%s does not end with EOT", split)
		}
		if strings.Join(got, "\x00") != strings.Join(want[split], "\x00") {
			t.Errorf("%s holds %d documents, want %d (by the hash rule)", split, len(got), len(want[split]))
		}
		if d := p.Meta.Splits[split].Documents; d != int64(len(want[split])) {
			t.Errorf("meta documents of %s = %d, want %d", split, d, len(want[split]))
		}
	}
	if p.Files != 40 || len(p.Skipped) != 0 {
		t.Errorf("Files = %d, Skipped = %v; want 40, none", p.Files, p.Skipped)
	}
}

func bytesOf(toks []uint16) []byte {
	b := make([]byte, len(toks))
	for i, t := range toks {
		b[i] = byte(t)
	}
	return b
}

// With three documents and 1% val and test, the hash rule leaves val or test empty; each
// empty split takes the document whose hash point is nearest its interval.
func TestPrepareFillsEmptySplits(t *testing.T) {
	files := map[string]string{"a.txt": "alpha", "b.txt": "beta", "c.txt": "gamma"}
	src := writeTree(t, files)
	p, _ := prepareTo(t, PrepareOptions{Src: src, Tokenizer: ByteTokenizer})
	// Reference: assign by the rule, then move nearest documents, val then test then train.
	fr := DefaultFractions
	lo := [3]float64{0, fr[0], fr[0] + fr[1]}
	hi := [3]float64{fr[0], fr[0] + fr[1], 2}
	names := []string{"a.txt", "b.txt", "c.txt"}
	split := map[string]int{}
	count := [3]int{}
	for _, n := range names {
		u := refPoint(n)
		s := 2
		if u < hi[0] {
			s = 0
		} else if u < hi[1] {
			s = 1
		}
		split[n] = s
		count[s]++
	}
	if count[1] != 0 && count[2] != 0 {
		t.Fatalf("fixture does not leave val or test empty: %v", count)
	}
	for _, s := range []int{1, 2, 0} {
		if count[s] > 0 {
			continue
		}
		best, bestDist := "", math.Inf(1)
		for _, n := range names {
			if count[split[n]] < 2 {
				continue
			}
			u := refPoint(n)
			d := 0.0
			if u < lo[s] {
				d = lo[s] - u
			} else if u >= hi[s] {
				d = u - hi[s]
			}
			if d < bestDist {
				best, bestDist = n, d
			}
		}
		count[split[best]]--
		split[best] = s
		count[s]++
	}
	for _, n := range names {
		toks, _ := p.Split(SplitNames[split[n]])
		if got := string(bytesOf(toks[:len(toks)-1])); got != files[n] {
			t.Errorf("%s holds %q, want %s's %q", SplitNames[split[n]], got, n, files[n])
		}
	}
}

func TestPrepareJSONLAndExtensions(t *testing.T) {
	files := map[string]string{
		"a.jsonl":      `{"text": "first line", "id": 1}` + "\n\n" + `{"text": "second\nline"}` + "\n" + `{"text": ""}` + "\n",
		"b.md":         "# title\n",
		"c.txt":        "plain",
		"d.go":         "package d",
		".hidden.txt":  "hidden",
		".git/x.txt":   "ignored",
		"sub/e.TXT":    "upper-case extension",
		"sub/bin.txt":  "binary\x00data",
		"sub/bad.txt":  "latin-1 \xe9",
		"sub/empty.md": "",
	}
	src := writeTree(t, files)
	p, _ := prepareTo(t, PrepareOptions{Src: src, Tokenizer: GPT2Tokenizer, Fractions: [3]float64{0.4, 0.3, 0.3}})
	tok, _ := NewTokenizer(GPT2Tokenizer)
	var all []string
	for _, s := range SplitNames {
		toks, _ := p.Split(s)
		text, err := tok.Decode(toks)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, strings.Split(strings.TrimSuffix(text, EOTText), EOTText)...)
	}
	sort.Strings(all)
	want := []string{"# title\n", "first line", "plain", "second\nline", "upper-case extension"}
	if strings.Join(all, "|") != strings.Join(want, "|") {
		t.Errorf("documents = %q, want %q", all, want)
	}
	if strings.Join(p.Skipped, ",") != "sub/bad.txt,sub/bin.txt" {
		t.Errorf("Skipped = %v, want the binary and the invalid UTF-8 file", p.Skipped)
	}
	if p.Files != 7 {
		t.Errorf("Files = %d, want 7 (a.jsonl b.md c.txt sub/bad.txt sub/bin.txt sub/e.TXT sub/empty.md)", p.Files)
	}
	// Only .go files: a single document is too few for three splits.
	out, _ := blob.NewDir(t.TempDir())
	_, err := Prepare(context.Background(), PrepareOptions{Src: src, Store: out, Tokenizer: ByteTokenizer, Extensions: []string{".go"}})
	if err == nil || !strings.Contains(err.Error(), "1 non-empty documents") {
		t.Errorf("Prepare of one document = %v, want an error saying so", err)
	}
}

func TestPrepareMaxBytesAndProgress(t *testing.T) {
	files := map[string]string{}
	for i := range 20 {
		files[fmt.Sprintf("f%02d.txt", i)] = strings.Repeat(string(rune('a'+i)), 100)
	}
	src := writeTree(t, files)
	var calls [][2]int64
	p, _ := prepareTo(t, PrepareOptions{
		Src: src, Tokenizer: ByteTokenizer, MaxBytes: 1050, Fractions: [3]float64{0.5, 0.25, 0.25},
		Progress: func(done, total int64) { calls = append(calls, [2]int64{done, total}) },
	})
	if p.Files != 10 || p.Bytes != 1000 {
		t.Errorf("Files, Bytes = %d, %d; want the first 10 files, 1000 bytes", p.Files, p.Bytes)
	}
	var n int64
	for _, s := range SplitNames {
		n += p.Meta.Splits[s].Tokens
	}
	if n != 1000+10 {
		t.Errorf("%d tokens, want 1000 bytes + 10 EOT", n)
	}
	for _, s := range SplitNames {
		toks, _ := p.Split(s)
		for _, id := range toks {
			if id != 256 && id >= 'a'+10 {
				t.Fatalf("split %s holds %q from a file past the cap", s, rune(id))
			}
		}
	}
	if len(calls) != 11 || calls[0] != [2]int64{0, 1000} || calls[10] != [2]int64{1000, 1000} {
		t.Errorf("progress calls = %v, want 0/1000 … 1000/1000 in 11 calls", calls)
	}
	for i := 1; i < len(calls); i++ {
		if calls[i][0] <= calls[i-1][0] {
			t.Errorf("progress not increasing: %v", calls)
		}
	}
}

func TestPrepareBadOptions(t *testing.T) {
	src := writeTree(t, corpusFiles(5))
	empty := t.TempDir()
	file := filepath.Join(src, "part0", "doc000.txt")
	st, _ := blob.NewDir(t.TempDir())
	tests := []struct {
		name  string
		opt   PrepareOptions
		field string
	}{
		{"no src", PrepareOptions{Tokenizer: "byte"}, "src"},
		{"missing src", PrepareOptions{Src: filepath.Join(empty, "nope"), Tokenizer: "byte"}, "src"},
		{"src is a file", PrepareOptions{Src: file, Tokenizer: "byte"}, "src"},
		{"empty folder", PrepareOptions{Src: empty, Tokenizer: "byte"}, "src"},
		{"no matching files", PrepareOptions{Src: src, Tokenizer: "byte", Extensions: []string{".rst"}}, "src"},
		{"unknown tokenizer", PrepareOptions{Src: src, Tokenizer: "bpe"}, "tokenizer"},
		{"fraction zero", PrepareOptions{Src: src, Tokenizer: "byte", Fractions: [3]float64{1, 0, 0}}, "fractions"},
		{"fraction negative", PrepareOptions{Src: src, Tokenizer: "byte", Fractions: [3]float64{0.9, 0.2, -0.1}}, "fractions"},
		{"fractions sum", PrepareOptions{Src: src, Tokenizer: "byte", Fractions: [3]float64{0.5, 0.2, 0.2}}, "fractions"},
		{"fraction NaN", PrepareOptions{Src: src, Tokenizer: "byte", Fractions: [3]float64{math.NaN(), 0.5, 0.5}}, "fractions"},
		{"extension", PrepareOptions{Src: src, Tokenizer: "byte", Extensions: []string{"txt"}}, "extensions"},
		{"max bytes", PrepareOptions{Src: src, Tokenizer: "byte", MaxBytes: -1}, "max_bytes"},
		{"cap below first file", PrepareOptions{Src: src, Tokenizer: "byte", MaxBytes: 3}, "max_bytes"},
		{"prefix", PrepareOptions{Src: src, Tokenizer: "byte", Prefix: "../up"}, "prefix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opt.Store = st
			_, err := Prepare(context.Background(), tt.opt)
			var fe *fielderr.Error
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("Prepare = %v, want a *fielderr.Error on %s", err, tt.field)
			}
		})
	}
	keys, _ := st.List(context.Background(), "")
	if len(keys) != 0 {
		t.Errorf("bad options wrote %v", keys)
	}
}

func TestPrepareBadJSONL(t *testing.T) {
	for name, body := range map[string]string{
		"not json": "{\"text\": \"ok\"}\nnot json\n",
		"no text":  "{\"text\": \"ok\"}\n{\"body\": \"x\"}\n",
	} {
		src := writeTree(t, map[string]string{"x.jsonl": body, "a.txt": "a", "b.txt": "b"})
		st, _ := blob.NewDir(t.TempDir())
		_, err := Prepare(context.Background(), PrepareOptions{Src: src, Store: st, Tokenizer: "byte"})
		if err == nil || !strings.Contains(err.Error(), "x.jsonl:2") {
			t.Errorf("%s: Prepare = %v, want an error naming x.jsonl:2", name, err)
		}
	}
}

func TestPrepareCancelled(t *testing.T) {
	src := writeTree(t, corpusFiles(20))
	st, _ := blob.NewDir(t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Prepare(ctx, PrepareOptions{Src: src, Store: st, Tokenizer: "byte"})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Prepare with a cancelled context = %v, want context.Canceled", err)
	}
}
