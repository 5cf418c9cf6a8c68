package sweeps

// The search block of a manifest: how its configurations are chosen (the grid, random
// sampling or TPE), the metric that ranks them, and early stopping at rungs.

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/training"
)

// Search methods.
const (
	MethodGrid   = "grid"   // every point of the grids (the default)
	MethodRandom = "random" // Trials configurations of each grid, sampled independently
	MethodTPE    = "tpe"    // Trials configurations of each grid, by the tree-structured Parzen estimator
)

// Metrics a search ranks by (lower is better).
const (
	MetricValLoss  = "val_loss"
	MetricTestLoss = "test_loss"
	MetricTestPPL  = "test_ppl"
)

// Search is how a manifest's configurations are chosen and stopped.
//
// A configuration is a point of a grid's parameters; it trains once per seed, and its
// metric is the mean over its seeds. Early stopping decides at rungs, evaluation steps
// where every trial also writes a checkpoint: at a rung, configurations are ranked by the
// validation loss of the rung's iterate, the metric's unless early_stopping names one (the
// test split is only read at the end, so it never steers the search). A stopped configuration is a result; a promoted one resumes
// from its checkpoint at the rung.
type Search struct {
	Method        string         `yaml:"method,omitempty"` // grid (default), random or tpe
	Trials        int            `yaml:"trials,omitempty"` // configurations of each grid; grid: all of its points (or a random subset of so many)
	Seed          int64          `yaml:"seed,omitempty"`   // the sampler's seed, and the grid's order under early stopping
	Metric        string         `yaml:"metric,omitempty"` // val_loss (default), test_loss or test_ppl
	Iterate       string         `yaml:"iterate,omitempty"`
	Goal          string         `yaml:"goal,omitempty"`     // minimize (the only goal of a loss)
	Parallel      int            `yaml:"parallel,omitempty"` // configurations training at once; 0: as many as the sweep's window of trials allows
	EarlyStopping *EarlyStopping `yaml:"early_stopping,omitempty"`
}

// Searched reports whether the manifest runs as a search (configurations chosen or
// stopped as results come) rather than as a grid planned whole.
func (m *Manifest) Searched() bool {
	s := m.Search
	return s != nil && (s.method() != MethodGrid || s.EarlyStopping != nil)
}

func (s *Search) method() string {
	if s == nil || s.Method == "" {
		return MethodGrid
	}
	return s.Method
}

// Method is the search's method: grid, random or tpe.
func (m *Manifest) Method() string { return m.Search.method() }

// Sampled reports whether the search samples its configurations (random or tpe).
func (m *Manifest) Sampled() bool { return m.Method() != MethodGrid }

// NamedMetric reports whether the search ranks by a metric a program names (one of its
// metrics lines' keys), rather than by the validation loss (val_loss, test_loss and
// test_ppl rank their rungs by the validation loss).
func (m *Manifest) NamedMetric() bool {
	switch m.MetricName() {
	case MetricValLoss, MetricTestLoss, MetricTestPPL:
		return false
	}
	return true
}

// MetricSign is −1 where the search maximizes its metric, which the search engine
// minimizes (its state holds the metric times the sign), else 1.
func (m *Manifest) MetricSign() float64 {
	if m.Search != nil && m.Search.Goal == "maximize" {
		return -1
	}
	return 1
}

// RungMetric is what a search ranks a rung before the end by: its named metric
// (NamedMetric), or the validation loss.
func (m *Manifest) RungMetric() string {
	if m.NamedMetric() {
		return m.MetricName()
	}
	return MetricValLoss
}

// MetricName is the metric the search ranks by, val_loss by default.
func (m *Manifest) MetricName() string {
	if m.Search == nil || m.Search.Metric == "" {
		return MetricValLoss
	}
	return m.Search.Metric
}

