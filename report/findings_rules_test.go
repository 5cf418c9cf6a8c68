package report

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/internal/stats"
)

// tFor is the t statistic whose two-sided p-value at 2 degrees of freedom is p, from the
// closed form p = 1 − t/√(2 + t²).
func tFor(p float64) float64 {
	q := (1 - p) * (1 - p)
	return math.Sqrt(2 * q / (1 - q))
}

// pairs is the paired comparison of differences ds with 0.
func pairs(ds ...float64) stats.Paired { return stats.Compare(ds, make([]float64, len(ds))) }

// row is a comparison of differences ds against the claim want, with the margin where
// want needs one.
func row(want string, ds ...float64) Comparison {
	r := Comparison{Want: want, Paired: pairs(ds...)}
	if want == "≤" || want == "≈" {
		r.Margin = margin
	}
	return r
}

func verdicts(rows []Comparison) []Verdict {
	decide(rows)
	out := make([]Verdict, len(rows))
	for i, r := range rows {
		out[i] = r.Verdict
	}
	return out
}

// judge reads a "holds" on the comparison's own p-value (a finding is a conjunction, an
// intersection–union test) and a "does not hold" on its Holm-adjusted one, with the side
// of the bound, claim by claim.
func TestJudge(t *testing.T) {
	for _, c := range []struct {
		want        string
		n           int
		diff        float64
		p, adjusted float64
		v           Verdict
	}{
		{"<", 0, 0, 1, 1, NoData},
		{"<", 1, -5, 0, 0, Noise},
		{"<", 3, -1, 0.01, 0.01, Holds},
		{"<", 3, 1, 0.01, 0.01, DoesNotHold},
		{"<", 3, -1, 0.2, 0.2, Noise},
		{"<", 3, -1, 0.03, 0.2, Holds},       // holds alone: Holm does not take it away
		{"<", 3, 1, 0.03, 0.2, Noise},        // the other side alone, not after Holm
		{"<", 3, 1, 0.01, 0.04, DoesNotHold}, // the other side after Holm
		{">", 3, 1, 0.01, 0.01, Holds},
		{">", 3, -1, 0.01, 0.01, DoesNotHold},
		{"≤", 3, 0.005, 0.01, 0.01, Holds},       // worse, but by less than the margin
		{"≤", 3, 0.03, 0.01, 0.01, DoesNotHold},  // worse by more than the margin
		{"≤", 3, -0.2, 0.3, 0.3, Noise},          // far better on average, but noise hides it: no longer holds
		{"≈", 3, -0.004, 0.01, 0.01, Holds},      // inside ±margin
		{"≈", 3, -0.05, 0.01, 0.01, DoesNotHold}, // beyond −margin
		{"≈", 3, 0, 0.5, 0.5, Noise},
	} {
		r := Comparison{Want: c.want, Paired: stats.Paired{N: c.n, Diff: c.diff}, P: c.p, Adjusted: c.adjusted}
		if c.want == "≤" || c.want == "≈" {
			r.Margin = margin
		}
		if v := judge(r); v != c.v {
			t.Errorf("judge(%s, n %d, diff %g, p %g, p Holm %g) = %s, want %s", c.want, c.n, c.diff, c.p, c.adjusted, v, c.v)
		}
	}
}

// decide tests each row and adjusts a finding's rows together by Holm's method, for "does
// not hold" only: two differences each beyond noise alone (p 0.03 and 0.04 at 2 degrees
// of freedom) both hold together, since the finding needs both (Holm: 2·0.03 = 0.06 would
// take them away); the same two on the wrong side are noise together, not "does not
// hold". A row over fewer than two seeds is not in the family.
func TestDecideHolm(t *testing.T) {
	d03, d04 := -tFor(0.03), -tFor(0.04)
	// differences d−1, d, d+1 have standard error 1/√3: scale so that t is as wanted
	three := func(t float64) []float64 {
		m := t / math.Sqrt(3)
		return []float64{m - 1, m, m + 1}
	}
	rows := []Comparison{row("<", three(d03)...), row("<", three(d04)...)}
	decide(rows)
	if math.Abs(rows[0].P-0.03) > 1e-9 || math.Abs(rows[1].P-0.04) > 1e-9 || math.Abs(rows[0].Adjusted-0.06) > 1e-9 || math.Abs(rows[1].Adjusted-0.06) > 1e-9 {
		t.Errorf("p %g, %g; Holm %g, %g; want 0.03, 0.04; 0.06, 0.06", rows[0].P, rows[1].P, rows[0].Adjusted, rows[1].Adjusted)
	}
	if v := verdicts(rows); v[0] != Holds || v[1] != Holds {
		t.Errorf("together: %v, want holds, holds", v)
	}
	if v := verdicts([]Comparison{row(">", three(d03)...), row(">", three(d04)...)}); v[0] != Noise || v[1] != Noise {
		t.Errorf("together on the wrong side: %v, want noise, noise", v)
	}
	if v := verdicts([]Comparison{row(">", three(d03)...)}); v[0] != DoesNotHold {
		t.Errorf("alone on the wrong side: %v, want does not hold", v)
	}
	if v := verdicts([]Comparison{row("<", three(d03)...), row("<", -1)}); v[0] != Holds || v[1] != Noise {
		t.Errorf("beside a row of one seed: %v, want holds, noise", v)
	}
}

