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
	"fmt"
	"math"
	"math/bits"
)

// metadataKey is the header key of the metadata object.
const metadataKey = "__metadata__"

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
