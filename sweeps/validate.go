package sweeps

// The checks of a manifest: its own fields, its grids and tables, then its search and
// probes (search.go, probes.go), and last every trial's config, which a search checks at
// the bounds of its distributions.

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/training"
)

// nameRE is a name in the store: a manifest's, a table's, a segment of a prefix.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// validate checks a manifest as decoded. Its error is an Errors of every invalid field it
// finds, each an *fielderr.Error: the fields first, each on its own, then, once they all
// hold, what depends on them (the search, the size of the grid, the probes, every trial's
// config).
func (m *Manifest) validate() error {
	var errs Errors
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if !nameRE.MatchString(m.Name) {
		add(&fielderr.Error{Field: "name", Value: fmt.Sprintf("%q", m.Name), Reason: "must be 1–100 letters, digits, '.', '_' or '-', starting with a letter or digit"})
	}
	if len(m.Optimizers) == 0 && m.Trainer == nil {
		add(&fielderr.Error{Field: "optimizers", Value: "[]", Reason: "must list at least one optimizer grid"})
	}
	if len(m.Seeds) == 0 {
		add(&fielderr.Error{Field: "seeds", Value: "[]", Reason: "must list at least one seed"})
	}
	for i, s := range m.Seeds {
		if s < 0 {
			add(&fielderr.Error{Field: fmt.Sprintf("seeds[%d]", i), Value: s, Reason: "must be ≥ 0"})
		}
	}
	if m.MaxTrials < 0 {
		add(&fielderr.Error{Field: "max_trials", Value: m.MaxTrials, Reason: "must be ≥ 0"})
	}
	for gi, g := range m.Optimizers {
		if g.Name != training.SFAdamW && g.Name != training.AdamW {
			add(&fielderr.Error{Field: fmt.Sprintf("optimizers[%d].name", gi), Value: fmt.Sprintf("%q", g.Name), Reason: `must be "sfadamw" or "adamw"`})
		}
		for _, err := range m.checkGrid(gi, g) {
			add(err)
		}
	}
	add(m.checkTrainer())
	add(m.BatchTokens.check("batch_tokens", m.Sampled(), true))
	add(m.WarmupFrac.check("warmup_frac", m.Sampled(), false))
	for _, err := range m.checkTables() {
		add(err)
	}
	if p := m.Output.Prefix; p != "" {
		for _, seg := range strings.Split(p, "/") {
			if !nameRE.MatchString(seg) {
				add(&fielderr.Error{Field: "output.prefix", Value: fmt.Sprintf("%q", p), Reason: "must be '/'-separated names of letters, digits, '.', '_' or '-' (no '..', no leading '/')"})
				break
			}
		}
	}
	if len(errs) > 0 && m.paramsValid() {
		// the grids' values too, each field once: a config is checked for each seed, and
		// one stands in for seeds not given
		c := m.corners()
		if len(c.Seeds) == 0 {
			c.Seeds = []int{0}
		}
		named := map[string]bool{}
		for _, err := range errs {
			if e := (*fielderr.Error)(nil); errors.As(err, &e) {
				named[e.Field] = true
			}
		}
		_, cerrs := c.expand(true)
		for _, err := range cerrs {
			if e := (*fielderr.Error)(nil); !errors.As(err, &e) || !named[e.Field] {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if len(m.Optimizers) == 0 {
		m.Optimizers = []Grid{{Label: m.Trainer.Name}} // the program's own grid
	}
	add(m.validateSearch())
	if n := m.Count(); !m.Sampled() && n > m.maxTrials() {
		add(&fielderr.Error{Field: "optimizers", Value: fmt.Sprintf("%d trials", n), Reason: fmt.Sprintf("the grid expands to more than max_trials = %d; raise max_trials to confirm", m.maxTrials())})
	}
	add(m.checkProbes())
	if len(errs) > 0 {
		return errs
	}
	// every trial's config must be valid: a search's, at the bounds of its distributions
	if _, errs := m.corners().expand(true); len(errs) > 0 {
		return errs
	}
	return nil
}

// paramsValid reports whether every list and distribution of the manifest's grids is valid
// as such, so that its corners can be taken.
func (m *Manifest) paramsValid() bool {
	sampled := m.Sampled()
	ok := m.BatchTokens.check("batch_tokens", sampled, true) == nil && m.WarmupFrac.check("warmup_frac", sampled, false) == nil
	for _, g := range m.Optimizers {
		for _, p := range []Param{g.LR, g.Beta1, g.Beta2, g.C.Param, g.WeightDecay, g.BatchTokens} {
			ok = ok && p.check("", sampled, false) == nil
		}
	}
	return ok
}

// checkTables checks the tables asked for.
func (m *Manifest) checkTables() []error {
	var errs []error
	names := map[string]bool{}
	for i, t := range m.Tables {
		f := func(s string) string { return fmt.Sprintf("tables[%d].%s", i, s) }
		if t.Kind != "c_sensitivity" && t.Kind != "hyperparameters" {
			errs = append(errs, &fielderr.Error{Field: f("kind"), Value: fmt.Sprintf("%q", t.Kind), Reason: `must be "c_sensitivity" or "hyperparameters"`})
		}
		if !nameRE.MatchString(t.Name) {
			errs = append(errs, &fielderr.Error{Field: f("name"), Value: fmt.Sprintf("%q", t.Name), Reason: "must be 1–100 letters, digits, '.', '_' or '-'"})
		} else if names[t.Name] {
			errs = append(errs, &fielderr.Error{Field: f("name"), Value: t.Name, Reason: "another table has this name"})
		}
		names[t.Name] = true
		if t.Metric != "" && t.Metric != "test_ppl" && t.Metric != "val_loss" {
			errs = append(errs, &fielderr.Error{Field: f("metric"), Value: t.Metric, Reason: `must be "test_ppl" or "val_loss"`})
		}
		// its cells are optimizer settings, one trial a seed: trials that differ only in a
		// trainer's parameter would share a cell
		for _, p := range m.Parameters {
			if len(p.Values) > 1 || p.Dist != nil {
				errs = append(errs, &fielderr.Error{Field: f("kind"), Value: t.Kind, Reason: fmt.Sprintf("its cells are the optimizers' settings, and the trainer's parameter %s takes more than one value: the table parameters (written for every grid of parameters) shows them", p.Name)})
				break
			}
		}
	}
	return errs
}

// checkGrid checks grid gi's parameters, each on its own.
func (m *Manifest) checkGrid(gi int, g Grid) []error {
	var errs []error
	f := func(s string) string { return fmt.Sprintf("optimizers[%d].%s", gi, s) }
	if !g.LR.Set() {
		errs = append(errs, &fielderr.Error{Field: f("lr"), Value: "[]", Reason: "must list at least one learning rate"})
	}
	switch {
	case len(g.Betas) > 0 && (g.Beta1.Set() || g.Beta2.Set()):
		errs = append(errs, &fielderr.Error{Field: f("beta1"), Value: g.Beta1, Reason: "give betas as [beta1, beta2] pairs or beta1 and beta2 apart, not both"})
	case len(g.Betas) == 0 && !g.Beta1.Set():
		errs = append(errs, &fielderr.Error{Field: f("betas"), Value: "[]", Reason: "must list at least one [beta1, beta2] pair (or give beta1 and beta2)"})
	case len(g.Betas) == 0 && !g.Beta2.Set():
		errs = append(errs, &fielderr.Error{Field: f("beta2"), Value: "[]", Reason: "must give beta2 with beta1"})
	}
	if g.Name == training.AdamW && g.C.Set() {
		errs = append(errs, &fielderr.Error{Field: f("c"), Value: g.C, Reason: "applies to sfadamw only"})
	}
	if !m.BatchTokens.Set() && !g.BatchTokens.Set() {
		errs = append(errs, &fielderr.Error{Field: "batch_tokens", Value: "[]", Reason: "must give at least one batch size in tokens"})
	}
	sampled := m.Sampled()
	for _, p := range []struct {
		name  string
		p     Param
		whole bool
	}{{"lr", g.LR, false}, {"beta1", g.Beta1, false}, {"beta2", g.Beta2, false}, {"c", g.C.Param, false}, {"weight_decay", g.WeightDecay, false}, {"batch_tokens", g.BatchTokens, true}} {
		if err := p.p.check(f(p.name), sampled, p.whole); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// corners is the manifest with each distribution replaced by its bounds: the grid whose
// configurations bound every one a search may sample.
func (m *Manifest) corners() *Manifest {
	c := *m
	c.Search = nil
	c.MaxTrials = math.MaxInt
	fix := func(p Param) Param { return Param{Values: p.corners()} }
	c.BatchTokens, c.WarmupFrac = fix(m.BatchTokens), fix(m.WarmupFrac)
	c.Parameters = slices.Clone(m.Parameters)
	for i, p := range c.Parameters {
		if p.Dist != nil {
			c.Parameters[i] = Parameter{Name: p.Name, Values: []any{p.Dist.Min, p.Dist.Max}, Line: p.Line}
		}
	}
	c.Optimizers = slices.Clone(m.Optimizers)
	for i, g := range c.Optimizers {
		g.LR, g.Beta1, g.Beta2, g.WeightDecay, g.BatchTokens = fix(g.LR), fix(g.Beta1), fix(g.Beta2), fix(g.WeightDecay), fix(g.BatchTokens)
		g.C.Param = fix(g.C.Param)
		c.Optimizers[i] = g
	}
	return &c
}