// "Not worse" is a non-inferiority test and "no effect" two one-sided tests, with the
// margin 0.01: neither holds on a difference that noise hides.
func TestDecideMargins(t *testing.T) {
	for _, c := range []struct {
		name string
		r    Comparison
		v    Verdict
	}{
		// worse by one standard deviation of its differences (0.02 ± 0.02): the old rule
		// (not above beyond noise) held it; its interval reaches 0.07
		{"not worse, worse by one sd", row("≤", 0, 0.02, 0.04), Noise},
		{"not worse, worse beyond the margin", row("≤", 0.029, 0.03, 0.031), DoesNotHold},
		{"not worse, inside the margin", row("≤", 0.001, 0.002, 0.003), Holds},
		{"not worse, better", row("≤", -0.1, -0.11, -0.09), Holds},
		{"not worse, one seed", row("≤", -0.5), Noise},
		{"no effect, noisy zero", row("≈", -0.05, 0, 0.05), Noise},
		{"no effect, tight", row("≈", 0.001, 0.002, 0.003), Holds},
		{"no effect, a real effect", row("≈", 0.3, 0.31, 0.29), DoesNotHold},
		{"no effect, small but beyond the margin", row("≈", -0.012, -0.013, -0.014), DoesNotHold},
	} {
		if v := verdicts([]Comparison{c.r}); v[0] != c.v {
			lo, hi := c.r.Paired.Interval()
			t.Errorf("%s: %s, want %s (mean %g, interval %g to %g)", c.name, v[0], c.v, c.r.Paired.Diff, lo, hi)
		}
	}
	// the p-values: non-inferiority and TOST doubled, one-sided at 2.5% each
	rows := []Comparison{row("≤", 0.001, 0.002, 0.003)}
	decide(rows)
	tt := (margin - 0.002) / (0.001 / math.Sqrt(3))
	if want := 1 - tt/math.Sqrt(2+tt*tt); math.Abs(rows[0].P-want) > 1e-9 {
		t.Errorf("non-inferiority p %g, want %g", rows[0].P, want)
	}
}

// overall, case by case.
func TestOverall(t *testing.T) {
	rows := func(vs ...Verdict) []Comparison {
		var out []Comparison
		for _, v := range vs {
			out = append(out, Comparison{Verdict: v})
		}
		return out
	}
	for _, c := range []struct {
		rows []Comparison
		v    Verdict
	}{
		{nil, NoData},
		{rows(NoData, NoData), NoData},
		{rows(Holds, Holds), Holds},
		{rows(Holds, NoData, Holds), Partial}, // a part without data never holds
		{rows(Noise, NoData), Noise},
		{rows(DoesNotHold, NoData), DoesNotHold},
		{rows(Holds, Noise), Noise},
		{rows(Noise, Holds), Noise},
		{rows(Holds, Noise, DoesNotHold), DoesNotHold},
	} {
		if v := overall(c.rows); v != c.v {
			t.Errorf("overall(%v) = %s, want %s", c.rows, v, c.v)
		}
	}
}

