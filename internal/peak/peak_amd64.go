//go:build amd64 && !purego

package peak

import "golang.org/x/sys/cpu"

const (
	avx512FMAs = 24 // accumulators Z0–Z23; Z30, Z31 hold a and b
	avx2FMAs   = 12 // accumulators Y0–Y11; Y14, Y15 hold a and b
)

// fmaLoopAVX512 runs n iterations of avx512FMAs independent 16-lane multiply-adds
// acc_i += a·b from zero and stores the accumulators in acc.
//
//go:noescape
func fmaLoopAVX512(n int, ab *[2]float32, acc *[avx512FMAs * 16]float32)

// fmaLoopAVX2 runs n iterations of avx2FMAs independent 8-lane multiply-adds
// acc_i += a·b from zero and stores the accumulators in acc.
//
//go:noescape
func fmaLoopAVX2(n int, ab *[2]float32, acc *[avx2FMAs * 8]float32)

// loops lists the loops this CPU runs, widest first.
func loops() []loop {
	var ls []loop
	if cpu.X86.HasAVX512F {
		ls = append(ls, loop{isa: "avx512", fmas: avx512FMAs, lanes: 16, run: func(n int, ab *[2]float32, acc []float32) {
			fmaLoopAVX512(n, ab, (*[avx512FMAs * 16]float32)(acc))
		}})
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ls = append(ls, loop{isa: "avx2", fmas: avx2FMAs, lanes: 8, run: func(n int, ab *[2]float32, acc []float32) {
			fmaLoopAVX2(n, ab, (*[avx2FMAs * 8]float32)(acc))
		}})
	}
	return ls
}
