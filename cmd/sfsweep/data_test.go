package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/training/data"
)

// textFolder writes n small text files and a JSONL file into a fresh folder.
func textFolder(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	for i := range n {
		body := fmt.Sprintf("note %d: %s\n", i, strings.Repeat("schedule-free ", i%5+1))
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("n%02d.txt", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	jsonl := "{\"text\": \"one\"}\n{\"text\": \"two\"}\n"
	if err := os.WriteFile(filepath.Join(dir, "lines.jsonl"), []byte(jsonl), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestDataPrepareCommand(t *testing.T) {
	src := textFolder(t, 20)
	out := filepath.Join(t.TempDir(), "ds")
	code, stdout, stderr := run(t, "data", "prepare", "-src", src, "-out", out, "-tokenizer", "gpt2", "-split", "0.8,0.1,0.1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	ds, err := data.OpenDir(out)
	if err != nil {
		t.Fatalf("prepared dataset does not open: %v", err)
	}
	if !strings.Contains(stdout, ds.Digest()) || !strings.Contains(stdout, fmt.Sprintf("%d tokens", ds.Meta.Splits["train"].Tokens)) {
		t.Errorf("summary lacks the digest or the train tokens:\n%s", stdout)
	}
	if !strings.Contains(stderr, "(100%)") {
		t.Errorf("no final progress on stderr: %q", stderr)
	}
	if ds.Meta.Tokenizer != "gpt2" || ds.Meta.Splits["train"].Documents+ds.Meta.Splits["val"].Documents+ds.Meta.Splits["test"].Documents != 22 {
		t.Errorf("meta = %+v, want gpt2 and 22 documents", ds.Meta)
	}

	// -json, into another folder: the same input gives the same dataset.
	out2 := filepath.Join(t.TempDir(), "ds")
	code, stdout, stderr = run(t, "data", "prepare", "-src", src, "-out", out2, "-tokenizer", "gpt2", "-split", "0.8,0.1,0.1", "-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var s dataSummary
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("-json output: %v\n%s", err, stdout)
	}
	if s.Digest != ds.Digest() || s.Files != 21 || s.Splits["val"].Tokens != ds.Meta.Splits["val"].Tokens || s.Vocab != 50257 {
		t.Errorf("JSON summary %+v does not match the first run (digest %s)", s, ds.Digest())
	}
}

func TestDataPrepareBadInput(t *testing.T) {
	src := textFolder(t, 5)
	empty := t.TempDir()
	out := filepath.Join(t.TempDir(), "out")
	tests := []struct {
		name string
		args []string
		want []string // substrings of stderr
	}{
		{"no subcommand", []string{"data"}, []string{"missing subcommand"}},
		{"unknown subcommand", []string{"data", "import"}, []string{`"import"`}},
		{"no src", []string{"data", "prepare", "-out", out}, []string{"-src", "required"}},
		{"no out", []string{"data", "prepare", "-src", src}, []string{"-out", "required"}},
		{"missing src", []string{"data", "prepare", "-src", filepath.Join(empty, "nope"), "-out", out}, []string{"-src", "nope", "cannot read"}},
		{"empty folder", []string{"data", "prepare", "-src", empty, "-out", out}, []string{"-src", empty, "no files"}},
		{"unknown tokenizer", []string{"data", "prepare", "-src", src, "-out", out, "-tokenizer", "bpe"}, []string{"-tokenizer", `"bpe"`, "byte, gpt2"}},
		{"two fractions", []string{"data", "prepare", "-src", src, "-out", out, "-split", "0.9,0.1"}, []string{"-split", "0.9,0.1", "three fractions"}},
		{"fractions sum", []string{"data", "prepare", "-src", src, "-out", out, "-split", "0.5,0.2,0.2"}, []string{"-split", "sum to 0.9"}},
		{"zero fraction", []string{"data", "prepare", "-src", src, "-out", out, "-split", "0.9,0,0.1"}, []string{"-split", "val fraction 0 must be in (0, 1)"}},
		{"not a number", []string{"data", "prepare", "-src", src, "-out", out, "-split", "a,b,c"}, []string{"-split", `"a" is not a number`}},
		{"bad extension", []string{"data", "prepare", "-src", src, "-out", out, "-ext", "txt"}, []string{"-ext", `"txt"`}},
		{"negative cap", []string{"data", "prepare", "-src", src, "-out", out, "-max-bytes", "-1"}, []string{"-max-bytes", "-1"}},
		{"default: unknown tokenizer", []string{"data", "default", "-tokenizer", "words", "-out", out}, []string{"-tokenizer", `"words"`}},
		{"default: cap", []string{"data", "default", "-max-bytes", "0", "-out", out}, []string{"-max-bytes", "≥ 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := run(t, tt.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2; stderr %q", code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not contain %q", stderr, w)
				}
			}
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("bad input created the output folder %s (stat: %v)", out, err)
	}
}

func TestDataDefaultCommand(t *testing.T) {
	cache := t.TempDir()
	args := []string{"data", "default", "-tokenizer", "byte", "-out", cache, "-max-bytes", "200000", "-json"}
	code, stdout, stderr := run(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var first dataSummary
	if err := json.Unmarshal([]byte(stdout), &first); err != nil {
		t.Fatal(err)
	}
	if first.Cached || !strings.HasPrefix(first.Dir, cache) || first.GoVersion == "" || first.Splits["test"].Tokens == 0 {
		t.Errorf("first run: %+v; want a fresh corpus in %s with three splits", first, cache)
	}
	if !strings.Contains(stderr, "(100%)") {
		t.Errorf("no progress on stderr: %q", stderr)
	}
	code, stdout, stderr = run(t, args...)
	if code != 0 {
		t.Fatalf("second run: exit %d: %s", code, stderr)
	}
	var second dataSummary
	if err := json.Unmarshal([]byte(stdout), &second); err != nil {
		t.Fatal(err)
	}
	if !second.Cached || second.Digest != first.Digest || stderr != "" {
		t.Errorf("second run: cached %v, digest %s (first %s), stderr %q; want the cache, silently", second.Cached, second.Digest, first.Digest, stderr)
	}
	ds, err := data.OpenDir(first.Dir)
	if err != nil || ds.Digest() != first.Digest {
		t.Errorf("OpenDir(%s) = %v; want digest %s", first.Dir, err, first.Digest)
	}
}