// Each rule that TestFindingsDoNotHold leaves holding, broken on its own: the rule must
// say "does not hold".
func TestFindingsEachRuleFails(t *testing.T) {
	for _, c := range []struct {
		id    string
		spoil func(specs map[string]*spec)
	}{
		// SF-AdamW gains 0.05 from the decay: less than AdamW, but not nothing
		{"obs1-decay", func(s map[string]*spec) { s["sf 0.95"].decay = 0.05 }},
		// the EWA helps SF-AdamW by 0.05: less than AdamW's 0.1, but an improvement
		{"obs1-ewa", func(s map[string]*spec) { s["sf 0.95"].val["ewa_x"] = 3.25 }},
		// the EWA helps SF-AdamW (0.1) more than AdamW (0.01)
		{"obs1-ewa", func(s map[string]*spec) { s["adamw constant"].val["ewa_w"], s["sf 0.95"].val["ewa_x"] = 3.49, 3.2 }},
		// at the step it ends, AdamW's decayed branch is 0.05 above the run at constant LR,
		// though 0.05 below the checkpoint it left (5 steps earlier, 0.1 higher): a gain
		// over the checkpoint is not a gain at matched compute
		{"obs1-lr-decay", func(s map[string]*spec) { s["adamw constant"].lrDecay = -0.05 }},
		// SF-AdamW gains 0.05 from its LR decay at matched compute: beyond the margin
		{"obs1-lr-decay", func(s map[string]*spec) { s["sf 0.95"].lrDecay = 0.05 }},
		// AdamW's plain segment falls steadily from w(t1) to w(t2), no valley: progress
		// alone, which a range (max − min)/mean larger than SF-AdamW's would have passed
		{"obs1-interpolation", func(s map[string]*spec) { s["adamw constant"].interp = []float64{3.4, 3.45, 3.5, 3.55, 3.6} }},
		// the decayed segment rises by 0.05 on its way down
		{"obs1-interpolation", func(s map[string]*spec) { s["adamw constant"].decayed = []float64{3.2, 3.35, 3.3, 3.5, 3.6} }},
		// SF-AdamW's segment is a valley 0.15 below its chord
		{"obs1-interpolation", func(s map[string]*spec) { s["sf 0.95"].interp = []float64{3.4, 3.3, 3.25, 3.3, 3.4} }},
		// refined x worse than its y by 0.04 nats on every seed, beyond the margin
		{"refined-momentum", func(s map[string]*spec) { s["sf 0.5 C=50"].val["x"] = 3.50 }},
		// vanilla at β1 0.95 tuned: its best LR on validation, 4e-3, has a test perplexity of
		// 22, below C = 200's 24 at 2e-3; vanilla at C = 200's own LR (27) would let it hold
		{"refined-best", func(s map[string]*spec) {
			s["sf 0.95 lr 0.004"].val["x"], s["sf 0.95 lr 0.004"].ppl = 3.2, 22
		}},
	} {
		specs := paperSpecs()
		c.spoil(specs)
		f := wantVerdict(t, newFakeSweep(t, findingsManifest, specs).findings(t), c.id, DoesNotHold)
		for _, r := range f.Rows {
			lo, hi := r.Paired.Interval()
			t.Logf("%s: %s %s %s: %g (%g to %g), p Holm %g: %s", c.id, r.A.Value, r.Want, r.B.Value, r.Paired.Diff, lo, hi, r.Adjusted, r.Verdict)
		}
	}
}

// SF-AdamW's LR-decay branch ending 0.05 above its run at constant LR shows no
// improvement, as the paper says: the claim holds, where a test of equality would fail.
func TestFindingsLRDecayWorseIsNoImprovement(t *testing.T) {
	specs := paperSpecs()
	specs["sf 0.95"].lrDecay = -0.05
	f := wantVerdict(t, newFakeSweep(t, findingsManifest, specs).findings(t), "obs1-lr-decay", Holds)
	if len(f.Rows) != 6 || f.Rows[5].Want != "≤" || f.Rows[5].Paired.Diff > -0.04 {
		t.Errorf("rows: %+v", f.Rows)
	}
}

// A refined x worse than its y by one standard deviation of its differences (0.02 ±
// 0.02 over three seeds) no longer holds "not worse": it is noise.
func TestFindingsNotWorseByOneSD(t *testing.T) {
	specs := paperSpecs()
	specs["sf 0.5 C=50"].val["x"] = 3.48 // y 3.46: worse by 0.02
	specs["sf 0.5 C=50"].wobble = map[string][]float64{"x": {-0.02, 0, 0.02}}
	f := wantVerdict(t, newFakeSweep(t, findingsManifest, specs).findings(t), "refined-momentum", Noise)
	if len(f.Rows) != 2 || f.Rows[0].Verdict != Holds || f.Rows[1].Verdict != Noise || math.Abs(f.Rows[1].Paired.Diff-0.02) > 1e-9 {
		t.Errorf("rows: %+v", f.Rows)
	}
	if lo, hi := f.Rows[1].Paired.Interval(); lo > 0 || hi < margin {
		t.Errorf("interval %g to %g, want it to straddle 0 and the margin", lo, hi)
	}
}

