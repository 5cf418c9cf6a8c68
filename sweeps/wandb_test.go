package sweeps

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/fielderr"
)

var update = flag.Bool("update", false, "rewrite the golden manifests in testdata/wandb")

// importWandb imports the W&B sweep src on base and parses the manifest it writes.
func importWandb(t *testing.T, src, base string) (*Manifest, []string) {
	t.Helper()
	var b []byte
	if base != "" {
		b = []byte(base)
	}
	out, notes, err := FromWandb([]byte(src), b)
	if err != nil {
		t.Fatalf("FromWandb: %v", err)
	}
	m, err := Parse(out)
	if err != nil {
		t.Fatalf("the imported manifest does not parse: %v\n%s", err, out)
	}
	return m, notes
}

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "wandb", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The imported manifests of the good sweeps in testdata/wandb are their goldens,
// <name>.sfsweep.yaml (go test -run TestWandbGolden -update rewrites them).
func TestWandbGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "wandb", "*.yaml"))
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".sfsweep.yaml") || strings.HasPrefix(filepath.Base(f), "bad-") {
			continue
		}
		n++
		src, _ := os.ReadFile(f)
		out, _, err := FromWandb(src, nil)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if _, err := Parse(out); err != nil {
			t.Errorf("%s: the imported manifest does not parse: %v", f, err)
		}
		golden := strings.TrimSuffix(f, ".yaml") + ".sfsweep.yaml"
		if *update {
			if err := os.WriteFile(golden, out, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Errorf("%v (go test -run TestWandbGolden -update writes it)", err)
			continue
		}
		if !bytes.Equal(out, want) {
			t.Errorf("%s: the import differs from %s:\n%s", f, golden, out)
		}
	}
	if n < 3 {
		t.Errorf("%d good sweeps in testdata/wandb, want at least 3", n)
	}
}

func TestWandbBayesHyperband(t *testing.T) {
	m, notes := importWandb(t, readTestdata(t, "bayes-hyperband.yaml"), "")
	if m.Name != "lr-c-bayes" || m.Description != "LR and C of refined SF-AdamW against AdamW's LR" {
		t.Errorf("name %q, description %q", m.Name, m.Description)
	}
	s := m.Search
	if m.Method() != MethodTPE || s.Trials != 20 || m.MetricName() != MetricValLoss || s.Goal != "minimize" {
		t.Errorf("search %+v: want tpe, 20 trials, val_loss, minimize", s)
	}
	if len(m.Optimizers) != 2 || m.Optimizers[0].Name != "sfadamw" || m.Optimizers[1].Name != "adamw" {
		t.Fatalf("optimizers %+v: want an sfadamw and an adamw grid", m.Optimizers)
	}
	for i, g := range m.Optimizers {
		if d := g.LR.Dist; d == nil || d.Kind != LogUniform || d.Min != 1e-4 || d.Max != 1e-2 {
			t.Errorf("grid %d: lr %v, want log_uniform [1e-4, 1e-2]", i, g.LR)
		}
		if !slices.Equal(g.Beta1.Values, []float64{0.9, 0.95}) {
			t.Errorf("grid %d: beta1 %v", i, g.Beta1)
		}
		if v, ok := g.Beta2.Only(); !ok || v != 0.99 {
			t.Errorf("grid %d: beta2 %v", i, g.Beta2)
		}
		// min: 0.0, max: 0.1 are floats, so W&B takes them as uniform
		if d := g.WeightDecay.Dist; d == nil || d.Kind != Uniform || d.Min != 0 || d.Max != 0.1 {
			t.Errorf("grid %d: weight_decay %v, want uniform [0, 0.1]", i, g.WeightDecay)
		}
	}
	if c := m.Optimizers[0].C.Values; !slices.Equal(c, []float64{0, 50, 200}) {
		t.Errorf("sfadamw c %v, want [vanilla 50 200]", c)
	}
	if m.Optimizers[1].C.Set() {
		t.Errorf("adamw c %v: C is refined SF-AdamW's", m.Optimizers[1].C)
	}
	if v, ok := m.WarmupFrac.Only(); !ok || v != 0.05 {
		t.Errorf("warmup_frac %v (from warmup_ratio)", m.WarmupFrac)
	}
	// min_iter 2 evaluations of eval_every 30 = step 60, then ×3
	if es := s.EarlyStopping; es == nil || es.Rule != RuleHyperband || es.Brackets != 1 || es.MinSteps != 60 || m.Eta() != 3 {
		t.Errorf("early stopping %+v", es)
	}
	if r := m.Rungs(); !slices.Equal(r, []int{60, 180, 300}) {
		t.Errorf("rungs %v, want [60 180 300]", r)
	}
	for _, want := range []string{
		"line 3: program = train.py: ignored",
		`line 4: name = "lr c bayes": written lr-c-bayes`,
		"line 6: project = schedule-free: ignored",
		"line 7: entity = my-team: ignored",
		"line 8: method = bayes: searched by tpe",
		"line 12: run_cap = 20: search.trials = 20 configurations of each optimizer grid (2), each trained on every seed (3): up to 120 trials",
		"line 35: command = ",
	} {
		if !slices.ContainsFunc(notes, func(n string) bool { return strings.HasPrefix(n, want) }) {
			t.Errorf("no note %q in\n%s", want, strings.Join(notes, "\n"))
		}
	}
	if !slices.IsSortedFunc(notes, func(a, b string) int { return noteLine(a) - noteLine(b) }) {
		t.Errorf("notes out of line order:\n%s", strings.Join(notes, "\n"))
	}
}

