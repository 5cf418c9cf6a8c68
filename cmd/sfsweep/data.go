package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/training/data"
)

// The data command prepares token datasets (package training/data): "data prepare" tokenises
// a folder of text, "data default" the offline default corpus (the Go source tree).

// dataSubcommands are the subcommands of "sfsweep data".
var dataSubcommands = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) error{
	"prepare": runDataPrepareCmd,
	"default": runDataDefaultCmd,
}

func runDataCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stderr, "Usage: sfsweep data <prepare|default> [flags]")
		fmt.Fprintln(stderr, "  prepare  tokenise a folder of text files into train/val/test token files and meta.json")
		fmt.Fprintln(stderr, "  default  prepare (or open from its cache) the default corpus, the Go toolchain's source tree")
		if len(args) == 0 {
			return &usageError{msg: "missing subcommand: prepare or default"}
		}
		return flag.ErrHelp
	}
	run, ok := dataSubcommands[args[0]]
	if !ok {
		return &usageError{msg: fmt.Sprintf("unknown subcommand %q: want prepare or default", args[0])}
	}
	return run(ctx, args[1:], stdout, stderr)
}

// fractionsFlag is the -split flag: three comma-separated fractions for train, val and test.
type fractionsFlag [3]float64

func (f *fractionsFlag) String() string {
	return fmt.Sprintf("%v,%v,%v", f[0], f[1], f[2])
}

func (f *fractionsFlag) Set(s string) error {
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return fmt.Errorf("want three fractions train,val,test, got %d", len(parts))
	}
	var fr [3]float64
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", p)
		}
		fr[i] = v
	}
	if err := data.CheckFractions(fr); err != nil {
		var fe *fielderr.Error
		if errors.As(err, &fe) {
			return errors.New(fe.Reason)
		}
		return err
	}
	*f = fr
	return nil
}

// flagOfDataField maps the fields of *fielderr.Error to the flags that set them.
var flagOfDataField = map[string]string{
	"src": "src", "tokenizer": "tokenizer", "fractions": "split", "extensions": "ext",
	"max_bytes": "max-bytes", "cache_dir": "out", "prefix": "out",
}

// asDataFlagError turns an option error of package data into a usage error naming the flag,
// its value and the reason; other errors pass through.
func asDataFlagError(err error) error {
	var fe *fielderr.Error
	if errors.As(err, &fe) {
		return flagError(flagOfDataField, fe.Field, fe.Value, fe.Reason, err)
	}
	return err
}

// checkTokenizerFlag reports an unknown -tokenizer before any work.
func checkTokenizerFlag(name string) error {
	for _, n := range data.TokenizerNames {
		if n == name {
			return nil
		}
	}
	return &usageError{msg: fmt.Sprintf("invalid value %q for flag -tokenizer: must be one of %s", name, strings.Join(data.TokenizerNames, ", "))}
}

// progressLine prints "label done / total MB (p%)" on one terminal line, rewritten in place
// whenever the whole percentage changes; finish ends the line.
type progressLine struct {
	w       io.Writer
	label   string
	last    int64
	started bool
}

func (p *progressLine) update(done, total int64) {
	pct := int64(100)
	if total > 0 {
		pct = done * 100 / total
	}
	if p.started && pct == p.last {
		return
	}
	p.started, p.last = true, pct
	fmt.Fprintf(p.w, "\r%s %.1f / %.1f MB (%d%%)", p.label, float64(done)/1e6, float64(total)/1e6, pct)
}

func (p *progressLine) finish() {
	if p.started {
		fmt.Fprintln(p.w)
	}
}

// dataSummary is the -json output of the data commands.
type dataSummary struct {
	Dir       string                  `json:"dir"`
	Digest    string                  `json:"digest"`
	Tokenizer string                  `json:"tokenizer"`
	Vocab     int                     `json:"vocab"`
	EOT       int                     `json:"eot"`
	Splits    map[string]splitSummary `json:"splits"`
	Source    string                  `json:"source"`
	Files     int                     `json:"files,omitempty"`
	Bytes     int64                   `json:"bytes,omitempty"`
	Skipped   []string                `json:"skipped,omitempty"`
	GoVersion string                  `json:"go_version,omitempty"`
	Cached    bool                    `json:"cached,omitempty"`
}

type splitSummary struct {
	Tokens    int64 `json:"tokens"`
	Documents int64 `json:"documents"`
}

func newDataSummary(dir string, ds *data.Dataset) *dataSummary {
	s := &dataSummary{Dir: dir, Digest: ds.Digest(), Tokenizer: ds.Meta.Tokenizer, Vocab: ds.Meta.Vocab,
		EOT: ds.Meta.EOT, Source: ds.Meta.Source, Splits: map[string]splitSummary{}}
	for name, sm := range ds.Meta.Splits {
		s.Splits[name] = splitSummary{Tokens: sm.Tokens, Documents: sm.Documents}
	}
	return s
}

