package data

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/internal/blob"
)

// writeTestDataset writes a small byte-tokenizer dataset under prefix in a fresh folder and
// returns the folder.
func writeTestDataset(t *testing.T, prefix string) (string, map[string][]uint16) {
	t.Helper()
	dir := t.TempDir()
	st, err := blob.NewDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	splits := map[string][]uint16{
		Train: {104, 200, 105, 256, 7, 256},
		Val:   {1, 2, 3, 256},
		Test:  {255, 256},
	}
	meta := Meta{Tokenizer: ByteTokenizer, Vocab: 257, EOT: 256, Source: "test"}
	if _, err := Write(context.Background(), st, prefix, meta, splits, map[string]int64{Train: 2, Val: 1, Test: 1}); err != nil {
		t.Fatal(err)
	}
	return dir, splits
}

func TestWriteOpenRoundTrip(t *testing.T) {
	ctx := context.Background()
	for _, prefix := range []string{"", "datasets/tiny"} {
		dir, splits := writeTestDataset(t, prefix)
		st, _ := blob.NewDir(dir)
		fromStore, err := Open(ctx, st, prefix)
		if err != nil {
			t.Fatalf("prefix %q: Open: %v", prefix, err)
		}
		fromDir, err := OpenDir(filepath.Join(dir, filepath.FromSlash(prefix)))
		if err != nil {
			t.Fatalf("prefix %q: OpenDir: %v", prefix, err)
		}
		raw, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(prefix), MetaFile))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(raw)
		for _, ds := range []*Dataset{fromStore, fromDir} {
			if got, want := ds.Digest(), hex.EncodeToString(sum[:]); got != want {
				t.Errorf("Digest = %s, want sha256(meta.json) = %s", got, want)
			}
			for name, want := range splits {
				got, err := ds.Split(name)
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Errorf("Split(%s) = %v, %v; want %v", name, got, err, want)
				}
				if n := ds.Meta.Splits[name].Tokens; n != int64(len(want)) {
					t.Errorf("meta tokens of %s = %d, want %d", name, n, len(want))
				}
			}
			if ds.Meta.Splits[Train].Documents != 2 {
				t.Errorf("train documents = %d, want 2", ds.Meta.Splits[Train].Documents)
			}
			if _, err := ds.Split("holdout"); err == nil {
				t.Error("Split(holdout) of a dataset without it: no error")
			}
		}
	}
}

// The token files are nanoGPT's: flat little-endian uint16, nothing else.
func TestTokenFileLayout(t *testing.T) {
	dir := t.TempDir()
	st, _ := blob.NewDir(dir)
	splits := map[string][]uint16{Train: {0x0102, 50256, 0xc400, 1}, Val: {50256}}
	meta := Meta{Tokenizer: GPT2Tokenizer, Vocab: 50257, EOT: 50256}
	if _, err := Write(context.Background(), st, "", meta, splits, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "train.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{0x02, 0x01, 0x50, 0xc4, 0x00, 0xc4, 0x01, 0x00}; string(b) != string(want) {
		t.Fatalf("train.bin = % x, want % x", b, want)
	}
	got, err := ReadTokens(strings.NewReader(string(b)))
	if err != nil || !reflect.DeepEqual(got, splits[Train]) {
		t.Errorf("ReadTokens = %v, %v; want %v", got, err, splits[Train])
	}
	if _, err := ReadTokens(strings.NewReader("abc")); err == nil {
		t.Error("ReadTokens of 3 bytes: no error")
	}
	// Write refuses ids outside the vocabulary.
	splits[Val] = []uint16{50257}
	_, err = Write(context.Background(), st, "bad", meta, splits, nil)
	var ve *VocabError
	if !errors.As(err, &ve) || ve.Split != Val || ve.ID != 50257 {
		t.Errorf("Write with id 50257 = %v, want a VocabError in val", err)
	}
}

func TestOpenDetectsCorruption(t *testing.T) {
	tests := []struct {
		name    string
		damage  func(t *testing.T, dir string)
		what    string // VerifyError.What, or "" for a missing file
		file    string
		missing bool
	}{
		{"flipped byte", func(t *testing.T, dir string) { flipByte(t, filepath.Join(dir, "val.bin"), 3) }, "sha256", "val.bin", false},
		{"truncated to an odd size", func(t *testing.T, dir string) { truncate(t, filepath.Join(dir, "train.bin"), 1) }, "size", "train.bin", false},
		{"truncated by one token", func(t *testing.T, dir string) { truncate(t, filepath.Join(dir, "test.bin"), 2) }, "tokens", "test.bin", false},
		{"missing meta", func(t *testing.T, dir string) { remove(t, filepath.Join(dir, MetaFile)) }, "", MetaFile, true},
		{"missing split", func(t *testing.T, dir string) { remove(t, filepath.Join(dir, "val.bin")) }, "", "val.bin", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, _ := writeTestDataset(t, "")
			tt.damage(t, dir)
			st, _ := blob.NewDir(dir)
			_, errStore := Open(context.Background(), st, "")
			_, errDir := OpenDir(dir)
			for _, err := range []error{errStore, errDir} {
				if err == nil {
					t.Fatal("no error")
				}
				if !strings.Contains(err.Error(), tt.file) {
					t.Errorf("error %q does not name %s", err, tt.file)
				}
				if tt.missing {
					if !errors.Is(err, ErrMissing) {
						t.Errorf("error %q does not wrap ErrMissing", err)
					}
					continue
				}
				var ve *VerifyError
				if !errors.As(err, &ve) || ve.What != tt.what {
					t.Fatalf("error %q: want a *VerifyError about %s", err, tt.what)
				}
				if ve.Expected == "" || ve.Actual == "" || ve.Expected == ve.Actual ||
					!strings.Contains(err.Error(), ve.Expected) || !strings.Contains(err.Error(), ve.Actual) {
					t.Errorf("error %q: want distinct expected and actual values in the message", err)
				}
			}
		})
	}
}

