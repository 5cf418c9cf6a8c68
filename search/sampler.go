package search

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strconv"

	"github.com/c-bata/goptuna"
)

// Sampling methods.
const (
	MethodRandom = "random" // each parameter drawn independently, uniformly (in log for log_uniform)
	MethodTPE    = "tpe"    // the tree-structured Parzen estimator, after random start-up draws
)

// DefaultStartupTrials is how many observations with a value (Complete or Stopped) TPE
// waits for, drawing at random until then: Optuna's and goptuna's n_startup_trials.
const DefaultStartupTrials = 10

// Outcome of a configuration as the sampler sees it.
type Outcome int

const (
	Running  Outcome = iota // still training: not used
	Complete                // trained to the end: ranked by Value
	Stopped                 // stopped at a rung: ranked by how far it got, then its value there
	Failed                  // failed, or diverged with no value: not used
)

func (o Outcome) String() string {
	if o < Running || o > Failed {
		return "Outcome(" + strconv.Itoa(int(o)) + ")"
	}
	return [...]string{"running", "complete", "stopped", "failed"}[o]
}

// Observation is a configuration tried before, and what came of it.
type Observation struct {
	Point        Point
	Outcome      Outcome
	Value        float64         // the final metric (Complete only); lower is better
	Intermediate map[int]float64 // the validation loss at the rungs it reached, by step
}

// Sampler suggests configurations.
type Sampler interface {
	// Suggest returns the configuration of decision number index, given every
	// configuration tried before. It is a pure function of (the sampler's seed, index,
	// history): the same arguments give the same Point.
	Suggest(index int, history []Observation) (Point, error)
}

// Option changes a sampler from its defaults.
type Option func(*sampler)

// StartupTrials sets how many observations with a value TPE waits for before it models
// them (DefaultStartupTrials if not given); random sampling ignores it.
func StartupTrials(n int) Option { return func(s *sampler) { s.startup = n } }

// NewSampler returns the sampler of method (MethodRandom or MethodTPE) over space, seeded
// by seed.
func NewSampler(method string, space Space, seed int64, opts ...Option) (Sampler, error) {
	if method != MethodRandom && method != MethodTPE {
		return nil, fmt.Errorf("sampling method %q is neither %q nor %q", method, MethodRandom, MethodTPE)
	}
	if err := space.Validate(); err != nil {
		return nil, err
	}
	s := &sampler{method: method, space: slices.Clone(space), seed: seed, startup: DefaultStartupTrials}
	for _, o := range opts {
		o(s)
	}
	if s.startup < 0 {
		return nil, fmt.Errorf("startup trials %d is negative", s.startup)
	}
	s.dists = make([]any, len(space))
	s.params = make(map[string]Param, len(space))
	for i, p := range s.space {
		s.dists[i] = p.distribution()
		s.params[p.Name] = p
	}
	return s, nil
}

// sampler runs each suggestion as a fresh goptuna study: the history goes in as finished
// trials and one new trial draws every parameter, in the space's order, from a sampler
// seeded by (seed, index). Nothing carries over from one call to the next.
type sampler struct {
	method  string
	space   Space
	dists   []any // goptuna's distribution of each parameter
	params  map[string]Param
	seed    int64
	startup int
}

// Streams of random numbers derived from one suggestion's seed.
const (
	streamRandom = iota
	streamChoice
	streamTPE
	streamDist
)

func (s *sampler) Suggest(index int, history []Observation) (Point, error) {
	seed := mix(s.seed, uint64(index))
	random := &randomSampler{
		inner:  goptuna.NewRandomSampler(goptuna.RandomSamplerOptionSeed(mix(seed, streamRandom))),
		rng:    rand.New(rand.NewSource(mix(seed, streamChoice))),
		dist:   rand.New(rand.NewSource(mix(seed, streamDist))),
		params: s.params,
	}
	var gs goptuna.Sampler = random
	if s.method == MethodTPE {
		gs = &tpeSampler{startup: s.startup, rng: rand.New(rand.NewSource(mix(seed, streamTPE))), random: random, params: s.params}
	}
	study, err := goptuna.CreateStudy("search",
		goptuna.StudyOptionStorage(goptuna.NewInMemoryStorage()),
		goptuna.StudyOptionDirection(goptuna.StudyDirectionMinimize),
		goptuna.StudyOptionLogger(nil), // a logger that writes nowhere
		goptuna.StudyOptionSampler(gs))
	if err != nil {
		return nil, err
	}
	for i, o := range history {
		if err := s.record(study, o); err != nil {
			return nil, fmt.Errorf("suggest %d: observation %d: %w", index, i, err)
		}
	}
	id, err := study.Storage.CreateNewTrial(study.ID)
	if err != nil {
		return nil, err
	}
	trial := goptuna.Trial{Study: study, ID: id}
	p := make(Point, len(s.space))
	for i, prm := range s.space {
		var v float64
		if prm.custom() {
			v, err = sampleCustom(study, id, gs, prm.Name, s.dists[i])
		} else {
			v, err = suggest(trial, prm)
		}
		if err != nil {
			return nil, fmt.Errorf("suggest %d: %s: %w", index, prm.Name, err)
		}
		p[prm.Name] = v
	}
	return p, nil
}

