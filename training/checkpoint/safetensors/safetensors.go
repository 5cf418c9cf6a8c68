// Package safetensors reads and writes the safetensors file format
// (https://github.com/huggingface/safetensors), the tensor container that PyTorch,
// transformers, candle and most other tools load without executing code.
//
// A file is an 8-byte little-endian unsigned header length N, then N bytes of a UTF-8 JSON
// object, then the data buffer. The header maps each tensor name to
//
//	{"dtype": "F32", "shape": [768, 50304], "data_offsets": [begin, end]}
//
// with offsets relative to the start of the data buffer, and may hold one "__metadata__"
// object of string values. Tensors are row-major and little-endian; their byte ranges must
// cover the data buffer exactly, without gaps or overlaps.
//
// Decode checks every one of these rules and returns an error wrapping [ErrInvalid] for a
// file that breaks one; it never panics, whatever the bytes. Encode writes deterministic
// bytes: header keys sorted by name with "__metadata__" first, the JSON escaped as the
// reference implementation escapes it, and the header padded with spaces to a multiple of
// 8 bytes so every tensor of 8 bytes or less per element is aligned.
package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"unicode/utf8"
)

// MaxHeaderSize is the largest header Decode accepts, in bytes: the limit of the reference
// implementation.
const MaxHeaderSize = 100_000_000

// metadataKey is the header key of the metadata object.
const metadataKey = "__metadata__"

// ErrInvalid is wrapped by every error Decode returns for a malformed file.
var ErrInvalid = errors.New("safetensors: invalid file")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// DType is the element type of a tensor, by its name in the header.
type DType string

// The element types of the format whose elements are whole bytes. (The sub-byte types F4,
// F6_E2M3 and F6_E3M2 are not supported.)
const (
	BOOL        DType = "BOOL"
	U8          DType = "U8"
	I8          DType = "I8"
	F8_E5M2     DType = "F8_E5M2"
	F8_E4M3     DType = "F8_E4M3"
	F8_E8M0     DType = "F8_E8M0"
	F8_E4M3FNUZ DType = "F8_E4M3FNUZ"
	F8_E5M2FNUZ DType = "F8_E5M2FNUZ"
	I16         DType = "I16"
	U16         DType = "U16"
	F16         DType = "F16"
	BF16        DType = "BF16"
	I32         DType = "I32"
	U32         DType = "U32"
	F32         DType = "F32"
	C64         DType = "C64"
	F64         DType = "F64"
	I64         DType = "I64"
	U64         DType = "U64"
)

var dtypeSizes = map[DType]int{
	BOOL: 1, U8: 1, I8: 1, F8_E5M2: 1, F8_E4M3: 1, F8_E8M0: 1, F8_E4M3FNUZ: 1, F8_E5M2FNUZ: 1,
	I16: 2, U16: 2, F16: 2, BF16: 2,
	I32: 4, U32: 4, F32: 4,
	C64: 8, F64: 8, I64: 8, U64: 8,
}

// Size returns the bytes per element of d, or 0 for a type this package does not know.
func (d DType) Size() int { return dtypeSizes[d] }

// Info describes one tensor: its name, element type and row-major shape.
type Info struct {
	Name  string
	DType DType
	Shape []int
}

// Len returns the number of elements, the product of the shape (1 for a scalar), or an
// error if a dimension is negative or the product overflows.
func (t Info) Len() (int, error) {
	n := uint64(1)
	for i, d := range t.Shape {
		if d < 0 {
			return 0, fmt.Errorf("tensor %q: shape[%d] = %d: must be ≥ 0", t.Name, i, d)
		}
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 || lo > math.MaxInt {
			return 0, fmt.Errorf("tensor %q: shape %v: element count overflows", t.Name, t.Shape)
		}
		n = lo
	}
	return int(n), nil
}

// ByteLen returns the size of the tensor's data in bytes, or an error for an unknown
// dtype, a negative dimension or an overflow.
func (t Info) ByteLen() (int, error) {
	size := t.DType.Size()
	if size == 0 {
		return 0, fmt.Errorf("tensor %q: dtype %q: unknown or unsupported", t.Name, t.DType)
	}
	n, err := t.Len()
	if err != nil {
		return 0, err
	}
	if n > math.MaxInt/size {
		return 0, fmt.Errorf("tensor %q: shape %v × %s: byte length overflows", t.Name, t.Shape, t.DType)
	}
	return n * size, nil
}

// Tensor is a tensor with its data: the little-endian bytes of its elements in row-major
// order.
type Tensor struct {
	Info
	Data []byte
	// Offset is where Data starts in the file's data buffer; set by Decode, not used by
	// Encode.
	Offset int
}

