// Package sweeps is the sweep manifest: its YAML schema, validation with errors that name
// the field, the value, the reason and the line, and the expansion of its grids into
// trials with content-addressed IDs. Refined SF-AdamW with C = 1/(1−β1) is the vanilla
// trial (training.Config.Canonical), so such a grid point runs once and fills both cells.
package sweeps

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sfsweep/sfsweep/internal/probe"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/training/backend"
)

// Manifest is a sweep: the shared settings of its trials, per-optimizer grids, the probes
// to run on each trial, and the tables to build from the results.
type Manifest struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`

	// The run settings its trials share, under the keys of config.json.
	training.Setup `yaml:",inline"`
	training.Loop  `yaml:",inline"`

	BatchTokens Param   `yaml:"batch_tokens"` // one value, a grid, or a distribution to sample
	WarmupFrac  Param   `yaml:"warmup_frac,omitempty"`
	Seeds       IntList `yaml:"seeds"`

	Optimizers []Grid    `yaml:"optimizers"`
	Search     *Search   `yaml:"search,omitempty"`
	Probes     probe.Set `yaml:"probes,omitempty"`
	Tables     []Table   `yaml:"tables,omitempty"`
	MaxTrials  int       `yaml:"max_trials,omitempty"` // refuse larger expansions (default 10,000)
	Output     Output    `yaml:"output,omitempty"`
	Tags       []string  `yaml:"tags,omitempty"`
}

// Grid is one optimizer's grid: every combination of its lists is a trial, or, in a
// random or TPE search, the space its configurations are sampled from. Each searched
// parameter is a Param: one value, a list, or a distribution.
type Grid struct {
	Name        string     `yaml:"name"`            // "sfadamw" or "adamw"
	Label       string     `yaml:"label,omitempty"` // row label in tables, e.g. "SF-AdamW", "AdamW (cosine)"
	LR          Param      `yaml:"lr"`
	Betas       []BetaPair `yaml:"betas,omitempty"` // (β1, β2) pairs; or beta1 and beta2 apart
	Beta1       Param      `yaml:"beta1,omitempty"`
	Beta2       Param      `yaml:"beta2,omitempty"`
	C           CParam     `yaml:"c,omitempty"` // refined SF-AdamW: values, or "vanilla"
	WeightDecay Param      `yaml:"weight_decay,omitempty"`
	GradClip    *float64   `yaml:"grad_clip,omitempty"`
	Eps         float64    `yaml:"eps,omitempty"`
	Schedule    string     `yaml:"schedule,omitempty"` // AdamW: constant, cosine, linear, wsd
	FinalFrac   *float64   `yaml:"final_frac,omitempty"`
	DecayFrac   float64    `yaml:"decay_frac,omitempty"`
	BatchTokens Param      `yaml:"batch_tokens,omitempty"` // overrides the manifest's
}

// IterEWA names the EWA of a trial's evaluated iterate (ewa_x for SF-AdamW, ewa_w for
// AdamW) in a probe, so that a grid of both optimizers can probe from it.
const IterEWA = training.IterEWA

// Table is a table to build from the sweep's results.
type Table struct {
	Kind      string  `yaml:"kind"` // "c_sensitivity" or "hyperparameters"
	Name      string  `yaml:"name"` // file name under tables/
	Title     string  `yaml:"title,omitempty"`
	Label     string  `yaml:"label,omitempty"` // LaTeX label, e.g. tab:c_sweep_05M
	Optimizer string  `yaml:"optimizer,omitempty"`
	LR        float64 `yaml:"lr,omitempty"`     // c_sensitivity: the LR of the cells (default: the grid's only one)
	Beta2     float64 `yaml:"beta2,omitempty"`  // c_sensitivity: the β2 of the cells (default: the grid's only one)
	Metric    string  `yaml:"metric,omitempty"` // "test_ppl" (default)
}

// Output says where results go: a key prefix in the object store.
type Output struct {
	Prefix string `yaml:"prefix,omitempty"`
}

// BetaPair is a (β1, β2) pair, written [0.9, 0.95].
type BetaPair [2]float64

// IntList is one integer or a list of them.
type IntList []int

func (l *IntList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var v int
		if err := n.Decode(&v); err != nil {
			return err
		}
		*l = IntList{v}
		return nil
	}
	var vs []int
	if err := n.Decode(&vs); err != nil {
		return err
	}
	*l = vs
	return nil
}

// Error is an invalid manifest field: its path, value, reason and line (0 if unknown).
type Error struct {
	Field  string
	Value  any
	Reason string
	Line   int
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s = %v: %s", e.Line, e.Field, e.Value, e.Reason)
	}
	return fmt.Sprintf("%s = %v: %s", e.Field, e.Value, e.Reason)
}

// DefaultMaxTrials bounds a manifest's expansion unless it sets max_trials.
const DefaultMaxTrials = 10000

// MaxManifestBytes bounds the size of a manifest file.
const MaxManifestBytes = 1 << 20

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// Parse reads and validates a manifest. Errors name the field, the value, the reason and
// the line of the manifest where the field stands.
func Parse(src []byte) (*Manifest, error) {
	if len(src) > MaxManifestBytes {
		return nil, &Error{Field: "manifest", Value: fmt.Sprintf("%d bytes", len(src)), Reason: fmt.Sprintf("must be at most %d bytes", MaxManifestBytes)}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(src, &root); err != nil {
		return nil, fmt.Errorf("manifest: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if err := checkNode(&root, 0); err != nil {
		return nil, err
	}
	var m Manifest
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		if e := (*Error)(nil); errors.As(err, &e) && e.Field == "" {
			e.Field = fieldAt(&root, e.Line) // a Param's error knows its line, not its field
			return nil, e
		}
		return nil, fmt.Errorf("manifest: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if err := m.validate(); err != nil {
		var e *Error
		if errors.As(err, &e) && e.Line == 0 {
			e.Line = lineOf(&root, e.Field)
		}
		return nil, err
	}
	return &m, nil
}

// CheckBackend tells whether this build of sfsweep carries the manifest's backend, whose
// text is src: nil if it does, else an *Error naming the field, its line, and how to build
// a binary that has it. A worker that lacks it never receives its trials: they wait for
// one that has it.
func (m *Manifest) CheckBackend(src []byte) error {
	name, err := backend.Resolve(cmp.Or(m.Backend, "cpu"), m.Precision)
	if err != nil {
		return nil // Parse refused it already
	}
	var ue *backend.UnavailableError
	if err := backend.Check(name); !errors.As(err, &ue) {
		return err // nil, or a name Parse already refused
	}
	var root yaml.Node
	_ = yaml.Unmarshal(src, &root) // Parse read it
	return &Error{Field: "backend", Value: name, Reason: ue.Reason(), Line: lineOf(&root, "backend")}
}

// checkNode rejects what YAML allows but a manifest never needs: deep nesting, aliases
// (which can expand exponentially) and duplicate keys.
func checkNode(n *yaml.Node, depth int) error {
	if depth > 20 {
		return &Error{Field: "manifest", Value: fmt.Sprintf("nesting depth %d", depth), Reason: "must be at most 20", Line: n.Line}
	}
	if n.Kind == yaml.AliasNode {
		return &Error{Field: "manifest", Value: "*" + n.Value, Reason: "YAML aliases are not allowed", Line: n.Line}
	}
	if n.Kind == yaml.MappingNode {
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if prev, dup := seen[k.Value]; dup {
				return &Error{Field: k.Value, Value: "duplicate key", Reason: fmt.Sprintf("already given on line %d", prev), Line: k.Line}
			}
			seen[k.Value] = k.Line
		}
	}
	for _, c := range n.Content {
		if err := checkNode(c, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// fieldAt is the path ("optimizers[1].lr") of the deepest field whose key or value
// stands on line of the document: the inverse of lineOf.
func fieldAt(root *yaml.Node, line int) string {
	best := "manifest"
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := k.Value
				if path != "" {
					p = path + "." + k.Value
				}
				if k.Line == line {
					best = p
				}
				walk(v, p)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				if c.Kind != yaml.ScalarNode {
					walk(c, fmt.Sprintf("%s[%d]", path, i))
				}
			}
		}
	}
	walk(root, "")
	return best
}

// lineOf returns the line of the field at path ("optimizers[1].lr") in the document, or
// of its deepest existing ancestor.
func lineOf(root *yaml.Node, path string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, part := range strings.Split(path, ".") {
		key, idx := part, -1
		if i := strings.IndexByte(part, '['); i >= 0 && strings.HasSuffix(part, "]") {
			key = part[:i]
			idx, _ = strconv.Atoi(part[i+1 : len(part)-1])
		}
		if n.Kind != yaml.MappingNode {
			return line
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				line, next = n.Content[i].Line, n.Content[i+1]
				break
			}
		}
		if next == nil {
			return line
		}
		n = next
		if idx >= 0 {
			if n.Kind != yaml.SequenceNode || idx >= len(n.Content) {
				return line
			}
			n = n.Content[idx]
			line = n.Line
		}
	}
	return line
}

func (m *Manifest) validate() error {
	if !nameRE.MatchString(m.Name) {
		return &Error{Field: "name", Value: fmt.Sprintf("%q", m.Name), Reason: "must be 1–100 letters, digits, '.', '_' or '-', starting with a letter or digit"}
	}
	if len(m.Optimizers) == 0 {
		return &Error{Field: "optimizers", Value: "[]", Reason: "must list at least one optimizer grid"}
	}
	if len(m.Seeds) == 0 {
		return &Error{Field: "seeds", Value: "[]", Reason: "must list at least one seed"}
	}
	for i, s := range m.Seeds {
		if s < 0 {
			return &Error{Field: fmt.Sprintf("seeds[%d]", i), Value: s, Reason: "must be ≥ 0"}
		}
	}
	if m.MaxTrials < 0 {
		return &Error{Field: "max_trials", Value: m.MaxTrials, Reason: "must be ≥ 0"}
	}
	for gi, g := range m.Optimizers {
		f := func(s string) string { return fmt.Sprintf("optimizers[%d].%s", gi, s) }
		if g.Name != training.SFAdamW && g.Name != training.AdamW {
			return &Error{Field: f("name"), Value: fmt.Sprintf("%q", g.Name), Reason: `must be "sfadamw" or "adamw"`}
		}
		if err := m.checkGrid(gi, g); err != nil {
			return err
		}
	}
	if err := m.BatchTokens.check("batch_tokens", m.Sampled(), true); err != nil {
		return err
	}
	if err := m.WarmupFrac.check("warmup_frac", m.Sampled(), false); err != nil {
		return err
	}
	if err := m.validateSearch(); err != nil {
		return err
	}
	if n := m.Count(); !m.Sampled() && n > m.maxTrials() {
		return &Error{Field: "optimizers", Value: fmt.Sprintf("%d trials", n), Reason: fmt.Sprintf("the grid expands to more than max_trials = %d; raise max_trials to confirm", m.maxTrials())}
	}
	if d := m.Probes.Decay; d != nil {
		if d.Steps < 1 {
			return &Error{Field: "probes.decay.steps", Value: d.Steps, Reason: "must be ≥ 1"}
		}
		if d.PeakLR < 0 || math.IsNaN(d.PeakLR) || math.IsInf(d.PeakLR, 0) {
			return &Error{Field: "probes.decay.peak_lr", Value: d.PeakLR, Reason: "must be a finite number > 0"}
		}
		if err := m.checkProbeSteps("probes.decay", d.At, nil); err != nil {
			return err
		}
		for _, g := range m.Optimizers {
			if its := training.Iterates(g.Name); d.Iterate != "" && d.Iterate != IterEWA && !slices.Contains(its, d.Iterate) {
				return &Error{Field: "probes.decay.iterate", Value: fmt.Sprintf("%q", d.Iterate),
					Reason: fmt.Sprintf("%s trials have %s (or ewa for the EWA of the evaluated one, or leave it out for that one)", g.Name, strings.Join(its, ", "))}
			}
		}
	}
	if b := m.Probes.LRDecay; b != nil {
		if math.IsNaN(b.Frac) || b.Frac <= 0 || b.Frac > 1 {
			return &Error{Field: "probes.lr_decay.frac", Value: b.Frac, Reason: "must be in (0, 1]: the branch decays over this fraction of the steps before it"}
		}
		if err := m.checkProbeSteps("probes.lr_decay", b.At, nil); err != nil {
			return err
		}
		if !slices.ContainsFunc(m.Optimizers, func(g Grid) bool { return g.Name == training.AdamW }) {
			names := make([]string, len(m.Optimizers))
			for i, g := range m.Optimizers {
				names[i] = g.Name
			}
			return &Error{Field: "probes.lr_decay", Value: fmt.Sprintf("optimizers %v", names), Reason: "the LR-decay branch continues adamw trials, and the grid has none"}
		}
	}
	if ip := m.Probes.Interpolate; ip != nil {
		fromTo := func(i int) string { return [...]string{"probes.interpolate.from", "probes.interpolate.to"}[i] }
		if err := m.checkProbeSteps("probes.interpolate", []int{ip.From, ip.To}, fromTo); err != nil {
			return err
		}
		if ip.From >= ip.To {
			return &Error{Field: "probes.interpolate.to", Value: ip.To, Reason: fmt.Sprintf("must come after from = %d", ip.From)}
		}
		if ip.Points != 0 && (ip.Points < 2 || ip.Points > 101) {
			return &Error{Field: "probes.interpolate.points", Value: ip.Points, Reason: "must be in [2, 101]"}
		}
		if ip.Decayed && ip.To-ip.From > ip.From {
			return &Error{Field: "probes.interpolate.to", Value: ip.To, Reason: fmt.Sprintf("with decayed, the decay from %d may last at most as long as the run before it: to ≤ %d", ip.From, 2*ip.From)}
		}
		if ip.Decayed && !slices.ContainsFunc(m.Optimizers, func(g Grid) bool { return g.Name == training.AdamW }) {
			return &Error{Field: "probes.interpolate.decayed", Value: true, Reason: "the decayed segment continues adamw trials, and the grid has none"}
		}
	}
	names := map[string]bool{}
	for i, t := range m.Tables {
		f := func(s string) string { return fmt.Sprintf("tables[%d].%s", i, s) }
		if t.Kind != "c_sensitivity" && t.Kind != "hyperparameters" {
			return &Error{Field: f("kind"), Value: fmt.Sprintf("%q", t.Kind), Reason: `must be "c_sensitivity" or "hyperparameters"`}
		}
		if !nameRE.MatchString(t.Name) {
			return &Error{Field: f("name"), Value: fmt.Sprintf("%q", t.Name), Reason: "must be 1–100 letters, digits, '.', '_' or '-'"}
		}
		if names[t.Name] {
			return &Error{Field: f("name"), Value: t.Name, Reason: "another table has this name"}
		}
		names[t.Name] = true
		if t.Metric != "" && t.Metric != "test_ppl" && t.Metric != "val_loss" {
			return &Error{Field: f("metric"), Value: t.Metric, Reason: `must be "test_ppl" or "val_loss"`}
		}
	}
	if p := m.Output.Prefix; p != "" {
		for _, seg := range strings.Split(p, "/") {
			if !nameRE.MatchString(seg) {
				return &Error{Field: "output.prefix", Value: fmt.Sprintf("%q", p), Reason: "must be '/'-separated names of letters, digits, '.', '_' or '-' (no '..', no leading '/')"}
			}
		}
	}
	// every trial's config must be valid: a search's, at the bounds of its distributions
	_, err := m.corners().Expand()
	return err
}

// checkGrid checks grid gi's parameters.
func (m *Manifest) checkGrid(gi int, g Grid) error {
	f := func(s string) string { return fmt.Sprintf("optimizers[%d].%s", gi, s) }
	if !g.LR.Set() {
		return &Error{Field: f("lr"), Value: "[]", Reason: "must list at least one learning rate"}
	}
	switch {
	case len(g.Betas) > 0 && (g.Beta1.Set() || g.Beta2.Set()):
		return &Error{Field: f("beta1"), Value: g.Beta1, Reason: "give betas as [beta1, beta2] pairs or beta1 and beta2 apart, not both"}
	case len(g.Betas) == 0 && !g.Beta1.Set():
		return &Error{Field: f("betas"), Value: "[]", Reason: "must list at least one [beta1, beta2] pair (or give beta1 and beta2)"}
	case len(g.Betas) == 0 && !g.Beta2.Set():
		return &Error{Field: f("beta2"), Value: "[]", Reason: "must give beta2 with beta1"}
	}
	if g.Name == training.AdamW && g.C.Set() {
		return &Error{Field: f("c"), Value: g.C, Reason: "applies to sfadamw only"}
	}
	if !m.BatchTokens.Set() && !g.BatchTokens.Set() {
		return &Error{Field: "batch_tokens", Value: "[]", Reason: "must give at least one batch size in tokens"}
	}
	sampled := m.Sampled()
	for _, p := range []struct {
		name  string
		p     Param
		whole bool
	}{{"lr", g.LR, false}, {"beta1", g.Beta1, false}, {"beta2", g.Beta2, false}, {"c", g.C.Param, false}, {"weight_decay", g.WeightDecay, false}, {"batch_tokens", g.BatchTokens, true}} {
		if err := p.p.check(f(p.name), sampled, p.whole); err != nil {
			return err
		}
	}
	return nil
}

// corners is the manifest with each distribution replaced by its bounds: the grid whose
// configurations bound every one a search may sample.
func (m *Manifest) corners() *Manifest {
	c := *m
	c.Search = nil
	c.MaxTrials = math.MaxInt
	fix := func(p Param) Param { return Param{Values: p.corners()} }
	c.BatchTokens, c.WarmupFrac = fix(m.BatchTokens), fix(m.WarmupFrac)
	c.Optimizers = slices.Clone(m.Optimizers)
	for i, g := range c.Optimizers {
		g.LR, g.Beta1, g.Beta2, g.WeightDecay, g.BatchTokens = fix(g.LR), fix(g.Beta1), fix(g.Beta2), fix(g.WeightDecay), fix(g.BatchTokens)
		g.C.Param = fix(g.C.Param)
		c.Optimizers[i] = g
	}
	return &c
}

func (m *Manifest) maxTrials() int {
	if m.MaxTrials > 0 {
		return m.MaxTrials
	}
	return DefaultMaxTrials
}

// Count returns the number of grid points before deduplication, computed without
// expanding (so a grid of millions is refused in constant memory). It saturates at
// math.MaxInt.
func (m *Manifest) Count() int {
	total := 0
	for _, g := range m.Optimizers {
		n := 1
		for _, k := range []int{len(g.LR.Values), g.nBetaPairs(), len(g.C.Values), len(g.WeightDecay.Values), len(m.WarmupFrac.Values), len(g.batchTokens(m).Values), len(m.Seeds)} {
			if k > 0 && n > math.MaxInt/k {
				return math.MaxInt
			}
			n *= max(k, 1)
		}
		if total > math.MaxInt-n {
			return math.MaxInt
		}
		total += n
	}
	return total
}

// nBetaPairs is len(g.betaPairs()), computed without them.
func (g Grid) nBetaPairs() int {
	if len(g.Betas) > 0 {
		return len(g.Betas)
	}
	if n, k := len(g.Beta1.Values), len(g.Beta2.Values); k == 0 || n <= math.MaxInt/k {
		return n * k
	}
	return math.MaxInt
}

// betaPairs are the grid's (β1, β2) pairs: its betas, or every beta1 with every beta2.
func (g Grid) betaPairs() []BetaPair {
	if len(g.Betas) > 0 {
		return g.Betas
	}
	ps := make([]BetaPair, 0, len(g.Beta1.Values)*len(g.Beta2.Values))
	for _, b1 := range g.Beta1.Values {
		for _, b2 := range g.Beta2.Values {
			ps = append(ps, BetaPair{b1, b2})
		}
	}
	return ps
}

func (g Grid) batchTokens(m *Manifest) Param {
	if g.BatchTokens.Set() {
		return g.BatchTokens
	}
	return m.BatchTokens
}

// checkProbeSteps checks a probe's steps: checkpoint steps of the run, kept after
// training. None means every checkpoint, of which there must be some. name gives the field
// of at[i]; nil means field.at[i].
func (m *Manifest) checkProbeSteps(field string, at []int, name func(i int) string) error {
	if name == nil {
		name = func(i int) string { return fmt.Sprintf("%s.at[%d]", field, i) }
	}
	if m.KeepCheckpoints > 0 {
		return &Error{Field: "keep_checkpoints", Value: m.KeepCheckpoints, Reason: "probes read the checkpoints after training: keep them all (0) with " + field}
	}
	if len(at) == 0 && m.CheckpointEvery == 0 {
		return &Error{Field: field + ".at", Value: "[]", Reason: "the probe runs from checkpoints: set checkpoint_every, or list checkpoint steps here"}
	}
	for i, s := range at {
		if s < 1 || s >= m.Steps {
			return &Error{Field: name(i), Value: s, Reason: fmt.Sprintf("must be a checkpoint step in [1, steps = %d): no checkpoint is written at the last step", m.Steps)}
		}
		if m.CheckpointEvery == 0 || s%m.CheckpointEvery != 0 {
			return &Error{Field: name(i), Value: s, Reason: fmt.Sprintf("must be a checkpoint step (a multiple of checkpoint_every = %d)", m.CheckpointEvery)}
		}
	}
	return nil
}
