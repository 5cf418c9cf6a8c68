// Package data is the token data of training runs: the on-disk format shared with nanoGPT and
// llm-baselines (flat little-endian uint16 token files train.bin, val.bin and test.bin beside a
// meta.json), opening and verifying datasets from an object store or a local folder, the
// byte-level and GPT-2 tokenizers, preparing a dataset from a folder of text, the offline
// default corpus (the Go toolchain's own source tree), and deterministic, seekable batching.
//
// A dataset is identified by the SHA-256 of its meta.json bytes ([Dataset.Digest]); since
// meta.json records the SHA-256 of every split file, the digest covers the tokens too.
package data

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"unsafe"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/internal/blob"
)

// FormatVersion is the version of meta.json this package writes and reads.
const FormatVersion = 1

// MetaFile is the name of the metadata object of a dataset.
const MetaFile = "meta.json"

// Names of the splits.
const (
	Train = "train"
	Val   = "val"
	Test  = "test"
)

// SplitNames are the splits a dataset may hold, in the order they are written and checked.
var SplitNames = []string{Train, Val, Test}

// Meta is the content of meta.json.
type Meta struct {
	Format    int                  `json:"format"`    // FormatVersion
	Tokenizer string               `json:"tokenizer"` // "byte" or "gpt2"
	Vocab     int                  `json:"vocab"`     // number of token ids; every id is < Vocab
	EOT       int                  `json:"eot"`       // the end-of-text id that separates documents
	Splits    map[string]SplitMeta `json:"splits"`    // by split name: train and val required, test optional
	Source    string               `json:"source"`    // free text: where the tokens came from
}

// SplitMeta describes one split file.
type SplitMeta struct {
	File      string `json:"file"`                // object name relative to the dataset, e.g. "train.bin"
	Tokens    int64  `json:"tokens"`              // number of uint16 tokens in the file
	SHA256    string `json:"sha256"`              // hex SHA-256 of the file bytes
	Documents int64  `json:"documents,omitempty"` // number of documents, where known
}

// Validate reports the first field of m that is out of range, as a *fielderr.Error.
func (m *Meta) Validate() error {
	if m.Format != FormatVersion {
		return &fielderr.Error{Field: "format", Value: m.Format, Reason: "must be " + strconv.Itoa(FormatVersion)}
	}
	if m.Vocab < 1 || m.Vocab > 1<<16 {
		return &fielderr.Error{Field: "vocab", Value: m.Vocab, Reason: "must be in [1, 65536] (tokens are uint16)"}
	}
	if m.EOT < 0 || m.EOT >= m.Vocab {
		return &fielderr.Error{Field: "eot", Value: m.EOT, Reason: fmt.Sprintf("must be in [0, vocab = %d)", m.Vocab)}
	}
	if shape, ok := tokenizerShapes[m.Tokenizer]; !ok {
		return &fielderr.Error{Field: "tokenizer", Value: fmt.Sprintf("%q", m.Tokenizer), Reason: fmt.Sprintf("unknown tokenizer (want one of %v)", TokenizerNames)}
	} else if shape != [2]int{m.Vocab, m.EOT} {
		return &fielderr.Error{Field: "tokenizer", Value: m.Tokenizer, Reason: fmt.Sprintf("has vocab %d and eot %d, meta.json says vocab %d and eot %d",
			shape[0], shape[1], m.Vocab, m.EOT)}
	}
	for _, name := range []string{Train, Val} {
		if _, ok := m.Splits[name]; !ok {
			return &fielderr.Error{Field: "splits", Value: name, Reason: "required split is missing"}
		}
	}
	for _, name := range sortedKeys(m.Splits) {
		s := m.Splits[name]
		field := "splits." + name
		switch {
		case !isSplitName(name):
			return &fielderr.Error{Field: "splits", Value: name, Reason: fmt.Sprintf("unknown split (want one of %v)", SplitNames)}
		case blob.ValidKey(s.File) != nil || path.Base(s.File) != s.File:
			return &fielderr.Error{Field: field + ".file", Value: s.File, Reason: "must be a plain file name"}
		case s.Tokens < 0:
			return &fielderr.Error{Field: field + ".tokens", Value: s.Tokens, Reason: "must be ≥ 0"}
		case len(s.SHA256) != 64 || !isLowerHex(s.SHA256):
			return &fielderr.Error{Field: field + ".sha256", Value: s.SHA256, Reason: "must be 64 lower-case hex digits"}
		case s.Documents < 0:
			return &fielderr.Error{Field: field + ".documents", Value: s.Documents, Reason: "must be ≥ 0"}
		}
	}
	return nil
}

