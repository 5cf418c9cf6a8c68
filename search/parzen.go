package search

import (
	"cmp"
	"math"
	"math/rand"
	"slices"

	"github.com/c-bata/goptuna/tpe"
)

// A product that is then added is converted to float64 first (space_dist.go says why):
// the estimator's arithmetic is the same on every architecture.

// parzen is the Parzen estimator of TPE: a mixture of Gaussians, one at each observation
// and a prior one over the whole range, truncated to [low, high]. It is Optuna's
// _ParzenEstimator (v1, with its defaults: prior weight 1, the "magic clip" of the
// widths, no special end points), the model that goptuna's tpe package ports.
type parzen struct {
	weights, mus, sigmas []float64 // by increasing mu; weights sum to 1
	low, high            float64
	accept               float64 // the mixture's mass inside [low, high]
}

const priorWeight = 1.0

// newParzen builds the estimator of observations obs (in trial order, which weighs them:
// tpe.DefaultWeights favours the later ones past 25) over [low, high], with the prior of
// a uniform parameter: at the middle of the range, as wide as the range.
func newParzen(obs []float64, low, high float64) parzen {
	return newParzenPrior(obs, low, high, 0.5*(low+high), high-low)
}

// newParzenPrior builds the estimator of obs over [low, high] with the prior component
// N(priorMu, priorSigma): hyperopt's adaptive_parzen_normal, of which Optuna's is the
// uniform case. A normal parameter's prior is its own distribution.
//
// The components sit at the observations sorted, with the prior's slotted in among them.
// Each other component is as wide as the larger gap to its neighbours (the range's ends
// counting as neighbours), except the first and last, which take their inner gap; widths
// are then clipped to [priorSigma/min(100, 1 + components), priorSigma].
func newParzenPrior(obs []float64, low, high, priorMu, priorSigma float64) parzen {
	n := len(obs)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(obs[a], obs[b]) })
	prior := priorMu
	pos, _ := slices.BinarySearchFunc(order, prior, func(i int, t float64) int { return cmp.Compare(obs[i], t) })

	w := tpe.DefaultWeights(n)
	p := parzen{weights: make([]float64, 0, n+1), mus: make([]float64, 0, n+1), low: low, high: high}
	for k, i := range order {
		if k == pos {
			p.mus, p.weights = append(p.mus, prior), append(p.weights, priorWeight)
		}
		p.mus, p.weights = append(p.mus, obs[i]), append(p.weights, w[i])
	}
	if pos == n {
		p.mus, p.weights = append(p.mus, prior), append(p.weights, priorWeight)
	}
	var sum float64
	for _, x := range p.weights {
		sum += x
	}
	for k := range p.weights {
		p.weights[k] /= sum
	}

	m := len(p.mus)
	p.sigmas = make([]float64, m)
	if n > 0 {
		at := func(k int) float64 { // the mus with low and high at either end
			switch {
			case k < 0:
				return low
			case k >= m:
				return high
			}
			return p.mus[k]
		}
		for k := range p.sigmas {
			p.sigmas[k] = math.Max(p.mus[k]-at(k-1), at(k+1)-p.mus[k])
		}
		p.sigmas[0] = at(1) - p.mus[0]
		p.sigmas[m-1] = p.mus[m-1] - at(m-2)
	}
	minSigma := priorSigma / math.Min(100, float64(1+m))
	for k := range p.sigmas {
		p.sigmas[k] = min(max(p.sigmas[k], minSigma), priorSigma)
	}
	p.sigmas[pos] = priorSigma

	for k := range p.mus {
		p.accept += float64(p.weights[k] * (p.cdf(k, high) - p.cdf(k, low)))
	}
	return p
}

// cdf is component k's normal distribution function at x.
func (p parzen) cdf(k int, x float64) float64 {
	return 0.5 * math.Erfc(-(x-p.mus[k])/(math.Sqrt2*p.sigmas[k]))
}

// sample draws n points from the truncated mixture: a component by weight, then its
// normal until a draw falls in [low, high).
func (p parzen) sample(rng *rand.Rand, n int) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		k := pick(rng, p.weights)
		for {
			x := p.mus[k] + float64(p.sigmas[k]*rng.NormFloat64())
			if p.low <= x && x < p.high {
				xs[i] = x
				break
			}
		}
	}
	return xs
}

// logDensity is the log density of the truncated mixture at x.
func (p parzen) logDensity(x float64) float64 {
	terms := make([]float64, len(p.mus))
	for k := range p.mus {
		z := (x - p.mus[k]) / p.sigmas[k]
		terms[k] = math.Log(p.weights[k]) - float64(0.5*z*z) - math.Log(math.Sqrt(2*math.Pi)*p.sigmas[k])
	}
	return logSumExp(terms) - math.Log(p.accept)
}

// logMass is the log probability of the truncated mixture on [max(x − h, low),
// min(x + h, high)]: the bin of a whole number x for h = 0.5.
func (p parzen) logMass(x, h float64) float64 { return p.logMassIn(x-h, x+h) }

// logMassIn is the log probability of the truncated mixture on [lo, hi] ∩ [low, high]:
// a quantized value's bin.
func (p parzen) logMassIn(lo, hi float64) float64 {
	lo, hi = max(lo, p.low), min(hi, p.high)
	var mass float64
	for k := range p.mus {
		if lo < hi {
			mass += float64(p.weights[k] * (p.cdf(k, hi) - p.cdf(k, lo)))
		}
	}
	const eps = 1e-12 // as Optuna, so that an empty bin scores finitely
	return math.Log(mass+eps) - math.Log(p.accept+eps)
}

// pick draws an index with probability weights[i] (weights sum to 1).
func pick(rng *rand.Rand, weights []float64) int {
	u := rng.Float64()
	var c float64
	for i, w := range weights {
		c += w
		if u < c {
			return i
		}
	}
	return len(weights) - 1
}

func logSumExp(xs []float64) float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		m = max(m, x)
	}
	if math.IsInf(m, 0) {
		return m
	}
	var s float64
	for _, x := range xs {
		s += math.Exp(x - m)
	}
	return m + math.Log(s)
}
