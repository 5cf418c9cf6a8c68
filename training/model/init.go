package model

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
)

// Init fills params (of length Layout().Size) deterministically from seed, as nanoGPT and
// llm-baselines do: linear and embedding weights ~ N(0, σ²) with σ = InitStd, weights that
// write into the residual stream (attention output, MLP down-projection) ~ N(0, σ²/(2L)),
// norm scales 1, biases 0. Each tensor draws from its own stream, keyed by seed and its
// name, so the values of a tensor do not depend on the tensors before it.
func Init[T ~float32 | ~float64](c Config, seed uint64, params []T) {
	l := c.Layout()
	if len(params) != l.Size {
		panic("model: Init buffer has the wrong length")
	}
	for _, t := range l.Tensors {
		v := params[t.Offset : t.Offset+t.Size]
		switch t.Kind {
		case "norm":
			for i := range v {
				v[i] = 1
			}
		case "bias":
			clear(v)
		default:
			std := c.InitStd
			if t.Kind == "residual" {
				std /= math.Sqrt(2 * float64(c.Layers))
			}
			h := fnv.New64a()
			h.Write([]byte(t.Name))
			rng := rand.New(rand.NewPCG(seed, h.Sum64()))
			for i := range v {
				v[i] = T(rng.NormFloat64() * std)
			}
		}
	}
}