// validateSearch checks the search block.
func (m *Manifest) validateSearch() error {
	s := m.Search
	if s == nil {
		return nil
	}
	if k := s.method(); k != MethodGrid && k != MethodRandom && k != MethodTPE {
		return &fielderr.Error{Field: "search.method", Value: fmt.Sprintf("%q", s.Method), Reason: `must be "grid", "random" or "tpe"`}
	}
	if s.Trials < 0 || (s.method() != MethodGrid && s.Trials == 0) {
		return &fielderr.Error{Field: "search.trials", Value: s.Trials, Reason: "must be ≥ 1: the configurations of each grid to try"}
	}
	if s.Parallel < 0 {
		return &fielderr.Error{Field: "search.parallel", Value: s.Parallel, Reason: "must be ≥ 0 (0: as many as the window allows)"}
	}
	if s.Metric != "" && s.Metric != MetricValLoss && s.Metric != MetricTestLoss && s.Metric != MetricTestPPL && m.Trainer == nil {
		return &fielderr.Error{Field: "search.metric", Value: fmt.Sprintf("%q", s.Metric), Reason: `must be "val_loss", "test_loss" or "test_ppl"`}
	}
	if s.Goal != "" && s.Goal != "minimize" && (m.Trainer == nil || s.Goal != "maximize" || s.Metric == "" || s.Metric == MetricValLoss || s.Metric == MetricTestLoss || s.Metric == MetricTestPPL) {
		return &fielderr.Error{Field: "search.goal", Value: fmt.Sprintf("%q", s.Goal), Reason: "the metrics are losses: the goal is minimize"}
	}
	if err := m.checkIterate("search.iterate", s.Iterate); err != nil {
		return err
	}
	if n := s.Trials * len(m.Optimizers) * len(m.Seeds); m.Sampled() && (s.Trials > m.maxTrials() || n > m.maxTrials()) {
		return &fielderr.Error{Field: "search.trials", Value: s.Trials, Reason: fmt.Sprintf("%d configurations × %d grids × %d seeds is more than max_trials = %d; raise max_trials to confirm", s.Trials, len(m.Optimizers), len(m.Seeds), m.maxTrials())}
	}
	return m.validateEarlyStopping()
}

// checkIterate checks that every optimizer grid's trials have iterate it, which field
// names ("" and ewa resolve by optimizer).
func (m *Manifest) checkIterate(field, it string) error {
	if it == "" || it == IterEWA {
		return nil
	}
	for _, g := range m.Optimizers {
		if its := training.Iterates(g.Name); !slices.Contains(its, it) {
			return &fielderr.Error{Field: field, Value: fmt.Sprintf("%q", it),
				Reason: fmt.Sprintf("%s trials have %s (or ewa for the EWA of the evaluated one; leave it out for the evaluated one)", g.Name, strings.Join(its, ", "))}
		}
	}
	return nil
}

// Dim is one searched parameter of a grid: its name (ParamLR, ...) and its values or
// distribution.
type Dim struct {
	Name  string
	Param Param
	Whole bool // whole numbers only
	// Index marks a choice among a program parameter's values that are not numbers: the
	// dimension's values are their indices.
	Index bool
}

// Dims are the parameters of grid gi that take more than one value, in a fixed order: the
// space a random or TPE search samples. (β1, β2) pairs are one choice of index, ParamBetas.
func (m *Manifest) Dims(gi int) []Dim {
	g := m.Optimizers[gi]
	var ds []Dim
	add := func(name string, p Param, whole bool) {
		if p.Searched() {
			ds = append(ds, Dim{Name: name, Param: p, Whole: whole})
		}
	}
	add(ParamLR, g.LR, false)
	if len(g.Betas) > 1 {
		idx := make([]float64, len(g.Betas))
		for i := range idx {
			idx[i] = float64(i)
		}
		ds = append(ds, Dim{Name: ParamBetas, Param: Param{Values: idx}, Whole: true})
	}
	add(ParamBeta1, g.Beta1, false)
	add(ParamBeta2, g.Beta2, false)
	add(ParamC, g.C.Param, false)
	add(ParamWeightDecay, g.WeightDecay, false)
	add(ParamWarmupFrac, m.WarmupFrac, false)
	add(ParamBatchTokens, g.batchTokens(m), true)
	for _, p := range m.Parameters {
		if p.Searched() {
			ds = append(ds, p.Dim())
		}
	}
	return ds
}

