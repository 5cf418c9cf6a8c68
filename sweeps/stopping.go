package sweeps

// Early stopping in a manifest's search block: the rule, its rungs and grace period, the
// iterate judged at a rung, and the cost halving plans.

import (
	"fmt"
	"math"
	"slices"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/search"
	"github.com/sfsweep/sfsweep/training"
)

// Early-stopping rules.
const (
	RuleASHA        = search.ASHA        // asynchronous successive halving, with promotions
	RuleSyncHalving = search.SyncHalving // synchronous successive halving: a rung decides once all of it is in
	RuleMedian      = search.Median      // the median stopping rule
	RuleHyperband   = search.Hyperband   // asynchronous Hyperband: ASHA in brackets that start at later rungs
)

// EarlyStopping is a rule and its rungs. The rungs are Rungs, or else MinSteps·Eta^k below
// the run's steps (halving, hyperband) or every MinSteps steps (median); the end of the
// run is the last rung. Rungs before the grace period are not judged.
type EarlyStopping struct {
	Rule      string `yaml:"rule"`
	Rungs     []int  `yaml:"rungs,omitempty"`
	MinSteps  int    `yaml:"min_steps,omitempty"`
	Eta       int    `yaml:"eta,omitempty"`        // halving: keep the best 1/eta of a rung; default 3
	MinTrials int    `yaml:"min_trials,omitempty"` // median: configurations completed before it stops any; default 3
	// Brackets is hyperband's number of brackets: bracket s starts its configurations at
	// rung s; 0 (the default) is one bracket a rung, the end included.
	Brackets int `yaml:"brackets,omitempty"`
	// Grace is the share of the run's steps before which no configuration is stopped (Ray
	// Tune's grace_period), GraceSteps the same in steps; at most one. Default: none.
	Grace      float64 `yaml:"grace,omitempty"`
	GraceSteps int     `yaml:"grace_steps,omitempty"`
	// Finalists is the least a rung of sync_halving keeps, max(⌊n/eta⌋, finalists) of its
	// n, so that as many configurations reach the end; default none: ⌊n/eta⌋.
	Finalists int `yaml:"finalists,omitempty"`
	// Iterate is the iterate whose validation loss a rung ranks by (x, y, ewa_x, ewa_y, w,
	// ewa_w, or ewa); default: the search's iterate, which the metric reads at the end.
	Iterate string `yaml:"iterate,omitempty"`
}

// DefaultEta and DefaultMedianMinTrials are EarlyStopping's defaults.
const (
	DefaultEta             = 3
	DefaultMedianMinTrials = 3
)

// Rungs are the steps at which early stopping decides, the end of the run last: those at
// or after the grace period (search.Judged). nil without early stopping.
func (m *Manifest) Rungs() []int {
	if m.Search == nil || m.Search.EarlyStopping == nil {
		return nil
	}
	return search.Judged(m.allRungs(), m.GraceSteps())
}

// allRungs are the rungs as the manifest lists or derives them, the grace period aside.
func (m *Manifest) allRungs() []int {
	es := m.Search.EarlyStopping
	if len(es.Rungs) > 0 {
		return append(slices.Clone(es.Rungs), m.Steps)
	}
	var rungs []int
	for r := es.MinSteps; r > 0 && r < m.Steps; {
		rungs = append(rungs, r)
		if es.Rule == RuleMedian {
			r += es.MinSteps
		} else {
			r *= es.eta()
		}
	}
	return append(rungs, m.Steps)
}

// GraceSteps is the step before which early stopping judges nothing: grace_steps, or
// ⌈grace·steps⌉; 0 without a grace period.
func (m *Manifest) GraceSteps() int {
	es := m.Search.EarlyStopping
	if es == nil {
		return 0
	}
	if es.GraceSteps > 0 {
		return es.GraceSteps
	}
	return int(math.Ceil(es.Grace * float64(m.Steps)))
}

// Brackets is hyperband's number of brackets (0: one a rung); 0 under the other rules.
func (m *Manifest) Brackets() int {
	if es := m.Search.EarlyStopping; es != nil && es.Rule == RuleHyperband {
		return es.Brackets
	}
	return 0
}

// rungField names the manifest field that gives rung r: its entry in rungs, or min_steps.
func (es *EarlyStopping) rungField(r int) string {
	if i := slices.Index(es.Rungs, r); i >= 0 {
		return fmt.Sprintf("search.early_stopping.rungs[%d]", i)
	}
	return "search.early_stopping.min_steps"
}

