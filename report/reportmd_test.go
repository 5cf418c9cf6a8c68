package report

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// section builds the report section of a fake sweep: its tables, findings and one plot.
func (f *fakeSweep) section(t *testing.T) Section {
	t.Helper()
	tables, err := BuildTables(f.m, f.res.Trials, f.res.Outcomes)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := findingsIn(context.Background(), f.store, f.m, f.res, fakeRegime)
	if err != nil {
		t.Fatal(err)
	}
	return Section{Manifest: f.m, Source: "sweeps/" + f.m.Name + ".yaml", Results: f.res, Tables: tables, Findings: fs,
		Plots: []PlotLink{{Name: "curves", Path: f.m.Name + "/curves.png"}}}
}

func writeReport(t *testing.T, sections ...Section) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteReport(&b, sections); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The report of the paper-like sweep: the summary first, then the trials, the plot link,
// and each finding with its numbers (the decay probe's as worked by hand in
// TestFindingsHold); the same results give the same bytes.
func TestReportMarkdown(t *testing.T) {
	f := newFakeSweep(t, findingsManifest+"tables:\n  - {kind: c_sensitivity, name: c_findings, lr: 2e-3, beta2: 0.99}\n", paperSpecs(), "sf 0.5 seed 2")
	md := writeReport(t, f.section(t))
	for _, want := range []string{
		"| check | claim | findings |\n| --- | --- | --- |\n| obs1-decay | From every checkpoint probed, a short AdamW decay",
		"(Observation 1 · fig:Obs1 (right)) | holds |\n",
		"| obs4-eos | In full-batch training, the preconditioned sharpness at y hovers at the stability threshold 2/((1−β1)γ). (Observation 4 · fig:eos) | no data in this sweep |\n",
		"## findings\n\nManifest `sweeps/findings.yaml`; tables and plots under `sweeps/findings` in the store.\n\n",
		// 24 trials (no C equals 1/(1 − β1)), one diverged; 1.5 s of training each completed one
		"| trials | completed | diverged | failed | missing | training time |\n| ---: | ---: | ---: | ---: | ---: | ---: |\n| 27 | 26 | 1 | 0 | 0 | 39s |\n",
		"#### c\\_findings\n\n| β1 | Vanilla | C=50 | 200 |\n",
		"![curves](findings/curves.png)\n",
		"#### obs1-decay: holds\n\n*Observation 1 · fig:Obs1 (right).* From every checkpoint probed, a short AdamW decay",
		"| AdamW (constant) lr 1e-3 β (0.9, 0.95), batch 32 · decay-probe gain (before − after) from step 15: 0.298 ± 0.001 (n=3) | " +
			"SF-AdamW lr 2e-3 β (0.95, 0.99), batch 32 · decay-probe gain (before − after) from step 15: 0.004 ± 0.001 (n=3) | A > B | 3 | 0.294 | 0.001155 | 4.303 | [0.289, 0.299] | 1.5e-05 | 3.1e-05 | holds |\n",
		// SF-AdamW's gain against 0 within the margin: 0.004 ± 4.303·0.001/√3
		" | 0 | −0.01 < A − B < 0.01 | 3 | 0.004 | 0.0005774 | 4.303 | [0.001516, 0.006484] | 0.0091 | 0.0091 | holds |\n",
		"p Holm: adjusted over this finding's 2 rows with two seeds or more; a row holds on p at 0.05, and does not hold only on p Holm at 0.05.*\n\n#### obs1-ewa",
		"δ = 0.01 nats of loss",
		"#### refined-large-batch: no data in this sweep\n\n", // a 0.5M-token twin: out of the large-batch claim's scope
		"Out of this check's scope: the paper makes this claim of its 2M-token runs, and this sweep twins its 0.5M-token runs",
		"batch 32 · Val (primary) at the end of the branch from step 10, constant LR: 3.798 ± 0.099 (n=3) | A < B | 3 | -0.198 |", // the LR-decay branch against the run at the step it ends
		"(n=2, 1 diverged)",
		"Every refined configuration against its vanilla one",
		"#### obs5-reformulation: no data in this sweep\n\n*Observation 5 · eq. (SF_y).* Schedule-Free averages the momentum iterates y without storing an extra copy of the model.\n\nPaper: An identity of the update (eq. SF_y): no number.\n\nNeeds no sweep: it is an identity",
		// the paper's numbers beside the twin's
		"\n\nPaper: tab:c_sweep_05M: C = 200 against vanilla, test perplexity 24.93 against 27.70 at β1 0.9 (−10.0%), 24.37 against 25.12 at 0.95 (−3.0%).\n\n",
		"Twin, test perplexity of A against B (mean over seeds): refined SF-AdamW C=200 lr 2e-3 β (0.95, 0.99), batch 32 against SF-AdamW lr 2e-3 β (0.95, 0.99), batch 32: -11.0%.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if i, j := strings.Index(md, "| obs1-decay |"), strings.Index(md, "## findings"); i < 0 || i > j {
		t.Error("the summary does not come first")
	}
	if again := writeReport(t, newFakeSweep(t, findingsManifest+"tables:\n  - {kind: c_sensitivity, name: c_findings, lr: 2e-3, beta2: 0.99}\n", paperSpecs(), "sf 0.5 seed 2").section(t)); again != md {
		t.Error("the same results gave a different report")
	}
	if testing.Verbose() {
		t.Log(md)
	}
}

// Several manifests: one verdict column each in the summary, a section each in order; a
// check without data and without rows says what it needs.
func TestReportSeveralManifests(t *testing.T) {
	a := newFakeSweep(t, findingsManifest, paperSpecs())
	b := newFakeSweep(t, strings.Replace(findingsManifest, "name: findings", "name: empty", 1), nil)
	md := writeReport(t, a.section(t), b.section(t))
	for _, want := range []string{
		"| check | claim | findings | empty |\n| --- | --- | --- | --- |\n",
		"(Observation 1 · fig:Obs1 (right)) | holds | no data in this sweep |\n",
		"| 27 | 0 | 0 | 0 | 27 | 0s |\n",
		"#### obs1-decay: no data in this sweep\n\n*Observation 1 · fig:Obs1 (right).* From every checkpoint probed, a short AdamW decay (LR 1e-4 → 0) lowers AdamW's loss more than SF-AdamW's, and leaves SF-AdamW's unchanged (within the margin): SF-AdamW already follows the river.\n\n" +
			"Paper: The paper shows curves, no number: the AdamW decay \"leads to a sharp loss drop for AdamW, but has no effect when applied to the SF-AdamW trajectory\" (fig:Obs1, right).\n\n" +
			"no vanilla SF-AdamW configuration completed a seed\n\nNeeds a constant-LR AdamW and a vanilla SF-AdamW configuration with decay-probe results (probes.decay)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if i, j := strings.Index(md, "## findings\n"), strings.Index(md, "## empty\n"); i < 0 || j < i {
		t.Errorf("sections at %d and %d, want findings then empty", i, j)
	}
}
