//go:build !amd64 || purego

package gemm

// simdLevels lists the SIMD float32 kernels: none without the amd64 assembly.
func simdLevels() []level { return nil }

// measurePeak returns 0: the peak is unknown without the amd64 assembly.
func measurePeak(workers int) float64 { return 0 }