// EarlyRungFrac is the share of a run before which a rung judges too early: successive
// halving's short-horizon bias (configurations with a high LR lead at the start and fall
// behind later) stops good configurations there.
const EarlyRungFrac = 0.2

// RungWarnings says of each judged rung before the end that comes too early to judge on,
// why: inside the warmup (the LR has not reached its peak, so configurations are ranked
// on how they warm up) or in the first EarlyRungFrac of the run. Neither is an error: the
// search runs as written, and validate, run and submit print these. A grace period
// (grace, grace_steps) or hyperband's later brackets are the remedies.
func (m *Manifest) RungWarnings() []string {
	rungs := m.Rungs()
	if len(rungs) < 2 {
		return nil
	}
	warmup := training.DefaultWarmupFrac
	if m.WarmupFrac.Set() {
		warmup = slices.Max(m.WarmupFrac.corners())
	}
	warmupSteps, early := int(warmup*float64(m.Steps)), int(EarlyRungFrac*float64(m.Steps))
	var out []string
	for _, r := range rungs[:len(rungs)-1] {
		field := m.Search.EarlyStopping.rungField(r)
		switch {
		case r <= warmupSteps:
			out = append(out, fmt.Sprintf("%s: rung at step %d is inside the warmup (its first %d steps): configurations are ranked before their learning rate reaches its peak", field, r, warmupSteps))
		case r < early:
			out = append(out, fmt.Sprintf("%s: rung at step %d is in the first %.0f%% of the run (before step %d): early rungs favour configurations that lead at the start, and may stop the best one", field, r, 100*EarlyRungFrac, early))
		}
	}
	out = append(out, m.bracketWarnings(rungs)...)
	out = append(out, m.keepWarnings(rungs)...)
	return append(out, m.finalistWarnings(rungs)...)
}

// keepWarnings says of each rung of asha or sync_halving that its share by eta keeps no
// configuration (⌊n/η⌋ = 0 of n < η): the search takes its best one on all the same,
// so that it finishes a configuration, but the rung does not halve as written.
func (m *Manifest) keepWarnings(rungs []int) []string {
	if r := m.Search.EarlyStopping.Rule; r != RuleASHA && r != RuleSyncHalving {
		return nil
	}
	p, err := m.Plan()
	if err != nil || len(p.Halving) != len(rungs) {
		return nil
	}
	var out []string
	for k, n := range p.Halving[:len(rungs)-1] {
		if n > 0 && n/m.Eta() == 0 && m.Finalists() == 0 {
			out = append(out, fmt.Sprintf("%s: rung at step %d: ⌊%d/%d⌋ = 0 of its %d configurations go on by eta; it keeps the best one, so that the search finishes a configuration (more configurations, or a smaller eta, halve as written)",
				m.Search.EarlyStopping.rungField(rungs[k]), rungs[k], n, m.Eta(), n))
		}
	}
	return out
}

// finalistWarnings says why a sync_halving plan that takes one configuration to the end
// may miss the best: the ranking at the last rung before the end can still be one place
// off (on sweeps/stopping-suite.sh's grids the best ranked second at half the run), and
// one finalist leaves no room for it.
func (m *Manifest) finalistWarnings(rungs []int) []string {
	if m.Search.EarlyStopping.Rule != RuleSyncHalving {
		return nil
	}
	p, err := m.Plan()
	if err != nil || len(p.Halving) < 2 || p.Halving[len(p.Halving)-1] != 1 || p.Halving[len(p.Halving)-2] < 2 {
		return nil // validation reports an error; or halving keeps more, or nothing to choose from
	}
	last := rungs[len(rungs)-2]
	return []string{fmt.Sprintf("search.early_stopping.finalists: one configuration of the %d at step %d goes on to the end: the best may still rank second there; finalists: 2 keeps two", p.Halving[len(p.Halving)-2], last)}
}

