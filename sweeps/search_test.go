package sweeps

import (
	"slices"
	"strings"
	"testing"
)

// searchBase is a TPE search over lr (log-uniform), C (a choice with vanilla) and β1 and
// β2 apart, stopped by ASHA at rungs 10 and 30 of 90 steps.
const searchBase = `name: s
model: micro-llama
data:
  default: byte
batch_tokens: 32
steps: 90
eval_every: 10
checkpoint_every: 10
seeds: [1, 2]
optimizers:
  - name: sfadamw
    lr: {distribution: log_uniform, min: 1e-4, max: 1e-2}
    beta1: [0.9, 0.95]
    beta2: 0.99
    c: [vanilla, 50, 200]
search:
  method: tpe
  trials: 12
  seed: 7
  metric: test_ppl
  early_stopping: {rule: asha, min_steps: 10, eta: 3}
`

func TestSearchManifest(t *testing.T) {
	m, err := Parse([]byte(searchBase))
	if err != nil {
		t.Fatal(err)
	}
	if !m.Searched() || !m.Sampled() || m.Method() != MethodTPE || m.MetricName() != MetricTestPPL {
		t.Errorf("search %+v", m.Search)
	}
	if got := m.Rungs(); !slices.Equal(got, []int{10, 30, 90}) {
		t.Errorf("rungs %v, want [10 30 90]", got)
	}
	dims := m.Dims(0)
	var names []string
	for _, d := range dims {
		names = append(names, d.Name)
	}
	if !slices.Equal(names, []string{ParamLR, ParamBeta1, ParamC}) {
		t.Errorf("searched dims %v, want lr, beta1, c (beta2 has one value)", names)
	}
	if _, err := m.Expand(); err == nil {
		t.Error("a sampled search expanded into a grid")
	}
	trials, err := m.PointTrials(0, map[string]float64{ParamLR: 3e-3, ParamBeta1: 0.95, ParamC: 50})
	if err != nil || len(trials) != 2 {
		t.Fatalf("%d trials, %v", len(trials), err)
	}
	for i, tr := range trials {
		o := tr.Config.Optimizer
		if o.LR != 3e-3 || o.Beta1 != 0.95 || o.Beta2 != 0.99 || o.C != 50 || tr.Config.Seed != uint64(i+1) || tr.ID != tr.Config.Hash()[:IDLen] {
			t.Errorf("trial %d: %+v (ID %s)", i, o, tr.ID)
		}
	}
	// C = 1/(1−β1) is vanilla, the same trial
	a, _ := m.PointTrials(0, map[string]float64{ParamLR: 1e-3, ParamBeta1: 0.95, ParamC: 20})
	b, _ := m.PointTrials(0, map[string]float64{ParamLR: 1e-3, ParamBeta1: 0.95, ParamC: 0})
	if a[0].ID != b[0].ID {
		t.Error("C = 20 at β1 = 0.95 is not the vanilla trial")
	}
	// the median rule's rungs are every min_steps
	med, err := Parse([]byte(strings.Replace(searchBase, "rule: asha", "rule: median", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got := med.Rungs(); !slices.Equal(got, []int{10, 20, 30, 40, 50, 60, 70, 80, 90}) {
		t.Errorf("median rungs %v", got)
	}
}

// beta1 and beta2 apart expand as their product, and a grid with early stopping still
// expands (its configurations are the grid's).
func TestSeparateBetasGrid(t *testing.T) {
	src := strings.Replace(searchBase, "lr: {distribution: log_uniform, min: 1e-4, max: 1e-2}", "lr: [1e-3, 2e-3]", 1)
	src = strings.Replace(src, "beta2: 0.99", "beta2: [0.99, 0.999]", 1)
	src = strings.Replace(src, "method: tpe", "method: grid", 1)
	m, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if !m.Searched() || m.Sampled() {
		t.Errorf("grid with early stopping: searched %v, sampled %v", m.Searched(), m.Sampled())
	}
	trials, err := m.Expand()
	if err != nil {
		t.Fatal(err)
	}
	// 2 lr × (2 β1 × 2 β2) × 3 C × 2 seeds, less the two vanilla-equal Cs? none: C = 50,
	// 200 are neither 1/(1−0.9) = 10 nor 1/(1−0.95) = 20
	if m.Count() != 48 || len(trials) != 48 {
		t.Errorf("%d points, %d trials; want 48", m.Count(), len(trials))
	}
	// per (β1, β2) pair, 3 C × 2 seeds: the seventh trial has the second pair
	if p := trials[6].Points[0]; p.Beta1 != 0.9 || p.Beta2 != 0.999 {
		t.Errorf("seventh trial %+v: want β1 0.9, β2 0.999 (beta1 outer, beta2 inner)", p)
	}
	if dims := m.Dims(0); len(dims) != 4 {
		t.Errorf("dims %v: want lr, beta1, beta2, c", dims)
	}
}

func TestSearchErrors(t *testing.T) {
	for _, tc := range []struct{ old, new, want string }{
		{"method: tpe", "method: bayes", `line 17: search.method = "bayes": must be "grid", "random" or "tpe"`},
		{"method: tpe", "method: grid", "line 12: optimizers[0].lr = log_uniform: a distribution is sampled by a search"},
		{"trials: 12", "trials: 0", "search.trials = 0: must be ≥ 1"},
		{"trials: 12", "trials: 6000", "search.trials = 6000: 6000 configurations × 1 grids × 2 seeds is more than max_trials = 10000"},
		{"metric: test_ppl", "metric: accuracy", `line 20: search.metric = "accuracy"`},
		{"metric: test_ppl", "metric: test_ppl\n  goal: maximize", `search.goal = "maximize": the metrics are losses`},
		{"metric: test_ppl", "metric: test_ppl\n  iterate: w", `search.iterate = "w": sfadamw trials have x, y, ewa_x, ewa_y`},
		{"min: 1e-4", "min: 0", "optimizers[0].lr = [0, 0.01]: log_uniform needs min > 0"},
		{"min: 1e-4", "min: 1e-1", "optimizers[0].lr = [0.1, 0.01]: min and max must be finite with min < max"},
		{"log_uniform", "gaussian", `optimizers[0].lr = {distribution: "gaussian"}: distribution must be`},
		{"max: 1e-2}", "max: 1e-2, mode: 3}", `line 12: optimizers[0].lr.mode = mode: a distribution has the fields`},
		{"beta1: [0.9, 0.95]", "beta1: {distribution: uniform, min: 0.5, max: 1}", "line 13: optimizers[0].beta1[1] = 1: must be in [0, 1)"},
		{"c: [vanilla, 50, 200]", "c: {distribution: uniform, min: -5, max: 50}", "optimizers[0].c[0] = -5"},
		{"batch_tokens: 32", "batch_tokens: {distribution: log_uniform, min: 32, max: 64}", "batch_tokens = log_uniform: this parameter takes whole numbers"},
		{"beta2: 0.99", "", "optimizers[0].beta2 = []: must give beta2 with beta1"},
		{"beta2: 0.99", "beta2: 0.99\n    betas: [[0.9, 0.99]]", "optimizers[0].beta1 = [0.9 0.95]: give betas as [beta1, beta2] pairs or beta1 and beta2 apart"},
		{"rule: asha", "rule: bohb", `search.early_stopping.rule = "bohb": must be "asha", "sync_halving", "median" or "hyperband"`},
		{"eta: 3}", "eta: 3, brackets: 2}", "search.early_stopping.brackets = 2: brackets are hyperband's; asha has none"},
		{"rule: asha, min_steps: 10, eta: 3}", "rule: hyperband, min_steps: 10, eta: 3, brackets: 4}", "search.early_stopping.brackets = 4: the rungs [10 30 90] (the end included) start at most 3 brackets"},
		{"rule: asha, min_steps: 10, eta: 3}", "rule: hyperband, min_steps: 10, eta: 3, brackets: -1}", "search.early_stopping.brackets = -1: must be ≥ 1"},
		{"eta: 3}", "eta: 3, grace: 1.5}", "search.early_stopping.grace = 1.5: must be a share of the run's steps in [0, 1)"},
		{"eta: 3}", "eta: 3, grace_steps: 90}", "search.early_stopping.grace_steps = 90: must be in [0, steps = 90)"},
		{"eta: 3}", "eta: 3, grace: 0.2, grace_steps: 20}", "search.early_stopping.grace_steps = 20: give grace (0.2 of the run) or grace_steps, not both"},
		{"eta: 3}", "eta: 3, grace_steps: 31}", "search.early_stopping.grace_steps = 31: no rung of [10 30] comes at or after step 31"},
		{"eta: 3}", "eta: 3, iterate: w}", `search.early_stopping.iterate = "w": sfadamw trials have x, y, ewa_x, ewa_y`},
		{"min_steps: 10, eta: 3}", "rungs: [10, 15], grace_steps: 12}", "search.early_stopping.rungs[1] = 15: rung 15 must be an evaluation step"},
		{"eta: 3", "eta: 1", "search.early_stopping.eta = 1: must be ≥ 2"},
		{"min_steps: 10", "min_steps: 90", "search.early_stopping.min_steps = 90: must be below steps = 90"},
		{"min_steps: 10", "min_steps: 15", "rung 15 must be an evaluation step (a multiple of eval_every = 10)"},
		{"min_steps: 10", "rungs: [20, 10]", "search.early_stopping.rungs[1] = 10: rungs must increase"},
		{"checkpoint_every: 10", "checkpoint_every: 30", "search.early_stopping.min_steps = 10: rung 10 must be a checkpoint step"},
		{"checkpoint_every: 10", "checkpoint_every: 10\nkeep_checkpoints: 2", "keep_checkpoints = 2: early stopping resumes promoted trials"},
	} {
		_, err := Parse([]byte(strings.Replace(searchBase, tc.old, tc.new, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s → %s: error %v, want one containing %q", tc.old, tc.new, err, tc.want)
		}
	}
}

// TestHyperbandAndGrace: hyperband's rungs are halving's, min_steps·eta^k; a grace period
// drops the rungs before it (so a rung there need not be an evaluation step), and the
// plan counts each bracket from its own first rung.
func TestHyperbandAndGrace(t *testing.T) {
	src := strings.Replace(searchBase, "rule: asha, min_steps: 10, eta: 3}", "rule: hyperband, min_steps: 10, eta: 3}", 1)
	src = strings.Replace(src, "method: tpe\n  trials: 12", "method: tpe\n  trials: 17", 1)
	m, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Rungs(); !slices.Equal(got, []int{10, 30, 90}) || m.Brackets() != 0 {
		t.Errorf("hyperband rungs %v, brackets %d; want [10 30 90], 0 (all)", got, m.Brackets())
	}
	p, err := m.Plan()
	if err != nil {
		t.Fatal(err)
	}
	// 17 configurations in brackets of 9, 5 and 3 (weights 9, 5, 3). Bracket 0: 9 to 10,
	// 3 to 30, 1 to 90; bracket 1: 5 to 30, 1 to 90; bracket 2: 3 to 90. Steps a seed:
	// 9·10 + 3·20 + 1·60 + 5·30 + 1·60 + 3·90 = 690, of 17·90 = 1530 at worst.
	if !slices.Equal(p.Halving, []int{9, 8, 5}) || p.Expected == nil || p.Expected.Steps != 2*690 || p.Worst.Steps != 2*1530 {
		t.Errorf("plan: halving %v, expected %+v, worst %+v; want [9 8 5], %d steps of %d", p.Halving, p.Expected, p.Worst, 2*690, 2*1530)
	}

	for _, c := range []struct {
		grace string
		want  []int
	}{
		{"grace: 0.2", []int{30, 90}},      // ⌈0.2·90⌉ = 18
		{"grace_steps: 30", []int{30, 90}}, // a rung at the grace step is judged
		{"grace_steps: 9", []int{10, 30, 90}},
	} {
		g, err := Parse([]byte(strings.Replace(searchBase, "eta: 3}", "eta: 3, "+c.grace+"}", 1)))
		if err != nil {
			t.Fatalf("%s: %v", c.grace, err)
		}
		if got := g.Rungs(); !slices.Equal(got, c.want) {
			t.Errorf("%s: rungs %v, want %v", c.grace, got, c.want)
		}
		if w := g.RungWarnings(); len(c.want) == 2 && len(w) != 0 {
			t.Errorf("%s: warnings %q for rungs the grace period leaves unjudged", c.grace, w)
		}
	}
	// 17 fill the brackets; of 12, bracket 0 gets 6, fewer than the 9 it needs
	for _, w := range m.RungWarnings() {
		if strings.Contains(w, "brackets") {
			t.Errorf("17 configurations: warning %q", w)
		}
	}
	twelve, err := Parse([]byte(strings.Replace(src, "trials: 17", "trials: 12", 1)))
	if err != nil {
		t.Fatal(err)
	}
	ws := twelve.RungWarnings()
	if want := "search.early_stopping.brackets: bracket 0 gets 6 of the 12 configurations, from step 10; it needs 9 (eta^2)"; len(ws) == 0 || !strings.HasPrefix(ws[len(ws)-1], want) {
		t.Errorf("12 configurations: warnings %q, want the last to start %q", ws, want)
	}
	// the rung iterate: early_stopping's, else the search's, resolved by optimizer
	it, err := Parse([]byte(strings.Replace(searchBase, "eta: 3}", "eta: 3, iterate: ewa}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got := it.RungIterate("sfadamw"); got != "ewa_x" {
		t.Errorf("rung iterate %q, want ewa_x", got)
	}
	if got := m.RungIterate("sfadamw"); got != "x" {
		t.Errorf("default rung iterate %q, want x (the metric's)", got)
	}
}

// A rung inside the warmup, or in the first fifth of the run, is warned of; a later one is
// not, and a search without early stopping has no rungs to warn of.
func TestRungWarnings(t *testing.T) {
	for _, c := range []struct {
		old, new string
		want     []string
	}{
		// 90 steps: warmup 5% is 4 steps, the first 20% ends at step 18
		{"min_steps: 10, eta: 3", "rungs: [10, 30, 60]", []string{
			"search.early_stopping.rungs[0]: rung at step 10 is in the first 20% of the run (before step 18)",
			"search.early_stopping.rungs[2]: rung at step 60: ⌊1/3⌋ = 0 of its 1 configurations go on by eta"}},
		{"steps: 90", "steps: 90\nwarmup_frac: 0.2", []string{
			"search.early_stopping.min_steps: rung at step 10 is inside the warmup (its first 18 steps)"}},
		{"min_steps: 10, eta: 3", "rungs: [20, 40]", nil},
		{"  early_stopping: {rule: asha, min_steps: 10, eta: 3}\n", "", nil},
	} {
		m, err := Parse([]byte(strings.Replace(searchBase, c.old, c.new, 1)))
		if err != nil {
			t.Fatalf("%q → %q: %v", c.old, c.new, err)
		}
		got := m.RungWarnings()
		if len(got) != len(c.want) {
			t.Errorf("%q → %q: warnings %q, want %d", c.old, c.new, got, len(c.want))
			continue
		}
		for i, w := range c.want {
			if !strings.HasPrefix(got[i], w) {
				t.Errorf("%q → %q: warning %q, want it to start %q", c.old, c.new, got[i], w)
			}
		}
	}
}
