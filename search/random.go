package search

import (
	"math/rand"

	"github.com/c-bata/goptuna"
)

// randomSampler draws every parameter independently and uniformly: goptuna's RandomSampler
// for the continuous kinds, with two repairs. goptuna v0.9.0 draws a categorical index from
// the process-wide math/rand source, not its seeded one, so a choice would not be
// reproducible: choices come from rng here. And it draws an integer from [Low, High),
// never High: the range is widened by one so that int_uniform covers [Min, Max].
//
// A custom parameter (space_dist.go) is drawn from its own stream, dist, so that adding
// one to a space leaves the other parameters' draws as they were.
type randomSampler struct {
	inner  *goptuna.RandomSampler
	rng    *rand.Rand // choices
	dist   *rand.Rand // custom parameters
	params map[string]Param
}

var _ goptuna.Sampler = (*randomSampler)(nil)

func (r *randomSampler) Sample(study *goptuna.Study, trial goptuna.FrozenTrial, name string, dist any) (float64, error) {
	if p, ok := r.params[name]; ok && p.custom() {
		return p.draw(r.dist), nil
	}
	switch d := dist.(type) {
	case goptuna.CategoricalDistribution:
		return float64(r.rng.Intn(len(d.Choices))), nil
	case goptuna.IntUniformDistribution:
		d.High++
		return r.inner.Sample(study, trial, name, d)
	}
	return r.inner.Sample(study, trial, name, dist)
}