// noteLine is the line a note is about.
func noteLine(note string) int {
	var line int
	fmt.Sscanf(note, "line %d:", &line)
	return line
}

func TestWandbGrid(t *testing.T) {
	m, _ := importWandb(t, readTestdata(t, "grid.yaml"), "")
	if m.Method() != MethodGrid || m.Sampled() || !m.Searched() || m.Search.Trials != 0 || m.MetricName() != MetricTestPPL {
		t.Errorf("search %+v: want a grid ranked by test_ppl, all of it", m.Search)
	}
	g := m.Optimizers[0]
	if len(m.Optimizers) != 1 || g.Name != "sfadamw" || !slices.Equal(g.LR.Values, []float64{1e-3, 2e-3}) {
		t.Errorf("optimizers %+v", m.Optimizers)
	}
	if !slices.Equal(g.Betas, []BetaPair{{0.9, 0.95}, {0.95, 0.99}}) {
		t.Errorf("betas %v", g.Betas)
	}
	// integer min and max are int_uniform, which W&B's grid lists
	if !slices.Equal(g.C.Values, []float64{40, 41, 42}) {
		t.Errorf("c %v, want [40 41 42]", g.C)
	}
	if !slices.Equal(m.Seeds, IntList{1, 2}) {
		t.Errorf("seeds %v", m.Seeds)
	}
	// max_iter 9, s 2, eta 3: brackets 9/3 = 3 and 9/9 = 1 evaluations, steps 90 and 30
	if es := m.Search.EarlyStopping; es == nil || !slices.Equal(es.Rungs, []int{30, 90}) || es.Rule != RuleHyperband || es.Brackets != 1 {
		t.Errorf("early stopping %+v", es)
	}
	if r := m.Rungs(); !slices.Equal(r, []int{30, 90, 300}) {
		t.Errorf("rungs %v, want [30 90 300]", r)
	}
	trials, err := m.Expand()
	if err != nil || len(trials) != 2*2*3*2 {
		t.Errorf("%d trials (%v), want 24", len(trials), err)
	}
}

