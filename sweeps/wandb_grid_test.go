package sweeps

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/fielderr"
)

// gridPoints are the configurations of the manifest's expanded grid, as "optimizer
// beta1 lr c" of the first seed, sorted.
func gridPoints(t *testing.T, m *Manifest) []string {
	t.Helper()
	trials, err := m.Expand()
	if err != nil {
		t.Fatal(err)
	}
	var ps []string
	for _, p := range m.GridPoints(trials) {
		ps = append(ps, fmt.Sprintf("%s %g %g %g", m.Optimizers[p.Grid].Name, p.Beta1, p.LR, p.C))
	}
	slices.Sort(ps)
	return ps
}

// A grid with run_cap trains W&B's first run_cap points: the product of the parameters
// sorted by name (beta1, c, learning_rate, optimizer), the last varying fastest.
func TestWandbGridRunCap(t *testing.T) {
	const sweep = `method: grid
run_cap: %d
parameters:
  optimizer: {values: [sfadamw, adamw]}
  learning_rate: {values: [0.001, 0.002, 0.004]}
  beta1: {values: [0.9, 0.95]}
  beta2: {value: 0.99}
  c: {values: [vanilla, 50]}
`
	// every point in W&B's order: beta1, c, learning_rate, optimizer
	var order []string
	for _, b1 := range []string{"0.9", "0.95"} {
		for _, c := range []string{"0", "50"} {
			for _, lr := range []string{"0.001", "0.002", "0.004"} {
				for _, opt := range []string{"sfadamw", "adamw"} {
					pc := c
					if opt == "adamw" {
						pc = "0" // C is refined SF-AdamW's: adamw's points of either C are one
					}
					order = append(order, fmt.Sprintf("%s %s %s %s", opt, b1, lr, pc))
				}
			}
		}
	}
	for _, n := range []int{1, 2, 5, 7, 12, 13, 23, 24, 100} {
		m, notes := importWandb(t, fmt.Sprintf(sweep, n), "")
		want := slices.Compact(slices.Sorted(slices.Values(order[:min(n, len(order))])))
		if got := gridPoints(t, m); !slices.Equal(got, want) {
			t.Errorf("run_cap %d: the grid holds\n%q\nwant W&B's first points\n%q", n, got, want)
		}
		if m.Search.Trials != 0 || m.Searched() {
			t.Errorf("run_cap %d: search %+v: want a plain grid of exactly those points", n, m.Search)
		}
		capped := slices.ContainsFunc(notes, func(s string) bool { return strings.Contains(s, "W&B runs the first") })
		if capped != (n < len(order)) {
			t.Errorf("run_cap %d: notes %q", n, notes)
		}
	}
	// a searched grid (early stopping) is capped the same way, and its plan counts them
	m, _ := importWandb(t, fmt.Sprintf(sweep, 5)+"early_terminate: {type: hyperband, min_iter: 1}\n", "")
	plan, err := m.Plan()
	configs := 0
	for _, n := range plan.Configs {
		configs += n
	}
	if err != nil || configs != 5 || len(gridPoints(t, m)) != 5 {
		t.Errorf("plan %+v (%v), points %q: want 5 configurations", plan, err, gridPoints(t, m))
	}
}

func TestWandbBlocks(t *testing.T) {
	// the first n points of 2 × 3 × 2, each point once, in blocks
	sizes := []int{2, 3, 2}
	for n := 1; n <= 12; n++ {
		var got [][3]int
		for _, b := range wandbBlocks(sizes, n) {
			for _, i := range b[0] {
				for _, j := range b[1] {
					for _, k := range b[2] {
						got = append(got, [3]int{i, j, k})
					}
				}
			}
		}
		var want [][3]int
		for p := range n {
			want = append(want, [3]int{p / 6, p / 2 % 3, p % 2})
		}
		slices.SortFunc(got, func(a, b [3]int) int { return (a[0]*6 + a[1]*2 + a[2]) - (b[0]*6 + b[1]*2 + b[2]) })
		if !slices.Equal(got, want) {
			t.Errorf("n %d: %v, want %v", n, got, want)
		}
		if len(wandbBlocks(sizes, n)) > len(sizes) {
			t.Errorf("n %d: %d blocks", n, len(wandbBlocks(sizes, n)))
		}
	}
}

