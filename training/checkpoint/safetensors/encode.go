package safetensors

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strconv"
	"unicode/utf8"
)

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