func TestWandbLogUniform(t *testing.T) {
	m, notes := importWandb(t, readTestdata(t, "random-log-uniform.yaml"), "")
	if m.Method() != MethodRandom || m.Search.Trials != 16 || m.MetricName() != MetricValLoss {
		t.Errorf("search %+v: want random, 16 trials, val_loss (eval_loss)", m.Search)
	}
	g := m.Optimizers[0]
	relErr := func(got, want float64) float64 { return math.Abs(got-want) / want }
	// log_uniform's min and max are natural logs
	if d := g.LR.Dist; d == nil || d.Kind != LogUniform || relErr(d.Min, math.Exp(-9.21)) > 1e-12 || relErr(d.Max, math.Exp(-4.61)) > 1e-12 {
		t.Errorf("lr %v, want log_uniform [e^-9.21, e^-4.61] = [%g, %g]", g.LR, math.Exp(-9.21), math.Exp(-4.61))
	}
	// inv_log_uniform_values: log(1/X) uniform in [log(1/max), log(1/min)], so X is
	// log-uniform in [min, max]
	if d := g.WeightDecay.Dist; d == nil || d.Kind != LogUniform || d.Min != 1e-4 || d.Max != 0.1 {
		t.Errorf("weight_decay %v, want log_uniform [1e-4, 0.1]", g.WeightDecay)
	}
	if d := g.Beta2.Dist; d == nil || d.Kind != Uniform || d.Min != 0.95 || d.Max != 0.999 {
		t.Errorf("beta2 %v", g.Beta2)
	}
	if !slices.Equal(m.BatchTokens.Values, []float64{2048, 4096, 8192}) || !slices.Equal(m.Seeds, IntList{7}) {
		t.Errorf("batch_tokens %v, seeds %v", m.BatchTokens, m.Seeds)
	}
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "line 4: name = not given: the manifest is the base's wandb-import") {
		t.Errorf("notes %q, want one on the name", notes)
	}
}

// wandbSweep is a W&B sweep that the error cases change one line at a time.
const wandbSweep = `method: random
metric:
  name: val_loss
  goal: minimize
run_cap: 10
parameters:
  lr:
    distribution: log_uniform_values
    min: 1.0e-4
    max: 1.0e-2
  beta1:
    values: [0.9, 0.95]
  beta2:
    value: 0.99
early_terminate:
  type: hyperband
  min_iter: 1
`