// A wrong sha256 is reported with both digests, the expected one from meta.json.
func TestVerifyErrorValues(t *testing.T) {
	dir, _ := writeTestDataset(t, "")
	p := filepath.Join(dir, "val.bin")
	flipByte(t, p, 0)
	b, _ := os.ReadFile(p)
	sum := sha256.Sum256(b)
	_, err := OpenDir(dir)
	var ve *VerifyError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v: want *VerifyError", err)
	}
	orig, _ := writeTestDataset(t, "")
	ds, err2 := OpenDir(orig)
	if err2 != nil {
		t.Fatal(err2)
	}
	if ve.Actual != hex.EncodeToString(sum[:]) || ve.Expected != ds.Meta.Splits[Val].SHA256 {
		t.Errorf("VerifyError = %+v; want expected %s, actual %x", ve, ds.Meta.Splits[Val].SHA256, sum)
	}
}

func TestOpenRejectsBadMeta(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(m *Meta)
		field string
	}{
		{"format", func(m *Meta) { m.Format = 2 }, "format"},
		{"vocab", func(m *Meta) { m.Vocab = 70000 }, "vocab"},
		{"eot", func(m *Meta) { m.EOT = 257 }, "eot"},
		{"tokenizer name", func(m *Meta) { m.Tokenizer = "sentencepiece" }, "tokenizer"},
		{"tokenizer shape", func(m *Meta) { m.Tokenizer = GPT2Tokenizer }, "tokenizer"},
		{"no val", func(m *Meta) { delete(m.Splits, Val) }, "splits"},
		{"unknown split", func(m *Meta) { m.Splits["extra"] = m.Splits[Test] }, "splits"},
		{"file escapes", func(m *Meta) { s := m.Splits[Test]; s.File = "../test.bin"; m.Splits[Test] = s }, "splits.test.file"},
		{"sha256", func(m *Meta) { s := m.Splits[Test]; s.SHA256 = "abc"; m.Splits[Test] = s }, "splits.test.sha256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, _ := writeTestDataset(t, "")
			ds, err := OpenDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			m := ds.Meta
			m.Splits = map[string]SplitMeta{}
			for k, v := range ds.Meta.Splits {
				m.Splits[k] = v
			}
			tt.edit(&m)
			raw, err := MarshalMeta(&m)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, MetaFile), raw, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = OpenDir(dir)
			var fe *fielderr.Error
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("error %v: want a *fielderr.Error on %s", err, tt.field)
			}
		})
	}
}

func TestCheckVocab(t *testing.T) {
	dir, _ := writeTestDataset(t, "")
	ds, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		vocab int
		want  *VocabError
	}{
		{257, nil},
		{65536, nil},
		{256, &VocabError{Split: Train, Index: 3, ID: 256, Vocab: 256}},
		{201, &VocabError{Split: Train, Index: 3, ID: 256, Vocab: 201}},
		{200, &VocabError{Split: Train, Index: 1, ID: 200, Vocab: 200}},
		{105, &VocabError{Split: Train, Index: 1, ID: 200, Vocab: 105}},
		{100, &VocabError{Split: Train, Index: 0, ID: 104, Vocab: 100}},
	}
	for _, tt := range tests {
		err := ds.CheckVocab(tt.vocab)
		if tt.want == nil {
			if err != nil {
				t.Errorf("CheckVocab(%d) = %v, want nil", tt.vocab, err)
			}
			continue
		}
		var ve *VocabError
		if !errors.As(err, &ve) || *ve != *tt.want {
			t.Errorf("CheckVocab(%d) = %v, want %v", tt.vocab, err, tt.want)
		}
	}
	// With train below the vocabulary, the first id out of range is val's.
	ds.splits[Train] = []uint16{1, 2}
	ds.splits[Val] = []uint16{1, 300, 2}
	var ve *VocabError
	if err := ds.CheckVocab(257); !errors.As(err, &ve) || *ve != (VocabError{Split: Val, Index: 1, ID: 300, Vocab: 257}) {
		t.Errorf("CheckVocab(257) = %v, want val index 1 id 300", err)
	}
}

func flipByte(t *testing.T, p string, i int) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[i] ^= 0x40
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func truncate(t *testing.T, p string, by int64) {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, st.Size()-by); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, p string) {
	t.Helper()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
}