// W&B's hyperband always lets its best run finish: halving must leave at least one
// configuration at the end.
func TestWandbHyperbandFinishes(t *testing.T) {
	const sweep = `method: bayes
run_cap: %d
parameters:
  lr: {distribution: log_uniform_values, min: 1.0e-4, max: 1.0e-2}
  beta1: {values: [0.9, 0.95]}
early_terminate: {type: hyperband, min_iter: %d, eta: %d}
`
	for _, tc := range []struct {
		runCap, minIter, eta int
		rungs                []int // nil: no early stopping
	}{
		{3, 3, 3, []int{90, 300}}, // was [90 270 300]: halving [3 1 0]
		{9, 3, 3, []int{90, 270, 300}},
		{2, 1, 3, nil},
		{4, 1, 2, []int{30, 60, 300}},
		{100, 1, 3, []int{30, 90, 270, 300}},
	} {
		m, notes := importWandb(t, fmt.Sprintf(sweep, tc.runCap, tc.minIter, tc.eta), "")
		if got := m.Rungs(); !slices.Equal(got, tc.rungs) {
			t.Errorf("run_cap %d, min_iter %d, eta %d: rungs %v, want %v (notes %q)", tc.runCap, tc.minIter, tc.eta, got, tc.rungs, notes)
		}
		plan, err := m.Plan()
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Halving) > 0 && plan.Halving[len(plan.Halving)-1] < 1 {
			t.Errorf("run_cap %d, min_iter %d, eta %d: halving %v finishes none", tc.runCap, tc.minIter, tc.eta, plan.Halving)
		}
	}
	_, notes := importWandb(t, fmt.Sprintf(sweep, 3, 3, 3), "")
	if !slices.ContainsFunc(notes, func(s string) bool {
		return strings.HasPrefix(s, "line 6: early_terminate = hyperband: rungs [90] of [90 270] kept")
	}) {
		t.Errorf("no note of the rungs dropped in %q", notes)
	}
}

// A sweep of beta1 alone takes β2 from the base's grids, else DefaultBeta2.
func TestWandbBeta1Only(t *testing.T) {
	const sweep = "method: grid\nparameters:\n  lr: {value: 0.001}\n  beta1: {values: [0.9, 0.95]}\n"
	m, notes := importWandb(t, sweep, "")
	if v, ok := m.Optimizers[0].Beta2.Only(); !ok || v != DefaultBeta2 {
		t.Errorf("beta2 %v, want %g", m.Optimizers[0].Beta2, DefaultBeta2)
	}
	if !slices.ContainsFunc(notes, func(s string) bool { return strings.HasPrefix(s, "line 2: parameters.beta2 = not given: beta2 = 0.99") }) {
		t.Errorf("notes %q", notes)
	}
	// the base's pairs give their β2s
	m, _ = importWandb(t, sweep, wandbBase)
	if sf, aw := m.Optimizers[0], m.Optimizers[1]; !slices.Equal(sf.Beta2.Values, []float64{0.99}) || !slices.Equal(aw.Beta2.Values, []float64{0.95}) || !slices.Equal(aw.Beta1.Values, []float64{0.9, 0.95}) {
		t.Errorf("grids %+v, %+v: want the base's β2 with the sweep's β1", sf, aw)
	}
}

func TestWandbPerplexityMetric(t *testing.T) {
	m, notes := importWandb(t, strings.Replace(wandbSweep, "name: val_loss", "name: epoch/val_ppl", 1), "")
	if m.MetricName() != MetricValLoss {
		t.Errorf("metric %s", m.MetricName())
	}
	if !slices.ContainsFunc(notes, func(s string) bool {
		return strings.HasPrefix(s, `line 3: metric.name = "epoch/val_ppl": ranked by val_loss`)
	}) {
		t.Errorf("notes %q", notes)
	}
}

// An error in a value the sweep set names the sweep's key and line, a bound its min or
// max: never the base manifest.
func TestWandbErrorsNameTheSweep(t *testing.T) {
	for _, tc := range []struct {
		old, new string
		base     string
		want     string
	}{
		{"  beta2:", "  warmup_frac: {min: 0.0, max: 1.0}\n  beta2:", "", "line 13: parameters.warmup_frac.max = 1.0: must be in [0, 1)"},
		{"  beta2:", "  warmup_frac: {min: 0.0, max: 1.0}\n  beta2:", wandbBase, "line 13: parameters.warmup_frac.max = 1.0: must be in [0, 1)"},
		{"  beta2:", "  warmup_ratio:\n    value: 1.0\n  beta2:", wandbBase, "line 13: parameters.warmup_ratio = 1: must be in [0, 1)"},
		{"distribution: log_uniform_values\n    min: 1.0e-4", "min: 0.0", "", "line 8: parameters.lr.min = 0.0: must be a finite number > 0"},
		{"distribution: log_uniform_values\n    min: 1.0e-4", "min: 0.0", wandbBase, "line 8: parameters.lr.min = 0.0: must be a finite number > 0"},
		{"values: [0.9, 0.95]", "{min: 0.5, max: 1.0}", "", "line 12: parameters.beta1.max = 1.0: must be in [0, 1)"},
		{"values: [0.9, 0.95]", "{min: -0.5, max: 0.9}", "", "line 12: parameters.beta1.min = -0.5: must be in [0, 1)"},
	} {
		src := strings.Replace(wandbSweep, tc.old, tc.new, 1)
		var base []byte
		if tc.base != "" { // whose rungs would be no checkpoint steps
			base = []byte(tc.base)
			src = strings.Replace(src, "early_terminate:\n  type: hyperband\n  min_iter: 1\n", "", 1)
		}
		_, _, err := FromWandb([]byte(src), base)
		var be *BaseError
		var e *fielderr.Error
		if err == nil || errors.As(err, &be) || !errors.As(err, &e) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q → %q: error %v (%T), want %q...", tc.old, tc.new, err, err, tc.want)
		}
	}
}
