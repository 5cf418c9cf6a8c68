package data

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer/codec"
)

// gpt2EOT is GPT-2's end-of-text id; the byte-pair tokens are 0..gpt2EOT−1.
const gpt2EOT = 50256

// gpt2Tokenizer is GPT-2's byte-level BPE (tiktoken's "gpt2" encoding, r50k_base). The
// vocabulary comes from github.com/tiktoken-go/tokenizer, which compiles it into the program;
// the pre-tokenizer and the merges are implemented here, because that library's regular
// expression engine drops U+007F (DEL) from its input. It is safe for concurrent use.
type gpt2Tokenizer struct {
	rank  map[string]uint16 // token bytes → id (= merge rank)
	bytes []string          // id → token bytes
}

// gpt2Tables builds the tokenizer once: its tables hold 50,256 entries.
var gpt2Tables = sync.OnceValue(func() *gpt2Tokenizer {
	c := codec.NewR50kBase()
	g := &gpt2Tokenizer{rank: make(map[string]uint16, gpt2EOT), bytes: make([]string, gpt2EOT)}
	for id := range gpt2EOT {
		s, err := c.Decode([]uint{uint(id)})
		if err != nil || s == "" {
			panic(fmt.Sprintf("data: gpt2 vocabulary has no token %d: %v", id, err))
		}
		if _, dup := g.rank[s]; dup {
			panic(fmt.Sprintf("data: gpt2 vocabulary has token %q twice", s))
		}
		g.rank[s] = uint16(id)
		g.bytes[id] = s
	}
	return g
})

func (*gpt2Tokenizer) Name() string { return GPT2Tokenizer }
func (*gpt2Tokenizer) Vocab() int   { return gpt2EOT + 1 }
func (*gpt2Tokenizer) EOT() uint16  { return gpt2EOT }

// Encode tokenizes text as tiktoken's encode_ordinary does ("<|endoftext|>" in text is plain
// text): GPT-2's pre-tokenizer splits text into pieces, and each piece is merged by byte-pair
// ranks. The pre-tokenizer works on code points, so text must be valid UTF-8.
func (g *gpt2Tokenizer) Encode(dst []uint16, text string) ([]uint16, error) {
	if !utf8.ValidString(text) {
		return dst, fmt.Errorf("data: gpt2 tokenizer: text is not valid UTF-8 at byte %d", invalidUTF8At(text))
	}
	dst = growTokens(dst, len(text)/3)
	var parts []bpePart
	for i := 0; i < len(text); {
		n := gpt2Piece(text, i)
		piece := text[i : i+n]
		if id, ok := g.rank[piece]; ok {
			dst = append(dst, id)
		} else {
			dst, parts = g.merge(dst, piece, parts)
		}
		i += n
	}
	return dst, nil
}

// bpePart is a part of a piece being merged: where it starts and the rank of the token it
// would form with the next part.
type bpePart struct {
	start int
	rank  uint32
}

const noMerge = math.MaxUint32

// merge appends the tokens of piece: starting from single bytes, it merges the adjacent pair
// of lowest rank, the leftmost among equals, until no pair is a token (tiktoken's
// byte_pair_merge).
func (g *gpt2Tokenizer) merge(dst []uint16, piece string, parts []bpePart) ([]uint16, []bpePart) {
	parts = parts[:0]
	for i := 0; i <= len(piece); i++ {
		parts = append(parts, bpePart{i, noMerge})
	}
	rankAt := func(i int) uint32 { // rank of parts[i] joined with parts[i+1]
		if i+2 < len(parts) {
			if r, ok := g.rank[piece[parts[i].start:parts[i+2].start]]; ok {
				return uint32(r)
			}
		}
		return noMerge
	}
	for i := range len(parts) - 2 {
		parts[i].rank = rankAt(i)
	}
	for len(parts) > 2 {
		best, min := 0, uint32(noMerge)
		for i, p := range parts[:len(parts)-1] {
			if p.rank < min {
				best, min = i, p.rank
			}
		}
		if min == noMerge {
			break
		}
		parts = append(parts[:best+1], parts[best+2:]...)
		parts[best].rank = rankAt(best)
		if best > 0 {
			parts[best-1].rank = rankAt(best - 1)
		}
	}
	for i := range len(parts) - 1 {
		dst = append(dst, g.rank[piece[parts[i].start:parts[i+1].start]])
	}
	return dst, parts
}

// Decode returns the text of tokens; EOT decodes as "<|endoftext|>".
func (g *gpt2Tokenizer) Decode(tokens []uint16) (string, error) {
	var sb strings.Builder
	for i, t := range tokens {
		switch {
		case t < gpt2EOT:
			sb.WriteString(g.bytes[t])
		case t == gpt2EOT:
			sb.WriteString(EOTText)
		default:
			return "", fmt.Errorf("data: gpt2 tokenizer: token %d at index %d is ≥ vocab %d", t, i, gpt2EOT+1)
		}
	}
	return sb.String(), nil
}

// Character classes of GPT-2's pre-tokenizer.
const (
	classOther  = iota // [^\s\p{L}\p{N}]
	classLetter        // \p{L}
	classNumber        // \p{N}
	classSpace         // \s (the Unicode White_Space property)
)

func runeClass(r rune) int {
	switch {
	case r < utf8.RuneSelf && ('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'):
		return classLetter
	case r < utf8.RuneSelf && '0' <= r && r <= '9':
		return classNumber
	case unicode.IsSpace(r):
		return classSpace
	case r >= utf8.RuneSelf && unicode.IsLetter(r):
		return classLetter
	case r >= utf8.RuneSelf && unicode.IsNumber(r):
		return classNumber
	}
	return classOther
}

// gpt2Piece returns the length in bytes of the piece of s that starts at byte i: the match
// at i of GPT-2's pattern
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// whose alternatives are tried in order, as a backtracking regular expression engine does.
func gpt2Piece(s string, i int) int {
	if s[i] == '\'' && i+1 < len(s) {
		switch s[i+1] {
		case 's', 't', 'm', 'd':
			return 2
		case 'r', 'v':
			if i+2 < len(s) && s[i+2] == 'e' {
				return 3
			}
		case 'l':
			if i+2 < len(s) && s[i+2] == 'l' {
				return 3
			}
		}
	}
	// ` ?X+` for X letters, numbers or other: an optional space, then a run of one class.
	j := i
	if s[i] == ' ' {
		j = i + 1
	}
	if j < len(s) {
		r, w := utf8.DecodeRuneInString(s[j:])
		if c := runeClass(r); c != classSpace {
			k := j + w
			for k < len(s) {
				r, w := utf8.DecodeRuneInString(s[k:])
				if runeClass(r) != c {
					break
				}
				k += w
			}
			return k - i
		}
	}
	// `\s+(?!\S)`: a whitespace run, less its last character when a non-space follows, so
	// that character can lead the next word; `\s+` when that leaves nothing.
	k, last := i, i
	for k < len(s) {
		r, w := utf8.DecodeRuneInString(s[k:])
		if runeClass(r) != classSpace {
			break
		}
		last = k
		k += w
	}
	if k < len(s) && last > i {
		return last - i
	}
	return k - i
}
