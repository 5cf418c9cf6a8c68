package data

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/tiktoken-go/tokenizer/codec"
)

// FuzzOpenMeta feeds arbitrary meta.json bytes beside valid split files: Open returns a
// dataset or an error, never panics, and a dataset it returns matches its meta.
func FuzzOpenMeta(f *testing.F) {
	dir := f.TempDir()
	st, _ := blob.NewDir(dir)
	ds, err := Write(context.Background(), st, "", Meta{Tokenizer: ByteTokenizer, Vocab: 257, EOT: 256},
		map[string][]uint16{Train: {1, 2, 256}, Val: {3, 256}}, nil)
	if err != nil {
		f.Fatal(err)
	}
	good, _ := MarshalMeta(&ds.Meta)
	f.Add(good)
	f.Add([]byte(`{"format": 1}`))
	f.Add([]byte(`{"format": 1, "tokenizer": "byte", "vocab": 257, "eot": 256, "splits": {"train": {"file": "../x", "tokens": 1, "sha256": ""}}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, meta []byte) {
		d := t.TempDir()
		for _, name := range []string{"train.bin", "val.bin"} {
			b, _ := os.ReadFile(filepath.Join(dir, name))
			if err := os.WriteFile(filepath.Join(d, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(d, MetaFile), meta, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := OpenDir(d)
		if err != nil {
			return
		}
		for name, sm := range got.Meta.Splits {
			toks, err := got.Split(name)
			if err != nil || int64(len(toks)) != sm.Tokens {
				t.Errorf("split %s: %d tokens, meta says %d (%v)", name, len(toks), sm.Tokens, err)
			}
		}
	})
}

// FuzzTokenizerRoundTrip checks decode(encode(s)) == s for every tokenizer and valid UTF-8 s,
// and that the GPT-2 ids equal the vocabulary library's own encoder's where s has no U+007F.
func FuzzTokenizerRoundTrip(f *testing.F) {
	for _, s := range roundTripTexts {
		f.Add(s)
	}
	lib := codec.NewR50kBase()
	toks := map[string]Tokenizer{}
	for _, name := range TokenizerNames {
		toks[name], _ = NewTokenizer(name)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		if !strings.ContainsRune(s, 0x7f) {
			want, _, _ := lib.Encode(s)
			got, _ := toks[GPT2Tokenizer].Encode(nil, s)
			if len(got) != len(want) {
				t.Fatalf("gpt2: Encode(%q) = %v, the library gives %v", s, got, want)
			}
			for i := range got {
				if uint(got[i]) != want[i] {
					t.Fatalf("gpt2: Encode(%q) = %v, the library gives %v", s, got, want)
				}
			}
		}
		for name, tok := range toks {
			ids, err := tok.Encode(nil, s)
			if err != nil {
				t.Fatalf("%s: Encode(%q): %v", name, s, err)
			}
			if got, err := tok.Decode(ids); err != nil || got != s {
				t.Fatalf("%s: Decode(Encode(%q)) = %q, %v", name, s, got, err)
			}
		}
	})
}