// bracketWarnings says of each hyperband bracket that cannot take a configuration to the
// end why: a bracket that halves h times promotes ⌊n/eta⌋ of a rung's n, so it needs
// eta^h of them, and its share of the configurations is smaller.
func (m *Manifest) bracketWarnings(rungs []int) []string {
	if m.Search.EarlyStopping.Rule != RuleHyperband {
		return nil
	}
	p, err := m.Plan()
	if err != nil {
		return nil // validation reports it
	}
	total := 0
	for _, n := range p.Configs {
		total += n
	}
	eta := m.Eta()
	var out []string
	for b, n := range (search.Config{Rule: search.Hyperband, Rungs: rungs, Eta: eta, Brackets: m.Brackets()}).Allot(total) {
		need := 1
		for range len(rungs) - 1 - b {
			need = min(need*eta, total+1)
		}
		if n < need {
			out = append(out, fmt.Sprintf("search.early_stopping.brackets: bracket %d gets %d of the %d configurations, from step %d; it needs %d (eta^%d) to take one to the end, so it only stops them", b, n, total, rungs[b], need, len(rungs)-1-b))
		}
	}
	return out
}

func (es *EarlyStopping) eta() int {
	if es.Eta == 0 {
		return DefaultEta
	}
	return es.Eta
}

// Eta is the halving rate of early stopping (DefaultEta if not given).
func (m *Manifest) Eta() int { return m.Search.EarlyStopping.eta() }

// Finalists is the least a rung of sync_halving keeps (0: none given).
func (m *Manifest) Finalists() int {
	if es := m.Search.EarlyStopping; es != nil {
		return es.Finalists
	}
	return 0
}

// MedianMinTrials is the median rule's min_trials (DefaultMedianMinTrials if not given).
func (m *Manifest) MedianMinTrials() int {
	if n := m.Search.EarlyStopping.MinTrials; n > 0 {
		return n
	}
	return DefaultMedianMinTrials
}

// RungIterate is the iterate a rung ranks an optimizer's trials by: early_stopping's
// iterate, else the search's (which the metric reads at the end).
func (m *Manifest) RungIterate(optimizer string) string {
	it := m.Search.Iterate
	if es := m.Search.EarlyStopping; es != nil && es.Iterate != "" {
		it = es.Iterate
	}
	return training.ResolveIterate(optimizer, it)
}