// File is the content of a safetensors file.
type File struct {
	// Tensors in the order of their data in the file. The Data of a decoded tensor is a
	// view of the decoded bytes, not a copy.
	Tensors []Tensor
	// Metadata is the "__metadata__" object; nil when the file has none.
	Metadata map[string]string
	// Data is the data buffer of a decoded file, which the tensors' Data tile.
	Data []byte
}

// Tensor returns the tensor called name.
func (f *File) Tensor(name string) (Tensor, bool) {
	for _, t := range f.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return Tensor{}, false
}

// Encode returns the safetensors file holding tensors, with their data in the given order,
// and metadata (not written when empty).
func Encode(tensors []Tensor, metadata map[string]string) ([]byte, error) {
	infos := make([]Info, len(tensors))
	for i, t := range tensors {
		infos[i] = t.Info
	}
	head, size, err := Header(infos, metadata)
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(head)+size)
	off := copy(out, head)
	for _, t := range tensors {
		n, _ := t.ByteLen() // checked by Header
		if len(t.Data) != n {
			return nil, fmt.Errorf("safetensors: tensor %q: data is %d bytes, want %d (shape %v × %s)", t.Name, len(t.Data), n, t.Shape, t.DType)
		}
		off += copy(out[off:], t.Data)
	}
	return out, nil
}

// Header returns the start of a file holding tensors of the given descriptions, with their
// data in the given order, and metadata: the 8-byte length and the padded JSON header. The
// data buffer, of dataSize bytes, follows it; the tensors' data lie in it one after the
// other, in order. Writers that fill the data themselves use it to allocate the file once.
func Header(tensors []Info, metadata map[string]string) (head []byte, dataSize int, err error) {
	type entry struct {
		Info
		begin, end int
	}
	entries := make([]entry, len(tensors))
	seen := make(map[string]bool, len(tensors))
	for i, t := range tensors {
		if t.Name == metadataKey {
			return nil, 0, fmt.Errorf("safetensors: tensor %d: name %q is reserved for the metadata", i, t.Name)
		}
		if !utf8.ValidString(t.Name) {
			return nil, 0, fmt.Errorf("safetensors: tensor %d: name %q is not valid UTF-8", i, t.Name)
		}
		if seen[t.Name] {
			return nil, 0, fmt.Errorf("safetensors: tensor %q: duplicate name", t.Name)
		}
		seen[t.Name] = true
		n, err := t.ByteLen()
		if err != nil {
			return nil, 0, fmt.Errorf("safetensors: %w", err)
		}
		if dataSize > math.MaxInt-n {
			return nil, 0, fmt.Errorf("safetensors: tensor %q: data size overflows", t.Name)
		}
		entries[i] = entry{t, dataSize, dataSize + n}
		dataSize += n
	}
	for k, v := range metadata {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return nil, 0, fmt.Errorf("safetensors: metadata %q: key or value is not valid UTF-8", k)
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })

	var b bytes.Buffer
	b.Write(make([]byte, 8))
	b.WriteByte('{')
	if len(metadata) > 0 {
		appendString(&b, metadataKey)
		b.WriteString(":{")
		keys := make([]string, 0, len(metadata))
		for k := range metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			appendString(&b, k)
			b.WriteByte(':')
			appendString(&b, metadata[k])
		}
		b.WriteByte('}')
	}
	for i, e := range entries {
		if i > 0 || len(metadata) > 0 {
			b.WriteByte(',')
		}
		appendString(&b, e.Name)
		b.WriteString(`:{"dtype":`)
		appendString(&b, string(e.DType))
		b.WriteString(`,"shape":[`)
		for j, d := range e.Shape {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(d))
		}
		fmt.Fprintf(&b, `],"data_offsets":[%d,%d]}`, e.begin, e.end)
	}
	b.WriteByte('}')
	for b.Len()%8 != 0 {
		b.WriteByte(' ')
	}
	head = b.Bytes()
	if len(head)-8 > MaxHeaderSize {
		return nil, 0, fmt.Errorf("safetensors: header is %d bytes: more than the %d readers accept", len(head)-8, MaxHeaderSize)
	}
	binary.LittleEndian.PutUint64(head, uint64(len(head)-8))
	return head, dataSize, nil
}

// appendString writes s as a JSON string escaped as serde_json (the reference
// implementation) does: quote, backslash and control characters only.
func appendString(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\b':
			b.WriteString(`\b`)
		case c == '\f':
			b.WriteString(`\f`)
		case c < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}