// More distributions and settings, each on wandbSweep.
func TestWandbDistributions(t *testing.T) {
	for _, tc := range []struct {
		old, new string
		check    func(m *Manifest) bool
	}{
		{"distribution: log_uniform_values\n    min: 1.0e-4\n    max: 1.0e-2", "distribution: inv_log_uniform\n    min: 4\n    max: 9",
			func(m *Manifest) bool { // log(1/X) uniform in [4, 9]: X in [e^-9, e^-4]
				d := m.Optimizers[0].LR.Dist
				return d.Kind == LogUniform && math.Abs(d.Min/math.Exp(-9)-1) < 1e-12 && math.Abs(d.Max/math.Exp(-4)-1) < 1e-12
			}},
		{"distribution: log_uniform_values\n    min: 1.0e-4\n    max: 1.0e-2", "distribution: q_log_uniform_values\n    min: 1.0e-4\n    max: 1.0e-2\n    q: 1.0e-4",
			func(m *Manifest) bool {
				d := m.Optimizers[0].LR.Dist
				return reflect.DeepEqual(*d, Dist{Kind: LogUniform, Min: 1e-4, Max: 1e-2, Q: 1e-4, Line: d.Line})
			}},
		{"  beta2:\n    value: 0.99", "  beta2:\n    distribution: beta\n    a: 20\n    b: 2\n  batch_tokens:\n    distribution: q_log_uniform_values\n    min: 2048\n    max: 8192\n    q: 2048\n  wd:\n    distribution: normal\n    mu: 0.1\n    sigma: 0.01",
			func(m *Manifest) bool {
				g := m.Optimizers[0]
				return g.Beta2.Dist.Kind == Beta && g.Beta2.Dist.A == 20 && g.Beta2.Dist.B == 2 &&
					m.BatchTokens.Dist.Kind == LogUniform && m.BatchTokens.Dist.Q == 2048 &&
					g.WeightDecay.Dist.Kind == Normal && g.WeightDecay.Dist.Mu == 0.1 && g.WeightDecay.Dist.Sigma == 0.01
			}},
		{"distribution: log_uniform_values\n    min: 1.0e-4\n    max: 1.0e-2", "value: 3.0e-3",
			func(m *Manifest) bool { v, ok := m.Optimizers[0].LR.Only(); return ok && v == 3e-3 }},
		{"distribution: log_uniform_values\n    min: 1.0e-4\n    max: 1.0e-2", "distribution: categorical\n    values: [1.0e-3, 2.0e-3]",
			func(m *Manifest) bool { return slices.Equal(m.Optimizers[0].LR.Values, []float64{1e-3, 2e-3}) }},
		{"  beta2:\n    value: 0.99", "  beta2:\n    value: 0.99\n  batch_tokens:\n    min: 2048\n    max: 8192",
			func(m *Manifest) bool {
				d := m.BatchTokens.Dist
				return d != nil && d.Kind == IntUniform && d.Min == 2048 && d.Max == 8192
			}},
		{"  beta2:\n    value: 0.99", "  beta2:\n    value: 0.99\n  wd:\n    value: 0.1\n  optimizer:\n    value: adamw",
			func(m *Manifest) bool {
				wd, _ := m.Optimizers[0].WeightDecay.Only()
				return len(m.Optimizers) == 1 && m.Optimizers[0].Name == "adamw" && wd == 0.1
			}},
		{"  beta1:\n    values: [0.9, 0.95]\n  beta2:\n    value: 0.99", "  betas:\n    value: [0.9, 0.95]",
			func(m *Manifest) bool { return slices.Equal(m.Optimizers[0].Betas, []BetaPair{{0.9, 0.95}}) }},
		// the documentation's example: min_iter 3 gives brackets 3, 9, 27, ... evaluations
		{"min_iter: 1", "min_iter: 3", func(m *Manifest) bool { return slices.Equal(m.Rungs(), []int{90, 270, 300}) }},
		// max_iter 81, s 3: brackets 3, 9, 27 evaluations; 27 (step 810) lies past the end
		{"min_iter: 1", "max_iter: 81\n  s: 3", func(m *Manifest) bool { return slices.Equal(m.Rungs(), []int{90, 270, 300}) }},
		{"min_iter: 1", "min_iter: 1\n  eta: 2", // run_cap 10 lets one of them reach the end past 3 rungs of eta 2 (2^3 ≤ 10), not 4
			func(m *Manifest) bool { return slices.Equal(m.Rungs(), []int{30, 60, 120, 300}) }},
	} {
		src := strings.Replace(wandbSweep, tc.old, tc.new, 1)
		if src == wandbSweep {
			t.Fatalf("%q is not in the sweep", tc.old)
		}
		m, _ := importWandb(t, src, "")
		if !tc.check(m) {
			t.Errorf("%s → %s: %+v, %+v", tc.old, tc.new, m.Optimizers, m.Search.EarlyStopping)
		}
	}
	_, notes := importWandb(t, strings.Replace(wandbSweep, "min_iter: 1", "max_iter: 81\n  s: 3", 1), "")
	if !slices.ContainsFunc(notes, func(n string) bool {
		return strings.HasPrefix(n, "line 17: early_terminate.max_iter = 81: brackets [27] dropped")
	}) {
		t.Errorf("no note of the dropped bracket in %q", notes)
	}
}