func (s *dataSummary) print(w io.Writer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	fmt.Fprintf(w, "dataset    %s\n", s.Dir)
	fmt.Fprintf(w, "tokenizer  %s (vocab %d, eot %d)\n", s.Tokenizer, s.Vocab, s.EOT)
	if s.Files > 0 {
		fmt.Fprintf(w, "files      %d (%d bytes), %d skipped as not UTF-8 text\n", s.Files, s.Bytes, len(s.Skipped))
	}
	if s.Cached {
		fmt.Fprintf(w, "cached     yes (Go %s)\n", s.GoVersion)
	}
	for _, name := range data.SplitNames {
		if sp, ok := s.Splits[name]; ok {
			fmt.Fprintf(w, "%-10s %d tokens, %d documents\n", name, sp.Tokens, sp.Documents)
		}
	}
	fmt.Fprintf(w, "digest     %s\n", s.Digest)
	return nil
}

func runDataPrepareCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("data prepare", stderr)
	src := fs.String("src", "", "folder of text files to tokenise (walked recursively; names starting with '.' skipped)")
	out := fs.String("out", "", "output folder for train.bin, val.bin, test.bin and meta.json")
	tok := fs.String("tokenizer", data.ByteTokenizer, "tokenizer: "+strings.Join(data.TokenizerNames, " or "))
	split := fractionsFlag(data.DefaultFractions)
	fs.Var(&split, "split", "train,val,test fractions of documents, each in (0, 1), summing to 1")
	ext := fs.String("ext", strings.Join(data.DefaultExtensions, ","), "comma-separated file extensions to read (.jsonl: one JSON object with a \"text\" field per line)")
	maxBytes := fs.Int64("max-bytes", 0, "read only the first files in sorted order whose sizes sum to at most this (0: all)")
	asJSON := fs.Bool("json", false, "print a machine-readable JSON summary to stdout")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *src == "" {
		return &usageError{msg: "flag -src is required"}
	}
	if *out == "" {
		return &usageError{msg: "flag -out is required"}
	}
	if err := checkTokenizerFlag(*tok); err != nil {
		return err
	}
	var exts []string
	for _, e := range strings.Split(*ext, ",") {
		if e = strings.TrimSpace(e); e != "" {
			exts = append(exts, e)
		}
	}
	if len(exts) == 0 {
		return &usageError{msg: fmt.Sprintf("invalid value %q for flag -ext: no extensions", *ext)}
	}
	st := &lazyDir{root: *out}
	pl := &progressLine{w: stderr, label: "data prepare: tokenising"}
	p, err := data.Prepare(ctx, data.PrepareOptions{
		Src: *src, Store: st, Tokenizer: *tok, Extensions: exts, Fractions: split, MaxBytes: *maxBytes,
		Progress: pl.update,
	})
	pl.finish()
	if err != nil {
		return asDataFlagError(err)
	}
	s := newDataSummary(*out, p.Dataset)
	s.Files, s.Bytes, s.Skipped = p.Files, p.Bytes, p.Skipped
	return s.print(stdout, *asJSON)
}

func runDataDefaultCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("data default", stderr)
	tok := fs.String("tokenizer", data.ByteTokenizer, "tokenizer: "+strings.Join(data.TokenizerNames, " or "))
	out := fs.String("out", ".sfsweep/data", "cache folder; the corpus lands in a sub-folder named by Go version, tokenizer and cap")
	maxBytes := fs.Int64("max-bytes", data.DefaultCorpusBytes, "size cap of the Go source files read, in bytes")
	asJSON := fs.Bool("json", false, "print a machine-readable JSON summary to stdout")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkTokenizerFlag(*tok); err != nil {
		return err
	}
	if *maxBytes < 1 {
		return &usageError{msg: fmt.Sprintf("invalid value %d for flag -max-bytes: must be ≥ 1", *maxBytes)}
	}
	if *out == "" {
		return &usageError{msg: "invalid value \"\" for flag -out: a cache folder is required"}
	}
	pl := &progressLine{w: stderr, label: "data default: tokenising the Go source tree"}
	c, err := data.LoadCorpus(ctx, data.CorpusOptions{Tokenizer: *tok, CacheDir: *out, MaxBytes: *maxBytes, Progress: pl.update})
	pl.finish()
	if err != nil {
		return asDataFlagError(err)
	}
	s := newDataSummary(c.Dir, c.Dataset)
	s.GoVersion, s.Cached = c.GoVersion, c.Cached
	return s.print(stdout, *asJSON)
}

// lazyDir is a blob.Dir created on first use, so a preparation refused for bad input leaves
// no output folder behind.
type lazyDir struct {
	root string
	dir  *blob.Dir
}

func (l *lazyDir) get() (*blob.Dir, error) {
	if l.dir == nil {
		d, err := blob.NewDir(l.root)
		if err != nil {
			return nil, fmt.Errorf("output folder: %w", err)
		}
		l.dir = d
	}
	return l.dir, nil
}

func (l *lazyDir) Put(ctx context.Context, key string, b []byte) error {
	d, err := l.get()
	if err != nil {
		return err
	}
	return d.Put(ctx, key, b)
}

func (l *lazyDir) Get(ctx context.Context, key string) ([]byte, error) {
	d, err := l.get()
	if err != nil {
		return nil, err
	}
	return d.Get(ctx, key)
}

func (l *lazyDir) List(ctx context.Context, prefix string) ([]string, error) {
	d, err := l.get()
	if err != nil {
		return nil, err
	}
	return d.List(ctx, prefix)
}

func (l *lazyDir) Delete(ctx context.Context, key string) error {
	d, err := l.get()
	if err != nil {
		return err
	}
	return d.Delete(ctx, key)
}