// validateEarlyStopping checks the search block's early_stopping.
func (m *Manifest) validateEarlyStopping() error {
	es := m.Search.EarlyStopping
	if es == nil {
		return nil
	}
	switch es.Rule {
	case RuleASHA, RuleSyncHalving, RuleMedian, RuleHyperband:
	default:
		return &fielderr.Error{Field: "search.early_stopping.rule", Value: fmt.Sprintf("%q", es.Rule), Reason: `must be "asha", "sync_halving", "median" or "hyperband"`}
	}
	if es.Eta != 0 && es.Eta < 2 {
		return &fielderr.Error{Field: "search.early_stopping.eta", Value: es.Eta, Reason: "must be ≥ 2: each rung keeps 1/eta of the one below"}
	}
	if es.MinTrials < 0 {
		return &fielderr.Error{Field: "search.early_stopping.min_trials", Value: es.MinTrials, Reason: "must be ≥ 1"}
	}
	if es.Finalists < 0 {
		return &fielderr.Error{Field: "search.early_stopping.finalists", Value: es.Finalists, Reason: "must be ≥ 1 (0: none, ⌊n/eta⌋ alone)"}
	}
	if es.Finalists != 0 && es.Rule != RuleSyncHalving {
		return &fielderr.Error{Field: "search.early_stopping.finalists", Value: es.Finalists, Reason: fmt.Sprintf("finalists are %s's; %s has none", RuleSyncHalving, es.Rule)}
	}
	if es.Brackets != 0 && es.Rule != RuleHyperband {
		return &fielderr.Error{Field: "search.early_stopping.brackets", Value: es.Brackets, Reason: fmt.Sprintf("brackets are hyperband's; %s has none", es.Rule)}
	}
	if es.Brackets < 0 {
		return &fielderr.Error{Field: "search.early_stopping.brackets", Value: es.Brackets, Reason: "must be ≥ 1 (0: one a rung)"}
	}
	if es.Grace < 0 || es.Grace >= 1 || math.IsNaN(es.Grace) {
		return &fielderr.Error{Field: "search.early_stopping.grace", Value: es.Grace, Reason: "must be a share of the run's steps in [0, 1)"}
	}
	if es.GraceSteps < 0 || es.GraceSteps >= m.Steps {
		return &fielderr.Error{Field: "search.early_stopping.grace_steps", Value: es.GraceSteps, Reason: fmt.Sprintf("must be in [0, steps = %d)", m.Steps)}
	}
	if es.Grace > 0 && es.GraceSteps > 0 {
		return &fielderr.Error{Field: "search.early_stopping.grace_steps", Value: es.GraceSteps, Reason: fmt.Sprintf("give grace (%g of the run) or grace_steps, not both", es.Grace)}
	}
	if err := m.checkIterate("search.early_stopping.iterate", es.Iterate); err != nil {
		return err
	}
	if len(es.Rungs) == 0 && es.MinSteps <= 0 {
		return &fielderr.Error{Field: "search.early_stopping.min_steps", Value: es.MinSteps, Reason: "must be ≥ 1, or list the rungs"}
	}
	all := m.allRungs()
	if len(all) < 2 {
		return &fielderr.Error{Field: "search.early_stopping.min_steps", Value: es.MinSteps, Reason: fmt.Sprintf("must be below steps = %d: early stopping needs a rung before the end", m.Steps)}
	}
	for i, r := range all[:len(all)-1] {
		if r < 1 || r >= m.Steps || (i > 0 && r <= all[i-1]) {
			return &fielderr.Error{Field: es.rungField(r), Value: r, Reason: fmt.Sprintf("rungs must increase within [1, steps = %d)", m.Steps)}
		}
	}
	rungs := m.Rungs()
	if len(rungs) < 2 {
		field, v := "search.early_stopping.grace", any(es.Grace)
		if es.GraceSteps > 0 {
			field, v = "search.early_stopping.grace_steps", es.GraceSteps
		}
		return &fielderr.Error{Field: field, Value: v, Reason: fmt.Sprintf("no rung of %v comes at or after step %d: nothing would be judged", all[:len(all)-1], m.GraceSteps())}
	}
	if es.Brackets > len(rungs) {
		return &fielderr.Error{Field: "search.early_stopping.brackets", Value: es.Brackets, Reason: fmt.Sprintf("the rungs %v (the end included) start at most %d brackets", rungs, len(rungs))}
	}
	for _, r := range rungs[:len(rungs)-1] {
		if m.Trainer != nil && !m.Trainer.native(m) {
			break // the program evaluates and checkpoints as it will
		}
		if m.EvalEvery == 0 || r%m.EvalEvery != 0 {
			return &fielderr.Error{Field: es.rungField(r), Value: r, Reason: fmt.Sprintf("rung %d must be an evaluation step (a multiple of eval_every = %d)", r, m.EvalEvery)}
		}
		if m.CheckpointEvery == 0 || r%m.CheckpointEvery != 0 {
			return &fielderr.Error{Field: es.rungField(r), Value: r, Reason: fmt.Sprintf("rung %d must be a checkpoint step (a multiple of checkpoint_every = %d): a promoted trial resumes there", r, m.CheckpointEvery)}
		}
	}
	if m.KeepCheckpoints > 0 {
		return &fielderr.Error{Field: "keep_checkpoints", Value: m.KeepCheckpoints, Reason: "early stopping resumes promoted trials from their rung's checkpoint: keep them all (0)"}
	}
	return nil
}

// expectedCost sets p's Halving and Expected for the halving rules: ⌊n/eta^k⌋ of n
// configurations reach rung k (under sync_halving, each rung keeps at least finalists of
// those that reach it); under hyperband, of each bracket's share (search's Config.Allot),
// from the bracket's first rung.
func (m *Manifest) expectedCost(p *SearchPlan, total int) {
	if p.Rule != RuleASHA && p.Rule != RuleSyncHalving && p.Rule != RuleHyperband {
		return
	}
	shares := []int{total} // bracket 0 alone
	if p.Rule == RuleHyperband {
		shares = search.Config{Rule: search.Hyperband, Rungs: p.Rungs, Eta: m.Eta(), Brackets: m.Brackets()}.Allot(total)
	}
	p.Halving = make([]int, len(p.Rungs))
	e := &Cost{Trials: p.Worst.Trials}
	for b, n := range shares {
		prev := 0
		for k := b; k < len(p.Rungs); k++ {
			p.Halving[k] += n
			e.Steps += int64(n*len(m.Seeds)) * int64(p.Rungs[k]-prev)
			prev, n = p.Rungs[k], max(n/m.Eta(), min(n, max(m.Finalists(), 1)))
		}
	}
	perStep := p.Worst.FLOPs / float64(p.Worst.Steps)
	tokensPerStep := float64(p.Worst.Tokens) / float64(p.Worst.Steps)
	e.Tokens, e.FLOPs = int64(float64(e.Steps)*tokensPerStep), float64(e.Steps)*perStep
	p.Expected = e
}