func TestWandbErrors(t *testing.T) {
	for _, tc := range []struct {
		old, new string
		field    string
		line     int
		reason   string
	}{
		{"method: random", "method: custom", "method", 1, "must be grid, random or bayes"},
		{"method: random\n", "", "method", 1, "a W&B sweep names its method"},
		{"run_cap: 10\n", "", "run_cap", 1, "a random search needs a budget: give run_cap"},
		{"run_cap: 10", "run_cap: 0", "run_cap", 5, "must be a whole number ≥ 1"},
		{"name: val_loss", "name: loss", "metric.name", 3, "sfsweep ranks by val_loss"},
		{"name: val_loss", "name: val_accuracy", "metric.name", 3, "test_loss or test_ppl"},
		{"goal: minimize", "goal: maximize", "metric.goal", 4, "the goal is minimize"},
		{"  beta2:", "  batch_size:\n    values: [16, 32]\n  beta2:", "parameters.batch_size", 13, "give batch_tokens, the tokens of one step"},
		{"  beta2:", "  dropout:\n    value: 0.1\n  beta2:", "parameters.dropout", 13, "no sfsweep equivalent: sfsweep searches learning_rate (lr)"},
		{"  lr:\n", "  learning_rate:\n    value: 1.0e-3\n  lr:\n", "parameters.lr", 9, "the same parameter as parameters.learning_rate (line 7)"},
		{"  beta2:\n    value: 0.99", "  betas:\n    values: [[0.9, 0.99]]", "parameters.betas", 13, "not both"},
		// W&B's rounding is kept: q = 1 rounds every draw of [1e-4, 1e-2] to 0
		{"log_uniform_values", "q_uniform", "parameters.lr.min", 9, "must be a finite number > 0"},
		{"log_uniform_values", "normal", "parameters.lr.min", 9, "normal takes mu, sigma, as W&B's schema says"},
		{"log_uniform_values\n    min: 1.0e-4\n    max: 1.0e-2", "normal\n    mu: 1.0e-3\n    sigma: 1.0e-3", "parameters.lr", 7, "must be a finite number > 0"},
		{"log_uniform_values\n    min: 1.0e-4\n    max: 1.0e-2", "log_normal\n    sigma: 0", "parameters.lr.sigma", 9, "log_normal's sigma must be > 0"},
		{"log_uniform_values\n    min: 1.0e-4\n    max: 1.0e-2", "q_log_uniform_values\n    min: 0\n    max: 1.0e-2", "parameters.lr.min", 9, "q_log_uniform_values takes values > 0"},
		{"values: [0.9, 0.95]", "distribution: normal\n    mu: 0.9\n    sigma: 0.05", "parameters.beta1", 11, "must be in [0, 1)"},
		{"log_uniform_values", "gamma", "parameters.lr", 7, "not a W&B distribution"},
		{"max: 1.0e-2", "max: 1.0e-2\n    q: 1.0e-4", "parameters.lr.q", 11, "log_uniform_values takes max, min, as W&B's schema says"},
		{"values: [0.9, 0.95]", "values: [0.9, 0.95]\n    probabilities: [0.5, 0.5]", "parameters.beta1", 11, "a weighted choice"},
		{"values: [0.9, 0.95]", "parameters:\n      inner: {value: 1}", "parameters.beta1", 11, "nested parameters"},
		{"method: random", "method: grid", "parameters.lr", 7, "a grid takes value, values or int_uniform"},
		{"values: [0.9, 0.95]", "values: [0.9, high]", "parameters.beta1", 11, "want a number"},
		{"max: 1.0e-2", "max: 1.0e-2\n    mode: 3", "parameters.lr.mode", 11, "not a key of a W&B parameter"},
		// the manifest's own checks, on the sweep's key
		{"values: [0.9, 0.95]", "values: [0.9, 1.5]", "parameters.beta1", 11, "must be in [0, 1)"},
		{"min: 1.0e-4", "min: 0.0", "parameters.lr.min", 9, "log_uniform_values takes values > 0"},
		{"min: 1.0e-4", "min: 1.0e-1", "parameters.lr", 7, "want min < max"},
		{"  beta2:", "  warmup_frac:\n    values: [0.1, 1.5]\n  beta2:", "parameters.warmup_frac", 13, "must be in [0, 1)"},
		{"  lr:\n    distribution: log_uniform_values\n    min: 1.0e-4\n    max: 1.0e-2\n", "", "parameters.learning_rate", 6, "the sfadamw grid needs it"},
		{"  beta1:\n    values: [0.9, 0.95]\n", "", "parameters.beta1", 6, "the sfadamw grid needs it"},
		{"  beta2:", "  optimizer:\n    values: [sfadamw, sgd]\n  beta2:", "parameters.optimizer", 13, "sfsweep trains sfadamw (Schedule-Free AdamW) and adamw"},
		{"  beta2:", "  optimizer:\n    value: adamw\n  c:\n    values: [vanilla, 50]\n  beta2:", "parameters.c", 15, "the sweep trains no sfadamw"},
		{"  beta2:", "  seed:\n    min: 1\n    max: 3\n  beta2:", "parameters.seed", 13, "seeds are listed: give value or values"},
		{"type: hyperband", "type: envelope", "early_terminate.type", 16, "hyperband, which sfsweep runs as its hyperband rule"},
		{"min_iter: 1", "min_iter: 10", "early_terminate.min_iter", 17, "the first bracket, evaluation 10, is step 300: not before the base's steps = 300"},
		{"min_iter: 1", "min_iter: 1\n  eta: 2.5", "early_terminate.eta", 18, "must be a whole number ≥ 2"},
		{"min_iter: 1", "max_iter: 27", "early_terminate.max_iter", 17, "need s"},
		{"min_iter: 1", "max_iter: 2000\n  s: 1", "early_terminate.max_iter", 17, "all lie at or past the base's steps = 300"},
		{"min_iter: 1", "", "early_terminate", 15, "give min_iter"},
		{"min_iter: 1", "min_iter: 1\n  brackets: 3", "early_terminate.brackets", 18, "not a key of W&B's hyperband"},
		{"run_cap: 10", "run_cap: 10\nmetrics: []", "metrics", 6, "multi-objective"},
		{"run_cap: 10", "run_cap: 10\nsearch: grid", "search", 6, "not a key of a W&B sweep"},
		{"run_cap: 10", "run_cap: 10000", "run_cap", 5, "more than max_trials"},
	} {
		src := strings.Replace(wandbSweep, tc.old, tc.new, 1)
		if src == wandbSweep {
			t.Fatalf("%q is not in the sweep", tc.old)
		}
		out, _, err := FromWandb([]byte(src), nil)
		var e *fielderr.Error
		if !errors.As(err, &e) || e.Field != tc.field || e.Line != tc.line || !strings.Contains(e.Reason, tc.reason) {
			t.Errorf("%q → %q: error %v (%T); want line %d: %s: ...%s...", tc.old, tc.new, err, err, tc.line, tc.field, tc.reason)
		}
		var be *BaseError
		if out != nil || errors.As(err, &be) {
			t.Errorf("%q → %q: output %q, base error %v", tc.old, tc.new, out, be)
		}
	}
	_, _, err := FromWandb([]byte("method: grid\nparameters: {}\n"), nil)
	if err == nil || !strings.HasPrefix(err.Error(), "line 2: parameters = none: a W&B sweep lists its parameters") {
		t.Errorf("no parameters: error %v", err)
	}
}

