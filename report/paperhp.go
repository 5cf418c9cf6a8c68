package report

// A hyperparameter table's best configurations against the paper's bold ones.

import (
	"fmt"
	"slices"
	"strings"
)

// paperBest is the configuration the paper bolds for one optimizer of a hyperparameter
// table.
type paperBest struct {
	lr           float64
	beta1, beta2 float64
	c            float64 // refined SF-AdamW only
}

// paperHP is one of the paper's hyperparameter tables: its bold configurations by
// optimizer key ("adamw", "sfadamw", "refined").
type paperHP struct {
	label string
	best  map[string]paperBest
}

// paperHPTables are the bold entries of tab:hyperparameter_main, _main_largeBS, _owt and
// _owt_largeBS.
var paperHPTables = []paperHP{
	{"tab:hyperparameter_main", map[string]paperBest{"adamw": {1e-3, 0.9, 0.95, 0}, "sfadamw": {2e-3, 0.95, 0.99, 0}, "refined": {2e-3, 0.95, 0.99, 200}}},
	{"tab:hyperparameter_main_largeBS", map[string]paperBest{"adamw": {1e-3, 0.9, 0.95, 0}, "sfadamw": {2e-3, 0.98, 0.99, 0}, "refined": {2e-3, 0.98, 0.99, 200}}},
	{"tab:hyperparameter_owt", map[string]paperBest{"adamw": {1e-3, 0.9, 0.95, 0}, "sfadamw": {2e-3, 0.95, 0.99, 0}, "refined": {2e-3, 0.95, 0.99, 200}}},
	{"tab:hyperparameter_owt_largeBS", map[string]paperBest{"adamw": {5e-3, 0.9, 0.95, 0}, "sfadamw": {2e-3, 0.98, 0.99, 0}, "refined": {5e-3, 0.98, 0.99, 500}}},
}

// paperHPFor is the paper's hyperparameter table a sweep's table twins, by its label: the
// OpenWebText2 tables for a label naming "owt", the large-batch ones for a label naming
// the large batch (largeBatchLabel); nil for a table without a label.
func paperHPFor(label string) *paperHP {
	if label == "" {
		return nil
	}
	i := 0
	if strings.Contains(label, "owt") {
		i = 2
	}
	if largeBatchLabel(label) {
		i++
	}
	return &paperHPTables[i]
}

// writeHPAgainstPaper writes each optimizer's best configuration of t (chosen on
// validation) beside the paper's, says where they differ, and flags a best learning rate
// at an end of the twin's grid, where the optimum may lie beyond it.
func writeHPAgainstPaper(b *strings.Builder, t *Table) {
	p := paperHPFor(t.Label)
	if p == nil {
		return
	}
	var lines []string
	for _, g := range t.Grids {
		pb, ok := p.best[g.Optimizer]
		if !ok || g.Best < 0 {
			continue
		}
		tb := t.Trials[g.Best]
		var diffs []string
		if tb.LR != pb.lr {
			diffs = append(diffs, "learning rate")
		}
		if tb.Beta1 != pb.beta1 || tb.Beta2 != pb.beta2 {
			diffs = append(diffs, "(β1, β2)")
		}
		if g.Optimizer == "refined" && tb.C != pb.c {
			diffs = append(diffs, "C")
		}
		same := "the same"
		if len(diffs) > 0 {
			same = "differs in " + strings.Join(diffs, " and ")
		}
		edge := ""
		if len(g.LR) > 1 && (tb.LR == g.LR[0] || tb.LR == g.LR[len(g.LR)-1]) {
			edge = "; the twin's best learning rate is at an end of its grid, so its optimum may lie beyond"
		}
		name := optimizers[slices.IndexFunc(optimizers, func(o struct{ key, text, latex string }) bool { return o.key == g.Optimizer })].text
		if g.Schedule != "" {
			name += " (" + g.Schedule + ")"
		}
		lines = append(lines, fmt.Sprintf("- %s: paper %s, twin %s: %s%s.", name, formatBest(g.Optimizer, pb.lr, pb.beta1, pb.beta2, pb.c),
			formatBest(g.Optimizer, tb.LR, tb.Beta1, tb.Beta2, tb.C), same, edge))
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(b, "**Against the paper's %s** (chosen by this table's label, %s), each optimizer's best configuration (the twin's chosen on validation loss):\n\n%s\n\n",
		p.label, t.Label, strings.Join(lines, "\n"))
}

func formatBest(opt string, lr, beta1, beta2, c float64) string {
	s := fmt.Sprintf("lr %s, (%s, %s)", formatLR(lr), formatG(beta1), formatG(beta2))
	if opt == "refined" {
		s += ", C = " + formatG(c)
	}
	return s
}
