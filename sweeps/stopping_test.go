package sweeps

import (
	"slices"
	"strings"
	"testing"
)

// TestFinalists: sync_halving keeps at least finalists of a rung. 12 configurations, rungs
// 20 and 50 of 90, eta 3: ⌊12/3⌋ = 4 reach 50 and ⌊4/3⌋ = 1 the end, or 2 with 2
// finalists. Steps a seed: 12·20 + 4·30 + 1·40 = 400, or 440 with 2 finalists. One
// finalist is warned of.
func TestFinalists(t *testing.T) {
	src := strings.Replace(searchBase, "rule: asha, min_steps: 10, eta: 3}", "rule: sync_halving, rungs: [20, 50], eta: 3}", 1)
	for _, c := range []struct {
		finalists string
		n         int
		halving   []int
		steps     int64
		warned    bool
	}{
		{"", 0, []int{12, 4, 1}, 400, true},
		{", finalists: 1", 1, []int{12, 4, 1}, 400, true},
		{", finalists: 2", 2, []int{12, 4, 2}, 440, false},
		{", finalists: 5", 5, []int{12, 5, 5}, 12*20 + 5*30 + 5*40, false},
	} {
		m, err := Parse([]byte(strings.Replace(src, "eta: 3}", "eta: 3"+c.finalists+"}", 1)))
		if err != nil {
			t.Fatalf("%q: %v", c.finalists, err)
		}
		p, err := m.Plan()
		if err != nil {
			t.Fatal(err)
		}
		if m.Finalists() != c.n || !slices.Equal(p.Halving, c.halving) || p.Expected == nil || p.Expected.Steps != 2*c.steps {
			t.Errorf("%q: finalists %d, halving %v, expected %+v; want %d, %v, %d steps", c.finalists, m.Finalists(), p.Halving, p.Expected, c.n, c.halving, 2*c.steps)
		}
		const want = "search.early_stopping.finalists: one configuration of the 4 at step 50 goes on to the end"
		if ws := m.RungWarnings(); slices.ContainsFunc(ws, func(w string) bool { return strings.HasPrefix(w, want) }) != c.warned {
			t.Errorf("%q: warnings %q; want one starting %q: %v", c.finalists, ws, want, c.warned)
		}
	}
	for _, c := range []struct{ rule, want string }{
		{"sync_halving, rungs: [20, 50], eta: 3, finalists: -1", "search.early_stopping.finalists = -1: must be ≥ 1"},
		{"asha, rungs: [20, 50], eta: 3, finalists: 2", "search.early_stopping.finalists = 2: finalists are sync_halving's; asha has none"},
		{"hyperband, rungs: [20, 50], eta: 3, finalists: 2", "search.early_stopping.finalists = 2: finalists are sync_halving's; hyperband has none"},
	} {
		_, err := Parse([]byte(strings.Replace(searchBase, "rule: asha, min_steps: 10, eta: 3", "rule: "+c.rule, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.rule, err, c.want)
		}
	}
}