// The bad sweeps of testdata/wandb, as the command meets them.
func TestWandbBadFiles(t *testing.T) {
	for file, want := range map[string]string{
		"bad-batch-size.yaml":    "line 13: parameters.batch_size = {values: [16, 32, 64]}: batch_size counts sequences, not tokens: give batch_tokens",
		"bad-q-uniform.yaml":     "line 10: parameters.learning_rate.min = 0, the least value of q_log_uniform_values: must be a finite number > 0",
		"bad-metric.yaml":        `line 4: metric.name = "val_accuracy": sfsweep ranks by val_loss`,
		"bad-no-run-cap.yaml":    "line 2: run_cap = not given: a bayes search needs a budget",
		"bad-unknown-param.yaml": "line 12: parameters.dropout = {values: [0.0, 0.1]}: no sfsweep equivalent",
	} {
		_, _, err := FromWandb([]byte(readTestdata(t, file)), nil)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: error %v, want %q...", file, err, want)
		}
	}
}

// wandbBase is a base manifest with comments, optimizer grids to serve as templates, a
// search block and a table.
const wandbBase = `# My base: this header describes the base sweep, not the import.
name: my-base
description: the base
model: twin-llama
data: {default: byte, max_bytes: 8000000}
seq_len: 128
micro_batch: 16
batch_tokens: 2048
steps: 300
eval_every: 30
checkpoint_every: 60
seeds: [1, 2, 3] # three seeds
optimizers:
  - {name: sfadamw, label: Refined SF-AdamW, lr: 1e-3, betas: [[0.9, 0.99]], c: [vanilla, 50]}
  - {name: adamw, label: AdamW (cosine), lr: 1e-3, betas: [[0.9, 0.95]], schedule: cosine}
search:
  seed: 11
  parallel: 4
tables:
  - {kind: hyperparameters, name: hp}
`

