package search

import (
	"cmp"
	"math"
	"math/rand"
	"slices"

	"github.com/c-bata/goptuna"
	"github.com/c-bata/goptuna/tpe"
)

// tpeSampler is the tree-structured Parzen estimator (Bergstra et al., "Algorithms for
// Hyper-Parameter Optimization", NeurIPS 2011) as Optuna's TPESampler v1 does it, and as
// goptuna's tpe package ports it, on goptuna's study: after startup observations with a
// value, each parameter is drawn on its own. The observations are split into the best
// γ(n) = min(⌈n/10⌉, 25) (below) and the rest (above); a Parzen estimator l is fitted to
// the below ones and g to the above ones; 24 candidates are drawn from l and the one with
// the largest l(x)/g(x) is suggested.
//
// The estimator and acquisition are written here, not taken from goptuna's tpe.Sampler,
// which in v0.9.0 cannot be used as it is: it picks each mixture component from the
// process-wide math/rand source (so no seed reproduces a suggestion), its log-sum-exp sums
// the terms' logarithms, its Mahalanobis term divides the distance by σ² instead of
// squaring distance/σ, its truncation mass subtracts the lower tails unweighted, its
// Parzen estimator reorders the observations by indices taken before sorting them in
// place, and its categorical counts weigh an observation by its category's index. What
// goptuna's TPE does right is kept: the trials it reads, their ranking (observationPairs),
// the split, the estimator's defaults, and tpe.DefaultGamma and tpe.DefaultWeights.
type tpeSampler struct {
	startup int
	rng     *rand.Rand
	random  goptuna.Sampler  // before startup observations
	params  map[string]Param // the space, by name: custom parameters are modelled by kind
}

var _ goptuna.Sampler = (*tpeSampler)(nil)

// eiCandidates is how many candidates are drawn from l: Optuna's and goptuna's default.
const eiCandidates = 24

func (s *tpeSampler) Sample(study *goptuna.Study, trial goptuna.FrozenTrial, name string, dist any) (float64, error) {
	trials, err := study.GetTrials()
	if err != nil {
		return 0, err
	}
	values, ranks := observationPairs(trials, name)
	if len(values) < s.startup {
		return s.random.Sample(study, trial, name, dist)
	}
	below, above := split(values, ranks)
	if p, ok := s.params[name]; ok && p.custom() {
		return s.custom(newModel(p), below, above), nil
	}
	switch d := dist.(type) {
	case goptuna.UniformDistribution:
		return s.continuous(d.Low, d.High, below, above), nil
	case goptuna.LogUniformDistribution:
		for _, xs := range [][]float64{below, above} {
			for i := range xs {
				xs[i] = math.Log(xs[i])
			}
		}
		// The Jacobian 1/x of the change of variable is the same in l and g: it cancels in
		// l/g, so both are compared in log space.
		return math.Exp(s.continuous(math.Log(d.Low), math.Log(d.High), below, above)), nil
	case goptuna.IntUniformDistribution:
		return s.whole(d.Low, d.High, below, above), nil
	case goptuna.CategoricalDistribution:
		return s.categorical(len(d.Choices), below, above), nil
	}
	return 0, goptuna.ErrUnknownDistribution
}

// continuous draws from l over [low, high] and returns the candidate of largest l/g.
func (s *tpeSampler) continuous(low, high float64, below, above []float64) float64 {
	l, g := newParzen(below, low, high), newParzen(above, low, high)
	xs := l.sample(s.rng, eiCandidates)
	return best(xs, func(x float64) float64 { return l.logDensity(x) - g.logDensity(x) })
}

// whole is continuous for the whole numbers of [low, high]: the estimators cover
// [low − ½, high + ½], a candidate is rounded, and l and g are compared by their mass on
// its unit bin.
func (s *tpeSampler) whole(low, high int, below, above []float64) float64 {
	lo, hi := float64(low)-0.5, float64(high)+0.5
	l, g := newParzen(below, lo, hi), newParzen(above, lo, hi)
	xs := l.sample(s.rng, eiCandidates)
	for i, x := range xs {
		xs[i] = min(max(math.Round(x), float64(low)), float64(high))
	}
	return best(xs, func(x float64) float64 { return l.logMass(x, 0.5) - g.logMass(x, 0.5) })
}

