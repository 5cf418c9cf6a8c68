//go:build !amd64 || purego

package gemm

// simdLevels lists the SIMD float32 kernels: none without the amd64 assembly.
func simdLevels() []level { return nil }
