package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

// FuzzDecode feeds Decode arbitrary bytes. It must never panic; what it accepts must obey
// the format (tensors tiling the data buffer, sizes matching shapes) and survive an
// Encode/Decode round trip unchanged. The seeds run as part of the ordinary tests; fuzz with
//
//	go test -run '^$' -fuzz FuzzDecode -fuzztime 60s -fuzzminimizetime 100x ./training/checkpoint/safetensors
func FuzzDecode(f *testing.F) {
	seeds := [][]byte{
		nil,
		{8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '},
		file(`{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, f32le(1, 2)),
		file(`{"__metadata__":{"format":"pt"},"a":{"dtype":"U8","shape":[3],"data_offsets":[0,3]},"b":{"dtype":"F64","shape":[1,1],"data_offsets":[3,11]}}`, make([]byte, 11)),
		file(`{"e":{"dtype":"BF16","shape":[0,5],"data_offsets":[0,0]},"s":{"dtype":"I64","shape":[],"data_offsets":[0,8]}}`, make([]byte, 8)),
		file(`{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, f32le(1)),
		file(`{"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"y":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, make([]byte, 2)),
		file(`{"x":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}}`, nil),
		file(`{"__metadata__":{"a":"1","a":"2"}}`, nil),
		binary.LittleEndian.AppendUint64(nil, 1<<63),
	}
	if b, err := Encode([]Tensor{{Info: Info{"w", F16, []int{2, 2}}, Data: make([]byte, 8)}}, map[string]string{"k": "v\n\"x\""}); err == nil {
		seeds = append(seeds, b)
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		pos := 0
		for _, x := range file.Tensors {
			n, err := x.ByteLen()
			if err != nil || n != len(x.Data) || x.Offset != pos {
				t.Fatalf("tensor %q: %d bytes at %d, ByteLen %d (%v), want at %d", x.Name, len(x.Data), x.Offset, n, err, pos)
			}
			pos += n
		}
		if pos != len(file.Data) {
			t.Fatalf("tensors cover %d of %d bytes", pos, len(file.Data))
		}
		again, err := Encode(file.Tensors, file.Metadata)
		if err != nil {
			t.Fatalf("Encode of a decoded file: %v", err)
		}
		back, err := Decode(again)
		if err != nil {
			t.Fatalf("Decode of a re-encoded file: %v", err)
		}
		if len(back.Tensors) != len(file.Tensors) || (len(file.Metadata) > 0 && !reflect.DeepEqual(back.Metadata, file.Metadata)) {
			t.Fatalf("round trip: %d tensors, metadata %v; want %d, %v", len(back.Tensors), back.Metadata, len(file.Tensors), file.Metadata)
		}
		for i := range file.Tensors {
			a, b := file.Tensors[i], back.Tensors[i]
			if a.Name != b.Name || a.DType != b.DType || !reflect.DeepEqual(a.Shape, b.Shape) || !bytes.Equal(a.Data, b.Data) {
				t.Fatalf("round trip tensor %d: %+v, want %+v", i, b.Info, a.Info)
			}
		}
	})
}