func TestWandbBase(t *testing.T) {
	src := "method: random\nrun_cap: 4\nparameters:\n  lr:\n    distribution: log_uniform_values\n    min: 1.0e-4\n    max: 1.0e-2\n"
	m, _ := importWandb(t, src, wandbBase)
	if m.Name != "my-base" || m.Description != "the base" || m.Steps != 300 || len(m.Tables) != 1 {
		t.Errorf("the base's settings: %+v", m)
	}
	if m.Search.Seed != 11 || m.Search.Parallel != 4 || m.Search.Trials != 4 || m.Method() != MethodRandom {
		t.Errorf("search %+v: want the base's seed and parallel with the sweep's method and trials", m.Search)
	}
	if len(m.Optimizers) != 2 {
		t.Fatalf("%d grids, want the base's two", len(m.Optimizers))
	}
	sf, aw := m.Optimizers[0], m.Optimizers[1]
	if sf.Label != "Refined SF-AdamW" || !slices.Equal(sf.C.Values, []float64{0, 50}) || !slices.Equal(sf.Betas, []BetaPair{{0.9, 0.99}}) || sf.LR.Dist == nil {
		t.Errorf("sfadamw grid %+v: want the base's with the sweep's lr", sf)
	}
	if aw.Label != "AdamW (cosine)" || aw.Schedule != "cosine" || aw.LR.Dist == nil {
		t.Errorf("adamw grid %+v: want the base's with the sweep's lr", aw)
	}
	out, _, _ := FromWandb([]byte(src), []byte(wandbBase))
	if strings.Contains(string(out), "My base") || !strings.Contains(string(out), "# three seeds") {
		t.Errorf("want the base's header out and its comment on a kept key in:\n%s", out)
	}
	// an optimizer named: the base's grid of that name is its template
	m, _ = importWandb(t, src+"  optimizer:\n    value: adamw\n", wandbBase)
	if len(m.Optimizers) != 1 || m.Optimizers[0].Schedule != "cosine" {
		t.Errorf("grids %+v: want the base's adamw grid", m.Optimizers)
	}
	// a rung must be a checkpoint step of the base: the error names the sweep's key
	_, _, err := FromWandb([]byte(src+"early_terminate:\n  type: hyperband\n  min_iter: 1\n"), []byte(wandbBase))
	var e *fielderr.Error
	if !errors.As(err, &e) || e.Field != "early_terminate.min_iter" || e.Line != 10 || !strings.Contains(e.Reason, "checkpoint_every = 60") {
		t.Errorf("error %v, want line 10: early_terminate.min_iter: ... checkpoint_every = 60", err)
	}
	// an error of the base is the base's, with its line there
	_, _, err = FromWandb([]byte(src), []byte(strings.Replace(wandbBase, "seq_len: 128", "seq_len: -1", 1)))
	var be *BaseError
	if !errors.As(err, &be) || !errors.As(err, &e) || e.Field != "seq_len" || e.Line != 6 {
		t.Errorf("error %v, want a base error at line 6: seq_len", err)
	}
	_, _, err = FromWandb([]byte(src), []byte(strings.Replace(wandbBase, "schedule: cosine", "schedule: sometimes", 1)))
	if !errors.As(err, &be) || !errors.As(err, &e) || e.Field != "optimizers[1].schedule" || e.Line != 15 {
		t.Errorf("error %v, want a base error at line 15: optimizers[1].schedule", err)
	}
}

