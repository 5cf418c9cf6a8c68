package checkpoint

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// littleEndian reports whether float32s are laid out in memory as safetensors stores them,
// so that converting is a memmove. Tests clear it to check the portable loops.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// bytesOf returns the memory of s as bytes.
func bytesOf(s []float32) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), 4*len(s))
}

// putFloat32s writes src into dst (4·len(src) bytes) as little-endian float32s.
func putFloat32s(dst []byte, src []float32) {
	if littleEndian {
		copy(dst, bytesOf(src))
		return
	}
	dst = dst[:4*len(src)]
	for i, v := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
	}
}

// float32sInto reads the little-endian float32s of src (4·len(dst) bytes) into dst.
func float32sInto(dst []float32, src []byte) {
	if littleEndian {
		copy(bytesOf(dst), src)
		return
	}
	src = src[:4*len(dst)]
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

// float32s returns the little-endian float32s of b (len(b) a multiple of 4). With alias, on
// a little-endian machine and where b is 4-byte aligned, the result is b's memory itself
// (no copy); otherwise it is a copy.
func float32s(b []byte, alias bool) []float32 {
	n := len(b) / 4
	if alias && littleEndian && n > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(b)))%4 == 0 {
		return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), n)
	}
	out := make([]float32, n)
	float32sInto(out, b)
	return out
}