// PointTrials are the trials of a configuration of grid gi, one per seed: values gives
// each searched parameter (Dims) its value, the others take their only one.
func (m *Manifest) PointTrials(gi int, values map[string]float64) ([]Trial, error) {
	g := m.Optimizers[gi]
	pick := func(name string, p Param) (float64, bool) {
		if v, ok := values[name]; ok {
			return v, true
		}
		return p.Only()
	}
	var p Point
	p.Grid, p.Optimizer, p.Label = gi, g.Name, g.Label
	var err error
	if p.Params, err = m.Parameters.at(values); err != nil {
		return nil, fmt.Errorf("configuration of grid %d: %w", gi, err)
	}
	if g.program() {
		bt, _ := pick(ParamBatchTokens, g.batchTokens(m))
		p.BatchTokens = int(math.Round(bt))
		return m.seedTrials(g, p)
	}
	var ok bool
	if p.LR, ok = pick(ParamLR, g.LR); !ok {
		return nil, fmt.Errorf("configuration of grid %d has no %s", gi, ParamLR)
	}
	switch {
	case len(g.Betas) == 1:
		p.Beta1, p.Beta2 = g.Betas[0][0], g.Betas[0][1]
	case len(g.Betas) > 1 && !has(values, ParamBeta1):
		i := int(values[ParamBetas])
		if i < 0 || i >= len(g.Betas) {
			return nil, fmt.Errorf("configuration of grid %d: betas index %v outside the list", gi, values[ParamBetas])
		}
		p.Beta1, p.Beta2 = g.Betas[i][0], g.Betas[i][1]
	case len(g.Betas) > 1:
		p.Beta1, p.Beta2 = values[ParamBeta1], values[ParamBeta2]
	default:
		b1, ok1 := pick(ParamBeta1, g.Beta1)
		b2, ok2 := pick(ParamBeta2, g.Beta2)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("configuration of grid %d has no beta1 and beta2", gi)
		}
		p.Beta1, p.Beta2 = b1, b2
	}
	if g.C.Set() {
		p.C, _ = pick(ParamC, g.C.Param)
	}
	if v, ok := pick(ParamWeightDecay, g.WeightDecay); ok {
		p.WeightDecay = &v
	}
	if v, ok := pick(ParamWarmupFrac, m.WarmupFrac); ok {
		p.WarmupFrac = &v
	}
	bt, ok := pick(ParamBatchTokens, g.batchTokens(m))
	if !ok {
		return nil, fmt.Errorf("configuration of grid %d has no batch_tokens", gi)
	}
	p.BatchTokens = int(math.Round(bt))
	return m.seedTrials(g, p)
}

// seedTrials are the trials of the configuration p of grid g, one per seed.
func (m *Manifest) seedTrials(g Grid, p Point) ([]Trial, error) {
	trials := make([]Trial, 0, len(m.Seeds))
	for _, seed := range m.Seeds {
		p.Seed = seed
		cfg := m.trialConfig(g, p)
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
		trials = append(trials, Trial{ID: cfg.Hash()[:IDLen], Config: cfg.Canonical(), Points: []Point{p}})
	}
	return trials, nil
}

// SearchPlan is what a search will run: its configurations and their cost.
type SearchPlan struct {
	Method   string     `json:"method"`
	Configs  []int      `json:"configs"` // configurations of each grid
	Seeds    int        `json:"seeds"`
	Space    [][]string `json:"space"` // each grid's searched parameters, as the manifest gives them
	Metric   string     `json:"metric"`
	Rule     string     `json:"rule,omitempty"`
	Rungs    []int      `json:"rungs,omitempty"`
	Halving  []int      `json:"halving,omitempty"` // configurations reaching each rung, if halving keeps 1/eta of each
	Worst    Cost       `json:"worst_case"`        // every configuration trained to the end
	Expected *Cost      `json:"halving_cost,omitempty"`
}

