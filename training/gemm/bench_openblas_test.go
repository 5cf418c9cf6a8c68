//go:build openblas && cgo

package gemm

import (
	"math/rand/v2"
	"testing"

	"github.com/sfsweep/sfsweep/training/gemm/internal/openblas"
)

// With -tags openblas the benchmarks compare with OpenBLAS as well (see package
// internal/openblas).
func init() { openblasSgemm = openblas.Sgemm }

// TestOpenBLASAgrees checks the cgo binding itself on one case of each transpose
// combination, so that a broken binding cannot pass for a slow or fast peer.
func TestOpenBLASAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, tr := range transposes {
		cs := gemmCase{transA: tr[0], transB: tr[1], m: 37, n: 45, k: 53, alpha: 1.5, beta: 0.5, padA: 2, padB: 1, padC: 3}
		o := cs.operands(rng).rounded()
		a, b, c := to32(o.a), to32(o.b), to32(o.c)
		openblas.Sgemm(cs.transA, cs.transB, cs.m, cs.n, cs.k, float32(cs.alpha), a, o.lda, b, o.ldb, float32(cs.beta), c, o.ldc)
		check(t, cs, o, to64(c), 24)
	}
}
