package activities

// A manifest's search as Decide works it: its scheduling, samplers and the grid it walks,
// made once per manifest and kept, since a grid's expansion and plan are O(configurations)
// and a search asks for them at every decision.

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/sfsweep/sfsweep/search"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training"
)

// maxSearchers bounds the searchers a worker keeps: one per manifest searched lately.
const maxSearchers = 16

// searchers are the searchers of the manifests this worker decided for, by the SHA-256 of
// the manifest's bytes: the same bytes are the same searcher, which nothing changes once
// made (its samplers keep nothing between calls), so decisions share it.
type searchers struct {
	mu    sync.Mutex
	by    map[[sha256.Size]byte]*searcher
	order [][sha256.Size]byte // oldest first
}

// searcher is the searcher of the manifest at key, made once for its bytes.
func (a *Activities) searcher(ctx context.Context, key string) (*searcher, error) {
	src, err := a.Store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(src)
	c := &a.searchers
	c.mu.Lock()
	sr, ok := c.by[sum]
	c.mu.Unlock()
	if ok {
		return sr, nil
	}
	m, err := sweeps.Parse(src)
	if err != nil {
		return nil, invalid(fmt.Errorf("%s: %w", key, err))
	}
	if sr, err = newSearcher(m); err != nil {
		return nil, invalid(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by == nil {
		c.by = map[[sha256.Size]byte]*searcher{}
	}
	if _, ok := c.by[sum]; !ok {
		if len(c.order) == maxSearchers {
			delete(c.by, c.order[0])
			c.order = c.order[1:]
		}
		c.by[sum] = sr
		c.order = append(c.order, sum)
	}
	return c.by[sum], nil
}

// searcher is a manifest's search: its scheduling, samplers and the grid it walks.
type searcher struct {
	m        *sweeps.Manifest
	config   search.Config
	samplers []search.Sampler // by grid (random, tpe)
	spaces   []search.Space
	grid     []sweeps.Point // grid: its configurations in the order the search takes them
	budget   []int          // configurations of each grid
}

func newSearcher(m *sweeps.Manifest) (*searcher, error) {
	sr := &searcher{m: m, config: search.Config{Rungs: m.Rungs(), Parallel: m.Search.Parallel}}
	if es := m.Search.EarlyStopping; es != nil {
		sr.config.Rule, sr.config.Eta, sr.config.MinTrials = es.Rule, m.Eta(), m.MedianMinTrials()
		sr.config.Brackets, sr.config.Grace, sr.config.Finalists = m.Brackets(), m.GraceSteps(), m.Finalists()
	} else {
		sr.config.Rungs = []int{m.Steps}
	}
	plan, err := m.Plan()
	if err != nil {
		return nil, err
	}
	sr.budget = plan.Configs
	for _, n := range plan.Configs {
		sr.config.Budget += n
	}
	if sr.config.Parallel == 0 {
		sr.config.Parallel = sr.config.Budget
	}
	if !m.Sampled() {
		trials, err := m.Expand()
		if err != nil {
			return nil, err
		}
		pts := m.GridPoints(trials)
		// the grid in an order of the seed's, so that what starts first is no corner of it
		rand.New(rand.NewPCG(uint64(m.Search.Seed), 0x5eed)).Shuffle(len(pts), func(i, j int) { pts[i], pts[j] = pts[j], pts[i] })
		sr.grid = pts[:sr.config.Budget]
		return sr, nil
	}
	for gi := range m.Optimizers {
		var space search.Space
		for _, d := range m.Dims(gi) {
			space = append(space, d.Param.SearchParam(d.Name))
		}
		s, err := search.NewSampler(m.Method(), space, m.Search.Seed*1_000_003+int64(gi))
		if err != nil {
			return nil, fmt.Errorf("optimizers[%d]: %w", gi, err)
		}
		sr.samplers, sr.spaces = append(sr.samplers, s), append(sr.spaces, space)
	}
	return sr, nil
}

// suggest is the next configuration: the grid's next point, or a sample of the grid
// whose turn it is (grids take turns until each has its budget).
func (sr *searcher) suggest(st *search.State) (int, search.Point, error) {
	n := len(st.Candidates)
	if sr.grid != nil {
		if n >= len(sr.grid) {
			return 0, nil, fmt.Errorf("search: configuration %d asked of a grid of %d", n, len(sr.grid))
		}
		p := sr.grid[n]
		return p.Grid, sr.m.PointValues(p), nil
	}
	count := make([]int, len(sr.budget))
	for _, c := range st.Candidates {
		count[c.Grid]++
	}
	g := -1
	for gi := range sr.budget {
		if count[gi] < sr.budget[gi] && (g < 0 || count[gi] < count[g]) {
			g = gi
		}
	}
	if g < 0 {
		return 0, nil, errors.New("search: a configuration asked beyond the budget")
	}
	var history []search.Observation
	for _, c := range st.Candidates {
		if c.Grid == g {
			history = append(history, c.Observation())
		}
	}
	p, err := sr.samplers[g].Suggest(count[g], history)
	return g, p, err
}

// trials are a candidate's trials, one per seed.
func (sr *searcher) trials(c search.Candidate) ([]sweeps.Trial, error) {
	return sr.m.PointTrials(c.Grid, c.Point)
}

// iterate is the iterate the metric reads for an optimizer's trials.
func (sr *searcher) iterate(optimizer string) string {
	return training.ResolveIterate(optimizer, sr.m.Search.Iterate)
}

// metric is a completed trial's metric at iterate it, to minimize: a program's named
// metric to maximize is negated.
func (sr *searcher) metric(r *training.Result, it string) float64 {
	switch name := sr.m.MetricName(); name {
	case sweeps.MetricValLoss:
		return r.Val[it]
	case sweeps.MetricTestLoss:
		return r.Test[it]
	case sweeps.MetricTestPPL:
		return r.TestPPL[it]
	default:
		v, ok := r.Metrics[name]
		if !ok {
			return math.NaN()
		}
		return sr.sign() * v
	}
}

// named reports whether the search ranks by a program's named metric rather than a loss.
func (sr *searcher) named() bool { return sr.m.NamedMetric() }

// sign is −1 where the search maximizes its metric, which the search engine minimizes.
func (sr *searcher) sign() float64 { return sr.m.MetricSign() }