// Plan is the search's plan. Its worst case has every configuration trained to the end
// with its grid's largest batch; Expected, for halving, has ⌊n/eta^k⌋ of them reach rung k.
func (m *Manifest) Plan() (SearchPlan, error) {
	p := SearchPlan{Method: m.Method(), Seeds: len(m.Seeds), Metric: m.MetricName(), Rungs: m.Rungs()}
	if m.Search != nil && m.Search.EarlyStopping != nil {
		p.Rule = m.Search.EarlyStopping.Rule
	}
	var grid []Trial
	if !m.Sampled() {
		var err error
		if grid, err = m.Expand(); err != nil {
			return p, err
		}
	}
	steps := int64(m.Steps)
	total := 0
	for gi := range m.Optimizers {
		n := m.GridConfigs(grid, gi)
		if m.Search != nil && m.Search.Trials > 0 {
			n = min(n, m.Search.Trials)
		}
		if m.Sampled() {
			n = m.Search.Trials
		}
		p.Configs = append(p.Configs, n)
		total += n
		var space []string
		for _, d := range m.Dims(gi) {
			space = append(space, d.Name+": "+d.Param.String())
		}
		p.Space = append(p.Space, space)
		// the costliest configuration: the grid's largest batch
		big := m.corners()
		big.Seeds = m.Seeds[:1]
		big.Optimizers = []Grid{big.Optimizers[gi]}
		if bts := m.Optimizers[gi].batchTokens(m).corners(); len(bts) > 0 { // a program's own grid may have none
			big.Optimizers[0].BatchTokens = Param{Values: []float64{slices.Max(bts)}}
		}
		ts, err := big.Expand()
		if err != nil || len(ts) == 0 {
			return p, err
		}
		c := TotalCost(ts[:1])
		k := int64(n * len(m.Seeds))
		p.Worst.Trials += int(k)
		p.Worst.Steps += k * steps
		p.Worst.Tokens += k * c.Tokens
		p.Worst.FLOPs += float64(k) * c.FLOPs
	}
	m.expectedCost(&p, total)
	return p, nil
}

// GridConfigs counts the configurations of grid gi among the expanded trials: its
// trials of the first seed.
func (m *Manifest) GridConfigs(trials []Trial, gi int) int {
	n := 0
	for _, t := range trials {
		if p := t.Points[0]; p.Grid == gi && p.Seed == m.Seeds[0] {
			n++
		}
	}
	return n
}

// Values are a point's parameters by name (ParamLR, ...), as a search records them.
func (p Point) Values() map[string]float64 {
	v := map[string]float64{ParamLR: p.LR, ParamBeta1: p.Beta1, ParamBeta2: p.Beta2, ParamC: p.C, ParamBatchTokens: float64(p.BatchTokens)}
	if p.WeightDecay != nil {
		v[ParamWeightDecay] = *p.WeightDecay
	}
	if p.WarmupFrac != nil {
		v[ParamWarmupFrac] = *p.WarmupFrac
	}
	for k, x := range p.Params {
		if f, ok := asNumber(x); ok {
			v[k] = f
		}
	}
	return v
}

// PointValues are a grid point's parameters by name, as a search samples them: Values,
// with a program parameter whose values are not numbers given as the index of its value.
func (m *Manifest) PointValues(p Point) map[string]float64 {
	v := p.Values()
	for _, q := range m.Parameters {
		if d := q.Dim(); d.Index {
			if i := slices.IndexFunc(q.Values, func(x any) bool { return reflect.DeepEqual(x, p.Params[q.Name]) }); i >= 0 {
				v[q.Name] = float64(i)
			}
		}
	}
	return v
}

// GridPoints are the configurations of a grid search in grid order, each once: the
// points of the expanded trials of the first seed.
func (m *Manifest) GridPoints(trials []Trial) []Point {
	var ps []Point
	for _, t := range trials {
		if p := t.Points[0]; p.Seed == m.Seeds[0] {
			ps = append(ps, p)
		}
	}
	return ps
}

func has(values map[string]float64, name string) bool { _, ok := values[name]; return ok }