// record adds o to the study as a trial: its parameters, its intermediate values in order
// of step, its value and its state. A stopped trial's value is its last intermediate one,
// as goptuna's Study.Optimize records a pruned trial.
func (s *sampler) record(study *goptuna.Study, o Observation) error {
	st := study.Storage
	id, err := st.CreateNewTrial(study.ID)
	if err != nil {
		return err
	}
	for i, p := range s.space {
		v, ok := o.Point[p.Name]
		if !ok {
			return fmt.Errorf("point has no %s", p.Name)
		}
		ir, err := p.internal(v)
		if err != nil {
			return err
		}
		if err := st.SetTrialParam(id, p.Name, ir, s.dists[i]); err != nil {
			return err
		}
	}
	steps := sortedSteps(o.Intermediate)
	for _, step := range steps {
		v := o.Intermediate[step]
		if math.IsNaN(v) {
			return fmt.Errorf("intermediate value at step %d is NaN", step)
		}
		if err := st.SetTrialIntermediateValue(id, step, v); err != nil {
			return err
		}
	}
	var state goptuna.TrialState
	switch o.Outcome {
	case Running:
		return nil
	case Complete:
		if math.IsNaN(o.Value) {
			return fmt.Errorf("complete with a NaN value")
		}
		if err := st.SetTrialValue(id, o.Value); err != nil {
			return err
		}
		state = goptuna.TrialStateComplete
	case Stopped:
		if len(steps) > 0 {
			if err := st.SetTrialValue(id, o.Intermediate[steps[len(steps)-1]]); err != nil {
				return err
			}
		}
		state = goptuna.TrialStatePruned
	case Failed:
		state = goptuna.TrialStateFail
	default:
		return fmt.Errorf("outcome %v is unknown", o.Outcome)
	}
	return st.SetTrialState(id, state)
}

// suggest draws p in trial with the goptuna call of its kind.
func suggest(trial goptuna.Trial, p Param) (float64, error) {
	switch p.Kind {
	case LogUniform:
		// exp(log x) may miss x by an ulp: keep the suggestion inside [Min, Max], where
		// the history that it becomes is checked.
		v, err := trial.SuggestLogFloat(p.Name, p.Min, p.Max)
		return min(max(v, p.Min), p.Max), err
	case Uniform:
		return trial.SuggestFloat(p.Name, p.Min, p.Max)
	case IntUniform:
		v, err := trial.SuggestInt(p.Name, int(p.Min), int(p.Max))
		return float64(v), err
	default:
		label, err := trial.SuggestCategorical(p.Name, p.labels())
		if err != nil {
			return 0, err
		}
		return strconv.ParseFloat(label, 64)
	}
}

// sampleCustom draws a custom parameter in trial id, as goptuna's Trial draws its own
// kinds: the sampler's value, recorded in the trial with dist (its Range, as uniform).
func sampleCustom(study *goptuna.Study, id int, gs goptuna.Sampler, name string, dist any) (float64, error) {
	frozen, err := study.Storage.GetTrial(id)
	if err != nil {
		return 0, err
	}
	v, err := gs.Sample(study, frozen, name, dist)
	if err != nil {
		return 0, err
	}
	return v, study.Storage.SetTrialParam(id, name, v, dist)
}

// sortedSteps are the keys of values in increasing order.
func sortedSteps(values map[int]float64) []int {
	steps := make([]int, 0, len(values))
	for step := range values {
		steps = append(steps, step)
	}
	slices.Sort(steps)
	return steps
}

// mix is the seed of stream k of seed: splitmix64's finalizer over seed and k, so that
// nearby (seed, k) pairs give unrelated seeds.
func mix(seed int64, k uint64) int64 {
	z := uint64(seed) + 0x9e3779b97f4a7c15*(k+1)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return int64(z ^ z>>31)
}