// The decay probes from every checkpoint: a row per checkpoint and claim, all adjusted
// together; SF-AdamW gaining 0.05 from its decay at the first checkpoint alone breaks the
// claim, which the paper makes of every checkpoint its figure shows.
func TestFindingsDecayEveryCheckpoint(t *testing.T) {
	every := strings.Replace(findingsManifest, "decay: {steps: 2, at: [15]}", "decay: {steps: 2}", 1)
	fs := newFakeSweep(t, every, paperSpecs()).findings(t)
	f := wantVerdict(t, fs, "obs1-decay", Holds)
	if len(f.Rows) != 6 || !strings.HasSuffix(f.Rows[0].A.Value, "from step 5") || !strings.HasSuffix(f.Rows[5].A.Value, "from step 15") {
		t.Errorf("obs1-decay rows: %+v", f.Rows)
	}
	if f := wantVerdict(t, fs, "obs2-momentum", Holds); len(f.Rows) != 3 {
		t.Errorf("obs2-momentum: %d rows, want one per checkpoint", len(f.Rows))
	}

	specs := paperSpecs()
	specs["sf 0.95"].decayFirst = 0.05
	f = wantVerdict(t, newFakeSweep(t, every, specs).findings(t), "obs1-decay", DoesNotHold)
	if f.Rows[1].Verdict != DoesNotHold || f.Rows[3].Verdict != Holds || f.Rows[5].Verdict != Holds {
		t.Errorf("SF-AdamW's gain from step 5 beyond the margin, from 10 and 15 within it: %s, %s, %s", f.Rows[1].Verdict, f.Rows[3].Verdict, f.Rows[5].Verdict)
	}
	// AdamW's gain from the first checkpoint no larger than SF-AdamW's: obs2 is untouched,
	// obs1's first comparison does not hold
	specs = paperSpecs()
	specs["adamw constant"].decayFirst = 0.001
	f = wantVerdict(t, newFakeSweep(t, every, specs).findings(t), "obs1-decay", DoesNotHold)
	if f.Rows[0].Verdict != DoesNotHold {
		t.Errorf("AdamW's gain below SF-AdamW's from step 5: %s", f.Rows[0].Verdict)
	}
}

// A sweep twins one of the paper's setups: on one whose table is labelled as a large-batch
// twin, the claims of the 0.5M-token runs are out of scope, and the large-batch claim on
// any other; both say so.
func TestFindingsScope(t *testing.T) {
	f := newFakeSweep(t, findingsManifest+"tables:\n  - {kind: hyperparameters, name: h, label: fig:modified_large_twin}\n", paperSpecs())
	fs, err := findingsIn(context.Background(), f.store, f.m, f.res, fakeRegime)
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fs {
		c := checks[slices.IndexFunc(checks, func(c check) bool { return c.id == fd.ID })]
		switch {
		case c.run == nil:
		case c.large && fd.Verdict != Holds:
			t.Errorf("%s on a large-batch twin: %s, %q", fd.ID, fd.Verdict, fd.Note)
		case !c.large && (fd.Verdict != NoData || len(fd.Rows) != 0 || !strings.Contains(fd.Note, "fig:modified_large_twin")):
			t.Errorf("%s on a large-batch twin: %s, %d rows, %q", fd.ID, fd.Verdict, len(fd.Rows), fd.Note)
		}
	}
	plain := newFakeSweep(t, findingsManifest, paperSpecs())
	fs, err = Findings(context.Background(), plain.store, plain.m, plain.res)
	if err != nil {
		t.Fatal(err)
	}
	if fd := fs[len(fs)-1]; fd.ID != "refined-large-batch" || fd.Verdict != NoData || !strings.Contains(fd.Note, "0.5M-token runs") {
		t.Errorf("refined-large-batch on a 0.5M-token twin: %+v", fd)
	}
}

// fig:EMA_y shows β1 up to 0.95: a vanilla configuration beyond it gives obs3 no row, and
// the note names it.
func TestFindingsEMAYRange(t *testing.T) {
	m := strings.Replace(findingsManifest, "betas: [[0.5, 0.99], [0.95, 0.99]]", "betas: [[0.5, 0.99], [0.95, 0.99], [0.98, 0.99]]", 1)
	specs := paperSpecs()
	specs["sf 0.98"] = &spec{val: map[string]float64{"x": 3.3, "y": 3.31, "ewa_x": 3.3, "ewa_y": 3.5}, ppl: 27}
	f := wantVerdict(t, newFakeSweep(t, m, specs).findings(t), "obs3-y", Holds)
	if len(f.Rows) != 3 || !strings.Contains(f.Note, "β1 0.98 left out") {
		t.Errorf("rows %d, note %q", len(f.Rows), f.Note)
	}
}

// obs3-y's first part, y below x at a β1 < 0.9, has no data in a sweep of β1 ≥ 0.9 alone:
// the finding is partial there, not holding on its second part; with a β1 < 0.9 it holds.
func TestFindingsObs3YPartial(t *testing.T) {
	tuned := strings.Replace(findingsManifest, "betas: [[0.5, 0.99], [0.95, 0.99]], c: [vanilla, 50, 200]", "betas: [[0.95, 0.99]], c: [vanilla, 50, 200]", 1)
	f := wantVerdict(t, newFakeSweep(t, tuned, paperSpecs()).findings(t), "obs3-y", Partial)
	if len(f.Rows) != 2 || f.Rows[0].Verdict != NoData || f.Rows[1].Verdict != Holds {
		t.Errorf("rows: %+v", f.Rows)
	}
	wantVerdict(t, newFakeSweep(t, findingsManifest, paperSpecs()).findings(t), "obs3-y", Holds)
}