// VerifyError reports a split file that does not match meta.json: what differs (sha256, size
// or tokens), the value meta.json expects and the value found.
type VerifyError struct {
	File     string // key or path of the split file
	What     string // "sha256", "size" or "tokens"
	Expected string
	Actual   string
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("data: %s: %s mismatch: expected %s, actual %s", e.File, e.What, e.Expected, e.Actual)
}

// ErrMissing is wrapped by the error of Open and OpenDir when meta.json or a split file does
// not exist.
var ErrMissing = errors.New("missing file")

// VocabError reports the first token id that does not fit a vocabulary.
type VocabError struct {
	Split string
	Index int64 // position of the token in its split
	ID    int
	Vocab int
}

func (e *VocabError) Error() string {
	return fmt.Sprintf("data: split %s: token %d at index %d is ≥ vocab %d", e.Split, e.ID, e.Index, e.Vocab)
}

// Dataset is an opened, verified dataset with every split in memory.
type Dataset struct {
	Meta   Meta
	digest string
	splits map[string][]uint16
}

// Digest returns the hex SHA-256 of the dataset's meta.json bytes: its identity.
func (d *Dataset) Digest() string { return d.digest }

// Split returns the tokens of the named split; the slice is shared, not copied.
func (d *Dataset) Split(name string) ([]uint16, error) {
	t, ok := d.splits[name]
	if !ok {
		return nil, fmt.Errorf("data: dataset %.12s has no split %q", d.digest, name)
	}
	return t, nil
}

// CheckVocab reports, as a *VocabError, the first token id ≥ v, scanning the splits in the
// order of SplitNames.
func (d *Dataset) CheckVocab(v int) error {
	for _, name := range SplitNames {
		for i, id := range d.splits[name] {
			if int(id) >= v {
				return &VocabError{Split: name, Index: int64(i), ID: int(id), Vocab: v}
			}
		}
	}
	return nil
}

// Open opens the dataset whose meta.json is under prefix in st ("" for the store's root), and
// verifies every split against it.
func Open(ctx context.Context, st blob.Store, prefix string) (*Dataset, error) {
	return open(func(name string) ([]byte, bool, error) {
		key := path.Join(prefix, name)
		b, err := st.Get(ctx, key)
		if errors.Is(err, blob.ErrNotFound) {
			return nil, false, fmt.Errorf("data: %s: %w: %w", key, ErrMissing, err)
		}
		if err != nil {
			return nil, false, fmt.Errorf("data: %s: %w", key, err)
		}
		return b, false, nil
	}, func(name string) string { return path.Join(prefix, name) })
}

// OpenDir opens the dataset in a local directory (meta.json beside the split files) and
// verifies every split against it. On Unix the split files are mapped into memory, not
// read: a split takes no memory of the process's own (workers on one machine share the
// page cache's copy), and a corpus larger than memory can be trained on.
func OpenDir(dir string) (*Dataset, error) {
	return open(func(name string) ([]byte, bool, error) {
		p := filepath.Join(dir, name)
		b, mapped, err := readFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, fmt.Errorf("data: %s: %w: %w", p, ErrMissing, err)
		}
		if err != nil {
			return nil, false, fmt.Errorf("data: %w", err)
		}
		return b, mapped, nil
	}, func(name string) string { return filepath.Join(dir, name) })
}

// open reads meta.json and every split through get, which says whether the bytes it
// returns are a read-only mapping of the file; where names a file in errors.
func open(get func(name string) (b []byte, mapped bool, err error), where func(name string) string) (*Dataset, error) {
	raw, _, err := get(MetaFile)
	if err != nil {
		return nil, err
	}
	var m Meta
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("data: %s: %w", where(MetaFile), err)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", where(MetaFile), err)
	}
	sum := sha256.Sum256(raw)
	d := &Dataset{Meta: m, digest: hex.EncodeToString(sum[:]), splits: map[string][]uint16{}}
	for _, name := range SplitNames {
		s, ok := m.Splits[name]
		if !ok {
			continue
		}
		b, mapped, err := get(s.File)
		if err != nil {
			return nil, err
		}
		toks, err := verify(where(s.File), s, b, mapped)
		if err != nil {
			return nil, err
		}
		d.splits[name] = toks
	}
	return d, nil
}

