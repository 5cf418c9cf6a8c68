package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"unicode/utf8"
)

// MaxHeaderSize is the largest header Decode accepts, in bytes: the limit of the reference
// implementation.
const MaxHeaderSize = 100_000_000

// ErrInvalid is wrapped by every error Decode returns for a malformed file.
var ErrInvalid = errors.New("safetensors: invalid file")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
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
