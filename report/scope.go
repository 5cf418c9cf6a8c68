package report

// Which of the paper's two setups a sweep twins: its 0.5M-token runs, of which the paper
// makes the claims of Observations 1–3 and of fig:modified (left, middle), or its 2M-token
// runs, of which it makes the claim of fig:modified (right). A manifest says it through its
// tables' labels, as the example manifests name the table they twin; a sweep without a
// label naming the large batch twins the 0.5M-token runs.

import (
	"fmt"
	"strings"

	"github.com/sfsweep/sfsweep/sweeps"
)

// largeBatchLabel reports whether a table label names the paper's large batch:
// "tab:c_sweep_2M", "tab:hyperparameter_main_largeBS", "fig:modified_large" and their twins.
func largeBatchLabel(label string) bool {
	return strings.Contains(label, "large") || strings.Contains(label, "2M")
}

// largeBatchSweep reports whether m twins the paper's large-batch runs, and the label
// that says so.
func largeBatchSweep(m *sweeps.Manifest) (bool, string) {
	for _, t := range m.Tables {
		if largeBatchLabel(t.Label) {
			return true, t.Label
		}
	}
	return false, ""
}

// outOfScope is the note of a check whose claim the paper makes of the other setup than
// the one sweep m twins; "" where the check applies.
func outOfScope(c check, m *sweeps.Manifest) string {
	large, label := largeBatchSweep(m)
	switch {
	case c.run == nil || c.large == large:
		return ""
	case large:
		return fmt.Sprintf("Out of this check's scope: the paper makes this claim of its 0.5M-token runs, and this sweep twins its 2M-token runs (its table %s).", label)
	}
	return "Out of this check's scope: the paper makes this claim of its 2M-token runs, and this sweep twins its 0.5M-token runs (no table of it is labelled as a large-batch one)."
}