// custom draws candidates from l in m's space and returns the value of the largest l/g:
// by density, or, quantized, by the mass of the value's bin.
func (s *tpeSampler) custom(m model, below, above []float64) float64 {
	points := func(vs []float64) []float64 {
		ys := make([]float64, len(vs))
		for i, v := range vs {
			ys[i] = m.point(v)
		}
		return ys
	}
	l := newParzenPrior(points(below), m.low, m.high, m.mu, m.sigma)
	g := newParzenPrior(points(above), m.low, m.high, m.mu, m.sigma)
	ys := l.sample(s.rng, eiCandidates)
	if m.p.Q == 0 {
		return m.value(best(ys, func(y float64) float64 { return l.logDensity(y) - g.logDensity(y) }))
	}
	vs := make([]float64, len(ys))
	for i, y := range ys {
		vs[i] = m.value(y)
	}
	return best(vs, func(v float64) float64 {
		lo, hi := m.bin(v)
		return l.logMassIn(lo, hi) - g.logMassIn(lo, hi)
	})
}

// categorical draws choice indices from l, the below observations' weighted counts plus
// a prior weight of one on each choice, and returns the one of largest l/g.
func (s *tpeSampler) categorical(n int, below, above []float64) float64 {
	l, g := choiceProbs(n, below), choiceProbs(n, above)
	xs := make([]float64, eiCandidates)
	for i := range xs {
		xs[i] = float64(pick(s.rng, l))
	}
	return best(xs, func(x float64) float64 { return math.Log(l[int(x)]) - math.Log(g[int(x)]) })
}

func choiceProbs(n int, obs []float64) []float64 {
	w := tpe.DefaultWeights(len(obs))
	p := make([]float64, n)
	for i := range p {
		p[i] = priorWeight
	}
	for i, x := range obs {
		p[int(x)] += w[i]
	}
	var sum float64
	for _, x := range p {
		sum += x
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

// best is the first of xs with the largest score.
func best(xs []float64, score func(float64) float64) float64 {
	bi, bs := 0, math.Inf(-1)
	for i, x := range xs {
		if sc := score(x); sc > bs {
			bi, bs = i, sc
		}
	}
	return xs[bi]
}

// rank orders TPE's observations, lower first: by step, then value.
type rank struct{ step, value float64 }

// observationPairs are the internal values of parameter name in the finished trials and
// their ranks. A completed trial ranks by its value, ahead of every stopped one (step
// −∞). A stopped (pruned) trial ranks by how far it got, the deepest first (step = −its
// last step), then by its intermediate value there; one with none ranks last. This is
// Optuna's _get_observation_pairs, which goptuna's tpe.getObservationPairs ports: a
// stopped configuration teaches TPE through its intermediate values. Running and failed
// trials are left out.
func observationPairs(trials []goptuna.FrozenTrial, name string) ([]float64, []rank) {
	values := make([]float64, 0, len(trials))
	ranks := make([]rank, 0, len(trials))
	for _, t := range trials {
		var r rank
		switch t.State {
		case goptuna.TrialStateComplete:
			r = rank{math.Inf(-1), t.Value}
		case goptuna.TrialStatePruned:
			r = rank{math.Inf(1), 0}
			if steps := sortedSteps(t.IntermediateValues); len(steps) > 0 {
				last := steps[len(steps)-1]
				r = rank{-float64(last), t.IntermediateValues[last]}
			}
		default:
			continue
		}
		ir, ok := t.InternalParams[name]
		if !ok {
			continue
		}
		values, ranks = append(values, ir), append(ranks, r)
	}
	return values, ranks
}

// split returns the values of the best tpe.DefaultGamma(n) ranks and those of the rest,
// each in trial order.
func split(values []float64, ranks []rank) (below, above []float64) {
	order := byRank(ranks)
	n := tpe.DefaultGamma(len(values))
	pickValues := func(idx []int) []float64 {
		idx = slices.Clone(idx)
		slices.Sort(idx)
		xs := make([]float64, len(idx))
		for i, j := range idx {
			xs[i] = values[j]
		}
		return xs
	}
	return pickValues(order[:n]), pickValues(order[n:])
}

// byRank are the indices of ranks, best first: by step, then value, then index.
func byRank(ranks []rank) []int {
	order := make([]int, len(ranks))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if c := cmp.Compare(ranks[a].step, ranks[b].step); c != 0 {
			return c
		}
		return cmp.Compare(ranks[a].value, ranks[b].value)
	})
	return order
}
