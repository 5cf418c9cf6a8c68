package sweeps

import (
	"os"
	"strings"
	"testing"
)

// FuzzParse: any input ends in a manifest or an error, never a panic; a manifest that
// parses expands within its bound.
func FuzzParse(f *testing.F) {
	ex, _ := os.ReadFile("examples/c-sensitivity-tiny.yaml")
	f.Add(ex)
	f.Add([]byte(base))
	for _, s := range []string{
		"", "name: [", "- a\n- b", "name: x\nsteps: -1", "a: &a [*a]", strings.Repeat("[", 100),
		"name: x\noptimizers: [{name: sfadamw, lr: .nan, betas: [[1, 1]]}]",
		strings.Replace(base, "c: [vanilla, 50]", "c: [vanilla, 1e308]", 1),
		strings.Replace(base, "seeds: [1, 2]", "seeds: [-1]", 1),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		m, err := Parse(src)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		trials, err := m.Expand()
		if err != nil {
			t.Fatalf("a parsed manifest failed to expand: %v", err)
		}
		if len(trials) > m.maxTrials() {
			t.Fatalf("%d trials beyond max_trials", len(trials))
		}
	})
}
