package safetensors

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// f32le returns the little-endian bytes of vs.
func f32le(vs ...float32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// file builds a safetensors file by hand from a header string and data.
func file(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	return append(b, data...)
}

// TestEncodeReference checks Encode against the byte vectors of the reference
// implementation's own tests (huggingface/safetensors, safetensors/src/tensor.rs).
func TestEncodeReference(t *testing.T) {
	six := f32le(0, 1, 2, 3, 4, 5)
	tests := []struct {
		name    string
		tensors []Tensor
		meta    map[string]string
		want    []byte
	}{
		{"serialization", []Tensor{{Info: Info{"attn.0", F32, []int{1, 2, 3}}, Data: six}}, nil, append([]byte{
			64, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 46, 48, 34, 58, 123, 34, 100,
			116, 121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34,
			58, 91, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102, 115,
			101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125}, six...)},
		{"forced alignment", []Tensor{{Info: Info{"attn0", F32, []int{1, 1, 2, 3}}, Data: six}}, nil, append([]byte{
			72, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 48, 34, 58, 123, 34, 100, 116,
			121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34, 58,
			91, 49, 44, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102,
			115, 101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125, 32, 32, 32, 32, 32,
			32, 32}, six...)},
		{"empty", nil, nil, []byte{8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32}},
		{"metadata only", nil, map[string]string{"framework": "pt"}, []byte{
			40, 0, 0, 0, 0, 0, 0, 0, 123, 34, 95, 95, 109, 101, 116, 97, 100, 97, 116, 97, 95,
			95, 34, 58, 123, 34, 102, 114, 97, 109, 101, 119, 111, 114, 107, 34, 58, 34, 112,
			116, 34, 125, 125, 32, 32, 32, 32, 32}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Encode(tt.tensors, tt.meta)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("Encode =\n%q\nwant\n%q", got, tt.want)
			}
			f, err := Decode(got)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if len(f.Tensors) != len(tt.tensors) || !reflect.DeepEqual(f.Metadata, tt.meta) {
				t.Fatalf("Decode = %d tensors, metadata %v", len(f.Tensors), f.Metadata)
			}
			for i, want := range tt.tensors {
				g := f.Tensors[i]
				if !reflect.DeepEqual(g.Info, want.Info) || !bytes.Equal(g.Data, want.Data) {
					t.Errorf("tensor %d = %+v, want %+v", i, g, want)
				}
			}
		})
	}
}

