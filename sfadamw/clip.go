package sfadamw

import (
	"math"

	"github.com/sfsweep/sfsweep/internal/par"
)

// normChunk is the fixed chunk size of the gradient-norm reduction. Partial sums are taken
// per chunk and added in chunk order, so the norm does not depend on the number of workers.
const normChunk = 1 << 14

// normer computes global gradient norms without allocating per call.
type normer[T Float] struct {
	pool     *par.Pool
	partials []float64
	g        []T
	kernel   func(lo, hi int)
}

func (n *normer[T]) init(pool *par.Pool, size int) {
	n.pool = pool
	n.partials = make([]float64, par.Chunks(size, normChunk))
	n.kernel = n.chunkRange
}

// norm returns the Euclidean norm of g, accumulated in float64.
func (n *normer[T]) norm(g []T) float64 {
	n.g = g
	n.pool.For(len(n.partials), 1, n.kernel)
	n.g = nil
	var s float64
	for _, p := range n.partials {
		s += p
	}
	return math.Sqrt(s)
}

func (n *normer[T]) chunkRange(lo, hi int) {
	for k := lo; k < hi; k++ {
		chunk := n.g[k*normChunk : min((k+1)*normChunk, len(n.g))]
		var s0, s1, s2, s3 float64
		i := 0
		for ; i+4 <= len(chunk); i += 4 {
			a, b, c, d := float64(chunk[i]), float64(chunk[i+1]), float64(chunk[i+2]), float64(chunk[i+3])
			s0 += a * a
			s1 += b * b
			s2 += c * c
			s3 += d * d
		}
		for ; i < len(chunk); i++ {
			a := float64(chunk[i])
			s0 += a * a
		}
		n.partials[k] = (s0 + s1) + (s2 + s3)
	}
}

// clipper scales gradients down to a maximum global norm, as
// torch.nn.utils.clip_grad_norm_.
type clipper[T Float] struct {
	normer[T]
	maxNorm  float64 // 0 disables clipping
	lastNorm float64
}

// scale returns the factor the gradient g is multiplied by: 1 when clipping is off.
func (c *clipper[T]) scale(g []T) float64 {
	if c.maxNorm <= 0 {
		return 1
	}
	c.lastNorm = c.norm(g)
	return clipScale(c.lastNorm, c.maxNorm)
}

// GradNorm returns the global gradient norm of the last step (before clipping), when
// clipping is enabled; 0 otherwise.
func (c *clipper[T]) GradNorm() float64 { return c.lastNorm }

// clipScale returns the factor that scales a gradient of the given norm to at most maxNorm,
// as torch.nn.utils.clip_grad_norm_: min(1, maxNorm/(norm + 1e-6)). maxNorm = 0 disables it.
func clipScale(norm, maxNorm float64) float64 {
	if maxNorm <= 0 {
		return 1
	}
	return math.Min(1, maxNorm/(norm+1e-6))
}

// GradNorm returns the global Euclidean norm of g, reduced in a fixed order (bitwise
// reproducible whatever the number of workers). It allocates.
func GradNorm[T Float](g []T) float64 {
	var n normer[T]
	n.init(par.Default(), len(g))
	return n.norm(g)
}