// Decode parses and validates a safetensors file. The tensors' Data are views of data.
func Decode(data []byte) (*File, error) {
	if len(data) < 8 {
		return nil, invalid("file is %d bytes: shorter than the 8-byte header length", len(data))
	}
	n := binary.LittleEndian.Uint64(data)
	if n > MaxHeaderSize {
		return nil, invalid("header length = %d: more than the maximum %d", n, MaxHeaderSize)
	}
	if n > uint64(len(data)-8) {
		return nil, invalid("header length = %d: the file has only %d bytes after the length", n, len(data)-8)
	}
	header, buf := data[8:8+n], data[8+n:]
	if !utf8.Valid(header) {
		return nil, invalid("header is not valid UTF-8")
	}
	if len(header) == 0 || header[0] != '{' {
		return nil, invalid("header does not start with '{'")
	}
	infos, offsets, meta, err := parseHeader(header)
	if err != nil {
		return nil, err
	}

	// Check every range against its dtype and shape, then that the ranges, in order, tile
	// the data buffer.
	order := make([]int, len(infos))
	for i := range order {
		order[i] = i
	}
	for i, t := range infos {
		want, err := t.ByteLen()
		if err != nil {
			return nil, invalid("%v", err)
		}
		b, e := offsets[i][0], offsets[i][1]
		if e < b {
			return nil, invalid("tensor %q: data_offsets [%d, %d]: end before begin", t.Name, b, e)
		}
		if uint64(want) != e-b {
			return nil, invalid("tensor %q: data_offsets [%d, %d] hold %d bytes, shape %v × %s needs %d", t.Name, b, e, e-b, t.Shape, t.DType, want)
		}
	}
	// Ties are empty tensors at one offset: put them in name order, so the order does not
	// depend on the order of the header's keys.
	sort.Slice(order, func(i, j int) bool {
		a, b := offsets[order[i]], offsets[order[j]]
		if a != b {
			return a[0] < b[0] || a[0] == b[0] && a[1] < b[1]
		}
		return infos[order[i]].Name < infos[order[j]].Name
	})
	f := &File{Tensors: make([]Tensor, len(infos)), Metadata: meta, Data: buf}
	var pos uint64
	for k, i := range order {
		b, e := offsets[i][0], offsets[i][1]
		if b != pos {
			if b < pos {
				return nil, invalid("tensor %q: data_offsets [%d, %d] overlap the previous tensor, which ends at %d", infos[i].Name, b, e, pos)
			}
			return nil, invalid("tensor %q: data_offsets [%d, %d] leave a gap after the previous tensor, which ends at %d", infos[i].Name, b, e, pos)
		}
		if e > uint64(len(buf)) {
			return nil, invalid("tensor %q: data_offsets [%d, %d] run past the data buffer of %d bytes", infos[i].Name, b, e, len(buf))
		}
		f.Tensors[k] = Tensor{Info: infos[i], Data: buf[b:e:e], Offset: int(b)}
		pos = e
	}
	if pos != uint64(len(buf)) {
		return nil, invalid("the tensors cover %d bytes of the %d-byte data buffer", pos, len(buf))
	}
	return f, nil
}

// parseHeader reads the header object token by token, so that a duplicate key, an unknown
// field, a wrong type or trailing data is an error rather than silently resolved.
func parseHeader(header []byte) (infos []Info, offsets [][2]uint64, meta map[string]string, err error) {
	dec := json.NewDecoder(bytes.NewReader(header))
	dec.UseNumber()
	if err := expectDelim(dec, '{', "header"); err != nil {
		return nil, nil, nil, err
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, nil, invalid("header: %v", tokenErr(err))
		}
		name, ok := tok.(string)
		if !ok {
			return nil, nil, nil, invalid("header: got %s, want a key", describe(tok))
		}
		if seen[name] {
			return nil, nil, nil, invalid("header: duplicate key %q", name)
		}
		seen[name] = true
		if name == metadataKey { // null is the same as no metadata
			if meta, err = parseMetadata(dec); err != nil {
				return nil, nil, nil, err
			}
			continue
		}
		info, off, err := parseTensor(dec, name)
		if err != nil {
			return nil, nil, nil, err
		}
		infos = append(infos, info)
		offsets = append(offsets, off)
	}
	if err := expectDelim(dec, '}', "header"); err != nil {
		return nil, nil, nil, err
	}
	if tok, err := dec.Token(); err != io.EOF {
		if err != nil {
			return nil, nil, nil, invalid("header: after the object: %v", tokenErr(err))
		}
		return nil, nil, nil, invalid("header: unexpected %v after the object", tok)
	}
	return infos, offsets, meta, nil
}

// tokenErr describes an error of the JSON tokenizer.
func tokenErr(err error) string {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return "unexpected end of the header"
	}
	return err.Error()
}

func expectDelim(dec *json.Decoder, want json.Delim, what string) error {
	tok, err := dec.Token()
	if err != nil {
		return invalid("%s: %v", what, tokenErr(err))
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return invalid("%s: got %v, want %q", what, describe(tok), string(want))
	}
	return nil
}