// TestEncodeLayout checks the header of a file with several tensors against the spec read
// independently: keys sorted with the metadata first, data in the order given, offsets
// tiling the buffer, the header padded with spaces to a multiple of 8, JSON escaping.
func TestEncodeLayout(t *testing.T) {
	ts := []Tensor{
		{Info: Info{"b", F64, []int{2}}, Data: make([]byte, 16)},
		{Info: Info{"a\"q\\<\n", U8, []int{3}}, Data: []byte{1, 2, 3}},
		{Info: Info{"scalar", I64, []int{}}, Data: make([]byte, 8)},
		{Info: Info{"empty", BF16, []int{4, 0}}, Data: nil},
	}
	got, err := Encode(ts, map[string]string{"z": "1", "a": "<&>"})
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(got)
	header := string(got[8 : 8+n])
	want := `{"__metadata__":{"a":"<&>","z":"1"},"a\"q\\<\n":{"dtype":"U8","shape":[3],"data_offsets":[16,19]},` +
		`"b":{"dtype":"F64","shape":[2],"data_offsets":[0,16]},"empty":{"dtype":"BF16","shape":[4,0],"data_offsets":[27,27]},` +
		`"scalar":{"dtype":"I64","shape":[],"data_offsets":[19,27]}}`
	if strings.TrimRight(header, " ") != want {
		t.Fatalf("header =\n%s\nwant\n%s", header, want)
	}
	if (8+n)%8 != 0 || len(header)-len(want) >= 8 {
		t.Errorf("header of %d bytes (JSON %d): not padded to the next multiple of 8", n, len(want))
	}
	if uint64(len(got)) != 8+n+27 {
		t.Errorf("file is %d bytes, want %d", len(got), 8+n+27)
	}
	f, err := Decode(got)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range ts { // data order is the order given
		if f.Tensors[i].Name != want.Name || !bytes.Equal(f.Tensors[i].Data, want.Data) {
			t.Errorf("decoded tensor %d = %q %v, want %q %v", i, f.Tensors[i].Name, f.Tensors[i].Data, want.Name, want.Data)
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	tests := []struct {
		name    string
		tensors []Tensor
		meta    map[string]string
		want    string
	}{
		{"reserved name", []Tensor{{Info: Info{"__metadata__", U8, []int{0}}}}, nil, "reserved"},
		{"duplicate", []Tensor{{Info: Info{"a", U8, []int{0}}}, {Info: Info{"a", U8, []int{0}}}}, nil, "duplicate"},
		{"unknown dtype", []Tensor{{Info: Info{"a", "F4", []int{2}}, Data: []byte{0}}}, nil, `dtype "F4"`},
		{"negative dim", []Tensor{{Info: Info{"a", U8, []int{-1}}}}, nil, "shape[0] = -1"},
		{"overflow", []Tensor{{Info: Info{"a", F64, []int{1 << 40, 1 << 40}}}}, nil, "overflows"},
		{"short data", []Tensor{{Info: Info{"a", F32, []int{2}}, Data: make([]byte, 7)}}, nil, "7 bytes, want 8"},
		{"bad utf-8", []Tensor{{Info: Info{"a\xff", U8, []int{0}}}}, nil, "UTF-8"},
		{"bad utf-8 metadata", nil, map[string]string{"k": "\xff"}, "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Encode(tt.tensors, tt.meta)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Encode error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestDecodeAccepts checks files the spec allows that Encode does not write: any header
// key order, data order unlike name order, no padding, whitespace, null metadata, empty
// tensors at a shared offset.
func TestDecodeAccepts(t *testing.T) {
	tests := []struct {
		name   string
		header string
		data   []byte
		names  []string // in data order
	}{
		{"data order", `{"b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}`, []byte{1, 2, 3}, []string{"b", "a"}},
		{"field order and spaces", "{ \"x\" : {\"data_offsets\":[0,4], \"shape\":[1], \"dtype\":\"F32\"} }\n\t", f32le(1), []string{"x"}},
		{"null metadata", `{"__metadata__":null,"x":{"dtype":"I16","shape":[1],"data_offsets":[0,2]}}`, []byte{1, 2}, []string{"x"}},
		{"empty tensors", `{"e1":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},"x":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"e0":{"dtype":"F64","shape":[3,0],"data_offsets":[0,0]}}`, f32le(2), []string{"e0", "x", "e1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Decode(file(tt.header, tt.data))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, x := range f.Tensors {
				names = append(names, x.Name)
			}
			if !reflect.DeepEqual(names, tt.names) {
				t.Fatalf("tensors in data order = %v, want %v", names, tt.names)
			}
			if !bytes.Equal(f.Data, tt.data) {
				t.Errorf("data buffer = %v, want %v", f.Data, tt.data)
			}
		})
	}
}

// TestDecodeRejects checks that each rule of the format is enforced, with an error that
// wraps ErrInvalid and names the problem.
func TestDecodeRejects(t *testing.T) {
	ok := `{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	huge := binary.LittleEndian.AppendUint64(nil, MaxHeaderSize+1)
	tests := []struct {
		name string
		file []byte
		want string
	}{
		{"empty file", nil, "shorter than the 8-byte"},
		{"7 bytes", make([]byte, 7), "shorter than the 8-byte"},
		{"header too large", append(huge, "{}"...), "more than the maximum"},
		{"header past end", append(binary.LittleEndian.AppendUint64(nil, 100), "{}"...), "only 2 bytes"},
		{"header length 2^64-1", binary.LittleEndian.AppendUint64(nil, math.MaxUint64), "more than the maximum"},
		{"empty header", file("", nil), "does not start with '{'"},
		{"not an object", file(`[1]`, nil), "does not start with '{'"},
		{"leading space", file(` {}`, nil), "does not start with '{'"},
		{"invalid utf-8", file("{\"\xff\":1}", nil), "UTF-8"},
		{"bad json", file(`{"x":`, nil), `tensor "x": unexpected end of the header`},
		{"bad json token", file(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}x}`, []byte{0}), `invalid character 'x'`},
		{"trailing data", file(`{} {}`, nil), "after the object"},
		{"trailing garbage", file(`{}x`, nil), "after the object"},
		{"duplicate tensor", file(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"x":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, []byte{1, 2}), `duplicate key "x"`},
		{"duplicate metadata", file(`{"__metadata__":{},"__metadata__":{}}`, nil), "duplicate key"},
		{"duplicate metadata key", file(`{"__metadata__":{"a":"1","a":"2"}}`, nil), `duplicate key "a"`},
		{"metadata not strings", file(`{"__metadata__":{"a":1}}`, nil), `want a string`},
		{"metadata not object", file(`{"__metadata__":"a"}`, nil), `want an object`},
		{"tensor not object", file(`{"x":[1]}`, nil), `tensor "x"`},
		{"duplicate field", file(`{"x":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{1}), `duplicate field "dtype"`},
		{"unknown field", file(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"y":1}}`, []byte{1}), `unknown field "y"`},
		{"missing dtype", file(`{"x":{"shape":[1],"data_offsets":[0,1]}}`, []byte{1}), `missing field "dtype"`},
		{"missing shape", file(`{"x":{"dtype":"U8","data_offsets":[0,1]}}`, []byte{1}), `missing field "shape"`},
		{"missing offsets", file(`{"x":{"dtype":"U8","shape":[1]}}`, []byte{1}), `missing field "data_offsets"`},
		{"unknown dtype", file(`{"x":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}}`, make([]byte, 16)), `dtype "F128"`},
		{"sub-byte dtype", file(`{"x":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}}`, []byte{0}), `dtype "F4"`},
		{"dtype not string", file(`{"x":{"dtype":4,"shape":[1],"data_offsets":[0,4]}}`, make([]byte, 4)), `dtype: got number 4`},
		{"negative dim", file(`{"x":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}}`, nil), `shape[0] = -1`},
		{"fractional dim", file(`{"x":{"dtype":"U8","shape":[1.5],"data_offsets":[0,1]}}`, []byte{0}), `shape[0] = 1.5`},
		{"exponent dim", file(`{"x":{"dtype":"U8","shape":[1e0],"data_offsets":[0,1]}}`, []byte{0}), `shape[0] = 1e0`},
		{"dim not number", file(`{"x":{"dtype":"U8","shape":["1"],"data_offsets":[0,1]}}`, []byte{0}), `shape[0]: got string`},
		{"nested shape", file(`{"x":{"dtype":"U8","shape":[[1]],"data_offsets":[0,1]}}`, []byte{0}), `shape[0]: got "["`},
		{"shape overflow", file(`{"x":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}}`, nil), "overflows"},
		{"byte length overflow", file(`{"x":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,0]}}`, nil), "overflows"},
		{"dim above 2^64", file(`{"x":{"dtype":"U8","shape":[18446744073709551616],"data_offsets":[0,0]}}`, nil), "below 2^64"},
		{"one offset", file(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0]}}`, []byte{0}), `want [begin, end]`},
		{"three offsets", file(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1,1]}}`, []byte{0}), `want [begin, end]`},
		{"end before begin", file(`{"x":{"dtype":"U8","shape":[0],"data_offsets":[1,0]}}`, []byte{0}), "end before begin"},
		{"size mismatch", file(`{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, make([]byte, 4)), "hold 4 bytes, shape [2] × F32 needs 8"},
		{"gap at start", file(`{"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8)), "gap"},
		{"gap between", file(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"y":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}}`, make([]byte, 3)), `"y"`},
		{"overlap", file(`{"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"y":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}`, make([]byte, 3)), "overlap"},
		{"aliased tensors", file(`{"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"y":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, make([]byte, 2)), "overlap"},
		{"past end", file(ok, make([]byte, 4)), "run past the data buffer of 4 bytes"},
		{"trailing bytes", file(ok, make([]byte, 12)), "cover 8 bytes of the 12-byte"},
		{"huge offsets", file(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[18446744073709551614,18446744073709551615]}}`, nil), "gap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Decode(tt.file)
			if err == nil {
				t.Fatalf("Decode succeeded: %+v", f)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestRoundTrip encodes random tensors of every dtype and checks Decode gives them back.
func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	dtypes := make([]DType, 0, len(dtypeSizes))
	for d := range dtypeSizes {
		dtypes = append(dtypes, d)
	}
	for trial := range 50 {
		var ts []Tensor
		for i := range r.IntN(6) {
			shape := make([]int, r.IntN(4))
			n := 1
			for j := range shape {
				shape[j] = r.IntN(4)
				n *= shape[j]
			}
			d := dtypes[r.IntN(len(dtypes))]
			data := make([]byte, n*d.Size())
			for j := range data {
				data[j] = byte(r.Uint32())
			}
			ts = append(ts, Tensor{Info: Info{Name: string(rune('a'+r.IntN(26))) + string(rune('0'+i)), DType: d, Shape: shape}, Data: data})
		}
		meta := map[string]string{}
		for range r.IntN(3) {
			meta[string(rune('k'+r.IntN(5)))] = strings.Repeat("v", r.IntN(9))
		}
		b, err := Encode(ts, meta)
		if err != nil {
			t.Fatal(err)
		}
		// Decode returns the tensors in data order; empty tensors at the same offset in
		// name order.
		begin, pos := map[string]int{}, 0
		for _, x := range ts {
			begin[x.Name] = pos
			pos += len(x.Data)
		}
		slices.SortStableFunc(ts, func(a, b Tensor) int {
			return cmp.Or(cmp.Compare(begin[a.Name], begin[b.Name]), cmp.Compare(len(a.Data), len(b.Data)), strings.Compare(a.Name, b.Name))
		})
		f, err := Decode(b)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		if len(meta) == 0 {
			meta = nil // empty metadata is not written
		}
		if !reflect.DeepEqual(f.Metadata, meta) || len(f.Tensors) != len(ts) {
			t.Fatalf("trial %d: metadata %v, %d tensors; want %v, %d", trial, f.Metadata, len(f.Tensors), meta, len(ts))
		}
		for i := range ts {
			if !reflect.DeepEqual(f.Tensors[i].Info, ts[i].Info) || !bytes.Equal(f.Tensors[i].Data, ts[i].Data) {
				t.Fatalf("trial %d tensor %d: %+v, want %+v", trial, i, f.Tensors[i], ts[i])
			}
			if off := f.Tensors[i].Offset; !bytes.Equal(f.Data[off:off+len(ts[i].Data)], ts[i].Data) {
				t.Fatalf("trial %d tensor %d: Offset %d does not point at its data", trial, i, off)
			}
		}
		if _, ok := f.Tensor("nope"); ok {
			t.Fatal("Tensor found a name that is not there")
		}
	}
}
