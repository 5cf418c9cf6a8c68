package data

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tiktoken-go/tokenizer/codec"

	"github.com/sfsweep/sfsweep/fielderr"
)

// GPT-2 token ids from tiktoken's own test suite (tests/test_encoding.py and
// tests/test_simple_public.py of openai/tiktoken, encoding "gpt2"), the widely quoted
// "Hello world" and "Hello, world!", and two whitespace cases that follow from the pattern.
var gpt2Known = []struct {
	text string
	ids  []uint16
}{
	{"Hello world", []uint16{15496, 995}},
	{"hello world", []uint16{31373, 995}},
	{"Hello, world!", []uint16{15496, 11, 995, 0}},
	{"0", []uint16{15}},
	{"00", []uint16{405}},
	{"000", []uint16{830}},
	{"0000", []uint16{2388}},
	{"00000", []uint16{20483}},
	{"000000", []uint16{10535}},
	{"0000000", []uint16{24598}},
	{"00000000", []uint16{8269}},
	{"000000000", []uint16{10535, 830}},
	{"0000000000", []uint16{8269, 405}},
	{"00000000000", []uint16{8269, 830}},
	{"000000000000", []uint16{8269, 2388}},
	{"0000000000000", []uint16{8269, 20483}},
	{"00000000000000", []uint16{8269, 10535}},
	{"000000000000000", []uint16{8269, 24598}},
	{"0000000000000000", []uint16{25645}},
	{"00000000000000000", []uint16{8269, 10535, 830}},
	{"", nil},
	// A run of spaces keeps its last space for the next word (the \s+(?!\S) rule): " " is 220.
	{"hello  world", []uint16{31373, 220, 995}},
	// "hello " + EOT is [31373, 220, 50256] with the special token allowed; as ordinary
	// text the trailing space is still 220.
	{"hello ", []uint16{31373, 220}},
}

func TestGPT2KnownIDs(t *testing.T) {
	tok, err := NewTokenizer(GPT2Tokenizer)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Vocab() != 50257 || tok.EOT() != 50256 || tok.Name() != "gpt2" {
		t.Fatalf("gpt2: vocab %d, eot %d, name %q; want 50257, 50256, gpt2", tok.Vocab(), tok.EOT(), tok.Name())
	}
	for _, tt := range gpt2Known {
		got, err := tok.Encode(nil, tt.text)
		if err != nil || !reflect.DeepEqual(got, tt.ids) {
			t.Errorf("Encode(%q) = %v, %v; want %v", tt.text, got, err, tt.ids)
		}
		s, err := tok.Decode(tt.ids)
		if err != nil || s != tt.text {
			t.Errorf("Decode(%v) = %q, %v; want %q", tt.ids, s, err, tt.text)
		}
	}
	// Encode appends.
	got, _ := tok.Encode([]uint16{7}, "hello world")
	if !reflect.DeepEqual(got, []uint16{7, 31373, 995}) {
		t.Errorf("Encode(dst=[7], hello world) = %v, want [7 31373 995]", got)
	}
	// EOT decodes as its text; "<|endoftext|>" in text is ordinary text, never EOT.
	s, err := tok.Decode([]uint16{31373, 220, 50256})
	if err != nil || s != "hello "+EOTText {
		t.Errorf("Decode([31373 220 50256]) = %q, %v", s, err)
	}
	ids, _ := tok.Encode(nil, EOTText)
	for _, id := range ids {
		if id == tok.EOT() {
			t.Errorf("Encode(%q) = %v contains EOT", EOTText, ids)
		}
	}
	if _, err := tok.Decode([]uint16{50257}); err == nil {
		t.Error("Decode([50257]): no error")
	}
}

// roundTripTexts are varied texts: unicode of several scripts, emoji with modifiers,
// combining marks, whitespace runs of every kind, contractions, digits, code.
var roundTripTexts = []string{
	"hello", "hello ", "hello  ", " hello", " hello ", " hello  ", "hello world",
	"请考试我的软件！12345",
	"Grüße aus Köln — naïve café, ½ ∑ x² ≤ ∞",
	"Привет, мир! Γειά σου Κόσμε. שלום עולם. مرحبا بالعالم",
	"👍🏽 family: 👨‍👩‍👧‍👦 flags 🇫🇷🇯🇵",
	"e\u0301 a\u0308 combining",
	"tabs\t\tand\nnewlines\n\n\n   \t \n  spaces     end   ",
	"\r\n\r\nwindows\r\nlines\r\n",
	"I'm, you're, it's, we've, they'll, he'd, 'quoted'",
	"func main() {\n\tfmt.Println(\"hi\") // comment\n}\n",
	"3.14159 1e-9 0x1F 1,000,000",
	"\u00a0non-breaking\u2003em space\u3000ideographic",
	strings.Repeat("a", 1000) + strings.Repeat(" ", 300) + strings.Repeat("€", 200),
	"<|endoftext|> as plain text",
}

