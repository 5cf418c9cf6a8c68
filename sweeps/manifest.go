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

	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/model"
)

// Manifest is a sweep: the shared settings of its trials, per-optimizer grids, the probes
// to run on each trial, and the tables to build from the results.
type Manifest struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`

	Model       string              `yaml:"model,omitempty"`
	ModelConfig *model.Config       `yaml:"model_config,omitempty"`
	Backend     string              `yaml:"backend,omitempty"`
	Precision   string              `yaml:"precision,omitempty"` // fp32, tf32 or bf16: picks the backend of that precision
	Data        training.DataConfig `yaml:"data"`

	BatchTokens     IntList  `yaml:"batch_tokens"` // one value or a grid
	MicroBatch      int      `yaml:"micro_batch,omitempty"`
	SeqLen          int      `yaml:"seq_len,omitempty"`
	Steps           int      `yaml:"steps"`
	WarmupFrac      *float64 `yaml:"warmup_frac,omitempty"`
	EvalEvery       int      `yaml:"eval_every,omitempty"`
	EvalSeqs        int      `yaml:"eval_seqs,omitempty"`
	TestSeqs        int      `yaml:"test_seqs,omitempty"`
	CheckpointEvery int      `yaml:"checkpoint_every,omitempty"`
	KeepCheckpoints int      `yaml:"keep_checkpoints,omitempty"`
	EWADecay        float64  `yaml:"ewa_decay,omitempty"`
	Seeds           IntList  `yaml:"seeds"`

	Optimizers []Grid   `yaml:"optimizers"`
	Probes     Probes   `yaml:"probes,omitempty"`
	Tables     []Table  `yaml:"tables,omitempty"`
	MaxTrials  int      `yaml:"max_trials,omitempty"` // refuse larger expansions (default 10,000)
	Output     Output   `yaml:"output,omitempty"`
	Tags       []string `yaml:"tags,omitempty"`
}

// Grid is one optimizer's grid: every combination of its lists is a trial.
type Grid struct {
	Name        string     `yaml:"name"`            // "sfadamw" or "adamw"
	Label       string     `yaml:"label,omitempty"` // row label in tables, e.g. "SF-AdamW", "AdamW (cosine)"
	LR          FloatList  `yaml:"lr"`
	Betas       []BetaPair `yaml:"betas"`
	C           CList      `yaml:"c,omitempty"` // refined SF-AdamW: values, or "vanilla"
	WeightDecay *float64   `yaml:"weight_decay,omitempty"`
	GradClip    *float64   `yaml:"grad_clip,omitempty"`
	Eps         float64    `yaml:"eps,omitempty"`
	Schedule    string     `yaml:"schedule,omitempty"` // AdamW: constant, cosine, linear, wsd
	FinalFrac   *float64   `yaml:"final_frac,omitempty"`
	DecayFrac   float64    `yaml:"decay_frac,omitempty"`
	BatchTokens IntList    `yaml:"batch_tokens,omitempty"` // overrides the manifest's
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

// IntList is one integer or a list of them.
type IntList []int

// FloatList is one number or a list of them.
type FloatList []float64

// BetaPair is a (β1, β2) pair, written [0.9, 0.95].
type BetaPair [2]float64

// CList is a list of refined-SF C values; "vanilla" is 0.
type CList []float64

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

func (l *FloatList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var v float64
		if err := n.Decode(&v); err != nil {
			return err
		}
		*l = FloatList{v}
		return nil
	}
	var vs []float64
	if err := n.Decode(&vs); err != nil {
		return err
	}
	*l = vs
	return nil
}

func (l *CList) UnmarshalYAML(n *yaml.Node) error {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	out := make(CList, 0, len(items))
	for _, it := range items {
		if it.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: c: want a number or \"vanilla\"", it.Line)
		}
		if strings.EqualFold(it.Value, "vanilla") {
			out = append(out, 0)
			continue
		}
		v, err := strconv.ParseFloat(it.Value, 64)
		if err != nil {
			return fmt.Errorf("line %d: c = %q: want a number or \"vanilla\"", it.Line, it.Value)
		}
		out = append(out, v)
	}
	*l = out
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
		if len(g.LR) == 0 {
			return &Error{Field: f("lr"), Value: "[]", Reason: "must list at least one learning rate"}
		}
		if len(g.Betas) == 0 {
			return &Error{Field: f("betas"), Value: "[]", Reason: "must list at least one [beta1, beta2] pair"}
		}
		if g.Name == training.AdamW && len(g.C) > 0 {
			return &Error{Field: f("c"), Value: []float64(g.C), Reason: "applies to sfadamw only"}
		}
		if len(m.BatchTokens) == 0 && len(g.BatchTokens) == 0 {
			return &Error{Field: "batch_tokens", Value: "[]", Reason: "must give at least one batch size in tokens"}
		}
	}
	if n := m.Count(); n > m.maxTrials() {
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
	// every trial's config must be valid
	_, err := m.Expand()
	return err
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
		for _, k := range []int{len(g.LR), len(g.Betas), max(1, len(g.C)), len(g.batchTokens(m)), len(m.Seeds)} {
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

func (g Grid) batchTokens(m *Manifest) IntList {
	if len(g.BatchTokens) > 0 {
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
