package data

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sfsweep/sfsweep/fielderr"
)

// Tokenizer turns text into token ids and back.
type Tokenizer interface {
	// Name is the name recorded in meta.json: "byte" or "gpt2".
	Name() string
	// Vocab is the number of token ids; every id is < Vocab.
	Vocab() int
	// EOT is the end-of-text id that separates documents. Encode never produces it.
	EOT() uint16
	// Encode appends the tokens of text to dst and returns the extended slice.
	Encode(dst []uint16, text string) ([]uint16, error)
	// Decode returns the text of tokens; EOT decodes as "<|endoftext|>".
	Decode(tokens []uint16) (string, error)
}

// Names of the tokenizers.
const (
	ByteTokenizer = "byte"
	GPT2Tokenizer = "gpt2"
)

// TokenizerNames lists the tokenizers NewTokenizer knows.
var TokenizerNames = []string{ByteTokenizer, GPT2Tokenizer}

// tokenizerShapes holds the vocab size and EOT id of each tokenizer, so meta.json can be
// checked without building a tokenizer.
var tokenizerShapes = map[string][2]int{ByteTokenizer: {257, 256}, GPT2Tokenizer: {gpt2EOT + 1, gpt2EOT}}

// EOTText is the text of the end-of-text token, as GPT-2 writes it.
const EOTText = "<|endoftext|>"

// NewTokenizer returns the tokenizer called name: "byte" (ids 0..255 are the bytes, 256 is
// EOT, vocab 257) or "gpt2" (GPT-2's byte-pair encoding, vocab 50257, EOT 50256, the
// vocabulary compiled into the program so nothing is downloaded).
func NewTokenizer(name string) (Tokenizer, error) {
	switch name {
	case ByteTokenizer:
		return byteTokenizer{}, nil
	case GPT2Tokenizer:
		return gpt2Tables(), nil
	}
	return nil, &fielderr.Error{Field: "tokenizer", Value: fmt.Sprintf("%q", name), Reason: fmt.Sprintf("unknown tokenizer (want one of %v)", TokenizerNames)}
}

// byteTokenizer maps each byte to its value and adds EOT = 256.
type byteTokenizer struct{}

func (byteTokenizer) Name() string { return ByteTokenizer }
func (byteTokenizer) Vocab() int   { return 257 }
func (byteTokenizer) EOT() uint16  { return 256 }

func (byteTokenizer) Encode(dst []uint16, text string) ([]uint16, error) {
	dst = growTokens(dst, len(text))
	for i := 0; i < len(text); i++ {
		dst = append(dst, uint16(text[i]))
	}
	return dst, nil
}

func (byteTokenizer) Decode(tokens []uint16) (string, error) {
	var sb strings.Builder
	sb.Grow(len(tokens))
	for i, t := range tokens {
		switch {
		case t < 256:
			sb.WriteByte(byte(t))
		case t == 256:
			sb.WriteString(EOTText)
		default:
			return "", fmt.Errorf("data: byte tokenizer: token %d at index %d is ≥ vocab 257", t, i)
		}
	}
	return sb.String(), nil
}

// growTokens makes room for n more tokens in dst.
func growTokens(dst []uint16, n int) []uint16 {
	if cap(dst)-len(dst) < n {
		d := make([]uint16, len(dst), len(dst)+n+len(dst)/2)
		copy(d, dst)
		dst = d
	}
	return dst
}

// invalidUTF8At returns the byte offset of the first invalid UTF-8 sequence in s, or -1.
func invalidUTF8At(s string) int {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}