func TestTokenizerRoundTrip(t *testing.T) {
	for _, name := range TokenizerNames {
		tok, err := NewTokenizer(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range roundTripTexts {
			ids, err := tok.Encode(nil, s)
			if err != nil {
				t.Fatalf("%s: Encode(%q): %v", name, s, err)
			}
			for _, id := range ids {
				if int(id) >= tok.Vocab() || id == tok.EOT() {
					t.Fatalf("%s: Encode(%q) produced id %d (vocab %d, eot %d)", name, s, id, tok.Vocab(), tok.EOT())
				}
			}
			got, err := tok.Decode(ids)
			if err != nil || got != s {
				t.Errorf("%s: Decode(Encode(%q)) = %q, %v", name, s, got, err)
			}
			if name == GPT2Tokenizer && len(s) > 8 && len(ids) >= len(s) {
				t.Errorf("gpt2: %q: %d tokens for %d bytes, want compression", s, len(ids), len(s))
			}
		}
	}
}

func TestByteTokenizer(t *testing.T) {
	tok, err := NewTokenizer(ByteTokenizer)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Vocab() != 257 || tok.EOT() != 256 || tok.Name() != "byte" {
		t.Fatalf("byte: vocab %d, eot %d, name %q", tok.Vocab(), tok.EOT(), tok.Name())
	}
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	ids, _ := tok.Encode(nil, string(all))
	for i, id := range ids {
		if id != uint16(i) {
			t.Fatalf("Encode(byte %d) = %d", i, id)
		}
	}
	if len(ids) != 256 {
		t.Fatalf("Encode of 256 bytes gave %d ids", len(ids))
	}
	s, err := tok.Decode(ids)
	if err != nil || s != string(all) {
		t.Errorf("Decode(Encode(all bytes)) differs: %v", err)
	}
	ids, _ = tok.Encode(nil, "é") // two UTF-8 bytes
	if !reflect.DeepEqual(ids, []uint16{0xc3, 0xa9}) {
		t.Errorf("Encode(é) = %v, want [195 169]", ids)
	}
	s, err = tok.Decode([]uint16{'a', 256, 'b'})
	if err != nil || s != "a"+EOTText+"b" {
		t.Errorf("Decode(a EOT b) = %q, %v", s, err)
	}
	if _, err := tok.Decode([]uint16{257}); err == nil {
		t.Error("Decode([257]): no error")
	}
}

func TestNewTokenizerUnknown(t *testing.T) {
	_, err := NewTokenizer("sentencepiece")
	var fe *fielderr.Error
	if !errors.As(err, &fe) || fe.Field != "tokenizer" || !strings.Contains(err.Error(), "sentencepiece") {
		t.Errorf("NewTokenizer(sentencepiece) = %v, want a fielderr.Error naming it", err)
	}
}

func TestGPT2RejectsInvalidUTF8(t *testing.T) {
	tok, _ := NewTokenizer(GPT2Tokenizer)
	_, err := tok.Encode(nil, "ok \xff bad")
	if err == nil || !strings.Contains(err.Error(), "byte 3") {
		t.Errorf("Encode(invalid UTF-8) = %v, want an error at byte 3", err)
	}
}

// BenchmarkEncode measures tokenisation throughput (MB/s) on 1 MB of the Go source tree,
// with the vocabulary library's own GPT-2 encoder as the baseline in the same run.
func BenchmarkEncode(b *testing.B) {
	root, _, err := goSource(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	src := filepath.Join(root, "src")
	files, _, err := selectFiles(src, []string{".go"}, 1<<20)
	if err != nil {
		b.Fatal(err)
	}
	var sb strings.Builder
	for _, f := range files {
		body, _ := os.ReadFile(filepath.Join(src, filepath.FromSlash(f.rel)))
		sb.Write(body)
	}
	text := strings.ToValidUTF8(sb.String(), "\uFFFD")
	for _, name := range TokenizerNames {
		tok, _ := NewTokenizer(name)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			var dst []uint16
			for b.Loop() {
				dst, _ = tok.Encode(dst[:0], text)
			}
		})
	}
	lib := codec.NewR50kBase()
	b.Run("gpt2-library", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			lib.Encode(text)
		}
	})
}

// The library whose vocabulary the GPT-2 tokenizer uses has its own encoder (a regular
// expression engine and a heap-based merge): on text without U+007F, which that engine
// drops, both must give the same ids. Texts: the fixtures, the first 300 KB of the Go source
// tree and random strings over letters, digits, punctuation and whitespace of many scripts.
func TestGPT2MatchesSecondImplementation(t *testing.T) {
	lib := codec.NewR50kBase()
	tok, _ := NewTokenizer(GPT2Tokenizer)
	texts := append([]string{}, roundTripTexts...)
	root, _, err := goSource(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(root, "src")
	files, _, err := selectFiles(src, []string{".go"}, 300<<10)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(f.rel)))
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(b))
	}
	alphabet := []rune("aZé ß中文ﾊ\u0301 \t\n\r\u00a0\u2003\u3000'sreveldmt0123٣½Ⅻ.,;!?-_(){}<>\"'`~€😀👍🏽\u200d\x01\x1f\u0085\u2028")
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		r := make([]rune, rng.IntN(40))
		for i := range r {
			r[i] = alphabet[rng.IntN(len(alphabet))]
		}
		texts = append(texts, string(r))
	}
	for _, s := range texts {
		if strings.ContainsRune(s, 0x7f) {
			continue
		}
		want, _, err := lib.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tok.Encode(nil, s)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("Encode(%.60q): %d ids, the library gives %d", s, len(got), len(want))
		}
		for i := range got {
			if uint(got[i]) != want[i] {
				t.Fatalf("Encode(%.60q): id %d is %d, the library gives %d", s, i, got[i], want[i])
			}
		}
	}
}

// U+007F is a token of its own (id 221 in GPT-2's byte alphabet) and is kept.
func TestGPT2KeepsDEL(t *testing.T) {
	tok, _ := NewTokenizer(GPT2Tokenizer)
	for _, tt := range []struct {
		text string
		ids  []uint16
	}{
		{"\x7f", []uint16{221}},
		{"a\x7fb", []uint16{64, 221, 65}},
	} {
		got, err := tok.Encode(nil, tt.text)
		if err != nil || !reflect.DeepEqual(got, tt.ids) {
			t.Errorf("Encode(%q) = %v, %v; want %v", tt.text, got, err, tt.ids)
		}
	}
}