// DefaultWandbBase has the settings of examples/c-sensitivity-quick.yaml, less its
// optimizers, tables and output.
func TestDefaultWandbBase(t *testing.T) {
	quick, err := os.ReadFile(filepath.Join("examples", "c-sensitivity-quick.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := Parse(quick)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse([]byte(DefaultWandbBase + "optimizers: [{name: sfadamw, lr: 1e-3, betas: [[0.9, 0.99]]}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*Manifest{want, got} {
		m.Name, m.Description, m.Optimizers, m.Tables, m.Output = "", "", nil, nil, Output{}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the default base\n%+v\ndiffers from c-sensitivity-quick.yaml's settings\n%+v", got, want)
	}
}

func TestWandbMetric(t *testing.T) {
	for name, want := range map[string]string{
		"val_loss": MetricValLoss, "valid_loss": MetricValLoss, "validation_loss": MetricValLoss,
		"eval_loss": MetricValLoss, "loss/val": MetricValLoss, "val/loss": MetricValLoss, "eval/loss": MetricValLoss,
		"Validation Loss": MetricValLoss, "epoch/val_loss": MetricValLoss, "final_val_loss": MetricValLoss,
		"test_loss": MetricTestLoss, "test/loss": MetricTestLoss,
		"test_ppl": MetricTestPPL, "test_perplexity": MetricTestPPL, "perplexity/test": MetricTestPPL,
		"val_ppl": MetricValLoss, "perplexity": MetricValLoss, "val_perplexity": MetricValLoss,
		"eval/perplexity": MetricValLoss, "epoch/val_ppl": MetricValLoss,
		"loss": "", "train_loss": "", "epoch/loss": "", "val_test_loss": "", "val_accuracy": "", "": "", "epoch": "",
	} {
		got, ppl := wandbMetric(name)
		if got != want {
			t.Errorf("wandbMetric(%q) = %q, want %q", name, got, want)
		}
		lower := strings.ToLower(name)
		if wantPPL := want == MetricValLoss && (strings.Contains(lower, "ppl") || strings.Contains(lower, "perplexity")); ppl != wantPPL {
			t.Errorf("wandbMetric(%q): perplexity %v, want %v", name, ppl, wantPPL)
		}
	}
}

// W&B's brackets from max_iter, as its hyperband_stopping computes them.
func TestWandbBrackets(t *testing.T) {
	for _, tc := range []struct {
		maxIter, s, eta int
		want            []int
	}{
		{27, 2, 3, []int{3, 9}}, // the documentation's example
		{5, 2, 2, []int{1, 2}},  // ⌊2.5⌋, ⌊1.25⌋
		{9, 5, 3, []int{1, 3}},  // 9/27 < 1 ends them
		{2, 3, 3, nil},
	} {
		if got := wandbBrackets(tc.maxIter, tc.s, tc.eta); !slices.Equal(got, tc.want) {
			t.Errorf("brackets(max_iter %d, s %d, eta %d) = %v, want %v", tc.maxIter, tc.s, tc.eta, got, tc.want)
		}
	}
}

// FromWandb never panics, and what it writes parses.
func FuzzFromWandb(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "wandb", "*.yaml"))
	for _, file := range files {
		src, _ := os.ReadFile(file)
		f.Add(src)
	}
	f.Add([]byte(wandbSweep))
	f.Fuzz(func(t *testing.T, src []byte) {
		out, _, err := FromWandb(src, nil)
		if err != nil {
			return
		}
		if _, err := Parse(out); err != nil {
			t.Fatalf("the import of\n%s\ndoes not parse: %v\n%s", src, err, out)
		}
	})
}