// verify checks the bytes b of a split file against s and returns its tokens.
func verify(file string, s SplitMeta, b []byte, mapped bool) ([]uint16, error) {
	if len(b)%2 != 0 {
		return nil, &VerifyError{file, "size", "a whole number of uint16 (an even number of bytes)", fmt.Sprintf("%d bytes", len(b))}
	}
	if n := int64(len(b) / 2); n != s.Tokens {
		return nil, &VerifyError{file, "tokens", strconv.FormatInt(s.Tokens, 10), strconv.FormatInt(n, 10)}
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != s.SHA256 {
		return nil, &VerifyError{file, "sha256", s.SHA256, got}
	}
	return tokensOf(b, mapped), nil
}

// nativeLittleEndian: the machine stores a uint16 as the token files do.
var nativeLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// tokensOf returns the tokens of a split file's bytes: the bytes themselves, viewed as
// uint16, where they are a read-only mapping of the file (page-aligned, never written) and
// the machine is little-endian; else a decoded copy.
func tokensOf(b []byte, mapped bool) []uint16 {
	if mapped && nativeLittleEndian && len(b) >= 2 {
		return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/2)
	}
	return decodeTokens(b)
}

// Write writes a dataset under prefix in st: one file "<split>.bin" per entry of splits, then
// meta.json, so a reader never finds a meta.json whose splits are not all there. Token ids
// must be < meta.Vocab. meta's
// Format and Splits are filled in (Documents is taken from docs where given); the returned
// dataset shares the token slices.
func Write(ctx context.Context, st blob.Store, prefix string, meta Meta, splits map[string][]uint16, docs map[string]int64) (*Dataset, error) {
	meta.Format = FormatVersion
	meta.Splits = map[string]SplitMeta{}
	files := map[string][]byte{}
	for name, toks := range splits {
		b := encodeTokens(toks)
		files[name] = b
		sum := sha256.Sum256(b)
		meta.Splits[name] = SplitMeta{File: name + ".bin", Tokens: int64(len(toks)), SHA256: hex.EncodeToString(sum[:]), Documents: docs[name]}
	}
	if err := meta.Validate(); err != nil {
		return nil, err
	}
	ds := &Dataset{Meta: meta, splits: splits}
	if err := ds.CheckVocab(meta.Vocab); err != nil {
		return nil, err
	}
	raw, err := MarshalMeta(&meta)
	if err != nil {
		return nil, err
	}
	for _, name := range sortedKeys(splits) {
		key := path.Join(prefix, meta.Splits[name].File)
		if err := st.Put(ctx, key, files[name]); err != nil {
			return nil, fmt.Errorf("data: write %s: %w", key, err)
		}
	}
	if err := st.Put(ctx, path.Join(prefix, MetaFile), raw); err != nil {
		return nil, fmt.Errorf("data: write %s: %w", path.Join(prefix, MetaFile), err)
	}
	sum := sha256.Sum256(raw)
	ds.digest = hex.EncodeToString(sum[:])
	return ds, nil
}

// MarshalMeta returns the canonical meta.json bytes of m: indented JSON with sorted split
// names and a final newline, so the same dataset always has the same digest.
func MarshalMeta(m *Meta) ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("data: encode meta.json: %w", err)
	}
	return append(b, '\n'), nil
}

// ReadTokens decodes a flat little-endian uint16 token stream, as nanoGPT writes it.
func ReadTokens(r io.Reader) ([]uint16, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("data: read tokens: %w", err)
	}
	if len(b)%2 != 0 {
		return nil, fmt.Errorf("data: read tokens: %d bytes is not a whole number of uint16", len(b))
	}
	return decodeTokens(b), nil
}

func decodeTokens(b []byte) []uint16 {
	t := make([]uint16, len(b)/2)
	for i := range t {
		t[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return t
}

func encodeTokens(t []uint16) []byte {
	b := make([]byte, 2*len(t))
	for i, v := range t {
		binary.LittleEndian.PutUint16(b[2*i:], v)
	}
	return b
}

func isSplitName(s string) bool {
	for _, n := range SplitNames {
		if s == n {
			return true
		}
	}
	return false
}

func isLowerHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