// describe names a JSON token for an error message.
func describe(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		return strconv.Quote(v.String())
	case string:
		return "string " + strconv.Quote(v)
	case json.Number:
		return "number " + v.String()
	case nil:
		return "null"
	default:
		return fmt.Sprintf("%v", v)
	}
}

func parseMetadata(dec *json.Decoder) (map[string]string, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, invalid("%s: %v", metadataKey, tokenErr(err))
	}
	if tok == nil {
		return nil, nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, invalid("%s: got %s, want an object of strings", metadataKey, describe(tok))
	}
	meta := map[string]string{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, invalid("%s: %v", metadataKey, tokenErr(err))
		}
		k, ok := tok.(string)
		if !ok {
			return nil, invalid("%s: got %s, want a key", metadataKey, describe(tok))
		}
		if _, dup := meta[k]; dup {
			return nil, invalid("%s: duplicate key %q", metadataKey, k)
		}
		tok, err = dec.Token()
		if err != nil {
			return nil, invalid("%s[%q]: %v", metadataKey, k, tokenErr(err))
		}
		v, ok := tok.(string)
		if !ok {
			return nil, invalid("%s[%q]: got %s, want a string", metadataKey, k, describe(tok))
		}
		meta[k] = v
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, invalid("%s: %v", metadataKey, tokenErr(err))
	}
	return meta, nil
}

func parseTensor(dec *json.Decoder, name string) (Info, [2]uint64, error) {
	info := Info{Name: name}
	var off [2]uint64
	if err := expectDelim(dec, '{', fmt.Sprintf("tensor %q", name)); err != nil {
		return info, off, err
	}
	var hasDType, hasShape, hasOffsets bool
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return info, off, invalid("tensor %q: %v", name, tokenErr(err))
		}
		field, ok := tok.(string)
		if !ok {
			return info, off, invalid("tensor %q: got %s, want a field name", name, describe(tok))
		}
		dup := false
		switch field {
		case "dtype":
			dup, hasDType = hasDType, true
			tok, err := dec.Token()
			if err != nil {
				return info, off, invalid("tensor %q: dtype: %v", name, tokenErr(err))
			}
			s, ok := tok.(string)
			if !ok {
				return info, off, invalid("tensor %q: dtype: got %s, want a string", name, describe(tok))
			}
			info.DType = DType(s)
			if info.DType.Size() == 0 {
				return info, off, invalid("tensor %q: dtype %q: unknown or unsupported", name, s)
			}
		case "shape":
			dup, hasShape = hasShape, true
			dims, err := parseInts(dec, fmt.Sprintf("tensor %q: shape", name))
			if err != nil {
				return info, off, err
			}
			info.Shape = make([]int, len(dims))
			for i, d := range dims {
				if d > math.MaxInt {
					return info, off, invalid("tensor %q: shape[%d] = %d: too large", name, i, d)
				}
				info.Shape[i] = int(d)
			}
		case "data_offsets":
			dup, hasOffsets = hasOffsets, true
			o, err := parseInts(dec, fmt.Sprintf("tensor %q: data_offsets", name))
			if err != nil {
				return info, off, err
			}
			if len(o) != 2 {
				return info, off, invalid("tensor %q: data_offsets %v: want [begin, end]", name, o)
			}
			off = [2]uint64{o[0], o[1]}
		default:
			return info, off, invalid("tensor %q: unknown field %q", name, field)
		}
		if dup {
			return info, off, invalid("tensor %q: duplicate field %q", name, field)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return info, off, invalid("tensor %q: %v", name, tokenErr(err))
	}
	for _, f := range []struct {
		name string
		ok   bool
	}{{"dtype", hasDType}, {"shape", hasShape}, {"data_offsets", hasOffsets}} {
		if !f.ok {
			return info, off, invalid("tensor %q: missing field %q", name, f.name)
		}
	}
	return info, off, nil
}

// parseInts reads an array of non-negative integers.
func parseInts(dec *json.Decoder, what string) ([]uint64, error) {
	if err := expectDelim(dec, '[', what); err != nil {
		return nil, err
	}
	var out []uint64
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, invalid("%s: %v", what, tokenErr(err))
		}
		num, ok := tok.(json.Number)
		if !ok {
			return nil, invalid("%s[%d]: got %s, want a non-negative integer", what, len(out), describe(tok))
		}
		v, err := strconv.ParseUint(string(num), 10, 64)
		if err != nil {
			return nil, invalid("%s[%d] = %s: want a non-negative integer below 2^64", what, len(out), num)
		}
		out = append(out, v)
	}
	if _, err := dec.Token(); err != nil { // the closing ']'
		return nil, invalid("%s: %v", what, tokenErr(err))
	}
	return slices.Clip(out), nil
}
