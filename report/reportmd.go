package report

// The Markdown report of one or several sweeps: the paper's findings checked on each, its
// trials, tables and plots. A pure function of its sections: the same results give the
// same bytes.

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sfsweep/sfsweep/internal/stats"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/sweeps"
)

// Section is one manifest of a report: its results and what was built from them.
type Section struct {
	Manifest *sweeps.Manifest
	Source   string // the manifest's file as given; "" if none
	Results  *Results
	Tables   []NamedTable // BuildTables of the results
	Plots    []PlotLink   // the plots Build wrote, in the order shown
	Findings []Finding    // Findings of the results, in the order of the checks
}

// PlotLink is a plot and the path the report links it by, relative to the report.
type PlotLink struct{ Name, Path string }

// WriteReport writes the Markdown report of sections: a summary of every check's verdict
// on each manifest first, then each manifest's trials, tables, plots and findings with the
// numbers behind them.
func WriteReport(w io.Writer, sections []Section) error {
	var b strings.Builder
	b.WriteString("# Through the River: the paper's findings on these sweeps\n\n")
	writeHeader(&b)
	writeSummary(&b, sections)
	for _, s := range sections {
		writeSection(&b, s)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("report: write report: %w", err)
	}
	return nil
}

// writeHeader says what the verdicts mean and how the rows are tested.
func writeHeader(b *strings.Builder) {
	conf := formatG(100 * (1 - stats.Level))
	fmt.Fprintf(b, "Each check compares configurations seed by seed: a paired t-test over the seeds both completed, "+
		"with the mean difference A − B and its %s%% confidence interval (t-based, not adjusted for multiplicity). "+
		"Each row is one test at %g%%, two-sided. A finding needs every one of its rows, so it is an intersection–union test: "+
		"a row holds on its own p, with no adjustment; a row does not hold only on its p adjusted with the finding's others by Holm's step-down method (p Holm), "+
		"since any one failing row fails the finding.\n\n", conf, stats.Level*100)
	fmt.Fprintf(b, "- A claimed difference (A < B, A > B): *%s*: the difference the paper reports, beyond seed noise; *%s*: the opposite difference, beyond noise.\n", Holds, DoesNotHold)
	fmt.Fprintf(b, "- A claim that A is not worse than B (A − B < δ, lower is better) is a non-inferiority test, and a claim of no effect or of a match (−δ < A − B < δ) "+
		"two one-sided tests of equivalence, each one-sided test at %g%%: *%s*: the difference lies within the margin δ, beyond noise; *%s*: it lies beyond the margin, beyond noise. "+
		"A difference that noise hides never makes such a claim hold. "+
		"δ = %s nats of loss (a perplexity is compared as its log, so about 1%%): a third of the smallest gain the paper reports as real, "+
		"refined SF-AdamW's 3%% in test perplexity.\n", stats.Level*100/2, Holds, DoesNotHold, formatG(margin))
	fmt.Fprintf(b, "- *%s*: the seeds decide neither way (always so with one seed); *%s*: the sweep lacks the configurations or probes the check needs. "+
		"A finding holds when every row holds; it is *%s* when every row with data holds and a part of the claim has none.\n", Noise, NoData, Partial)
	fmt.Fprintf(b, "- *%s*: the twin trains more than %d times fewer or more tokens per parameter than the paper's runs of the claim (21 at 0.5M tokens a step, 42 at 2M), "+
		"or, for refined SF-AdamW, its C averages more than %d times fewer or more iterates (T(2C−1)/C² after T steps) than the paper's C over the paper's steps: "+
		"the note gives the reason and what the rows alone read.\n\n", Outside, regimeFactor, regimeFactor)
}

// writeSummary writes one row per check: its ID, the claim, and its verdict on each
// manifest.
func writeSummary(b *strings.Builder, sections []Section) {
	header := []string{"check", "claim"}
	for _, s := range sections {
		header = append(header, escapeMarkdown(s.Manifest.Name))
	}
	writePipeRow(b, header)
	writePipeRow(b, append([]string{"---", "---"}, repeat("---", len(sections))...))
	for i, c := range checks {
		row := []string{c.id, c.claim + " (" + c.ref + ")"}
		for _, s := range sections {
			v := "--"
			if i < len(s.Findings) {
				v = string(s.Findings[i].Verdict)
			}
			row = append(row, v)
		}
		writePipeRow(b, row)
	}
	b.WriteString("\n")
}

func writeSection(b *strings.Builder, s Section) {
	m := s.Manifest
	fmt.Fprintf(b, "## %s\n\n", escapeMarkdown(m.Name))
	if m.Description != "" {
		b.WriteString(escapeMarkdown(m.Description) + "\n\n")
	}
	if s.Source != "" {
		fmt.Fprintf(b, "Manifest `%s`; ", s.Source)
	}
	fmt.Fprintf(b, "tables and plots under `%s` in the store.\n\n", Output(m))

	b.WriteString("### Trials\n\n")
	t := trialTally(s.Results)
	head := []string{"trials", "completed", "diverged", "failed", "missing", "training time"}
	row := []string{strconv.Itoa(len(s.Results.Trials)), strconv.Itoa(t.n[status.Completed]), strconv.Itoa(t.n[status.Diverged]),
		strconv.Itoa(t.n[status.Failed]), strconv.Itoa(t.n[status.Missing]), t.training.String()}
	if m.Searched() { // a search's trials may end stopped: a result, neither failed nor missing
		head = slices.Insert(head, 3, "stopped")
		row = slices.Insert(row, 3, strconv.Itoa(t.n[status.Stopped]))
	}
	writePipeRow(b, head)
	writePipeRow(b, repeat("---:", len(head)))
	writePipeRow(b, row)
	b.WriteString("\n")

	if len(s.Tables) > 0 {
		b.WriteString("### Tables\n\n")
		for _, nt := range s.Tables {
			fmt.Fprintf(b, "#### %s\n\n", escapeMarkdown(nt.Name))
			if err := nt.Table.WriteMarkdown(b); err != nil {
				fmt.Fprintf(b, "(%s)\n", escapeMarkdown(err.Error()))
			}
			b.WriteString("\n")
			switch nt.Table.Kind {
			case TableCSensitivity:
				writeCAgainstPaper(b, nt.Table)
			case TableHyperparameters:
				writeHPAgainstPaper(b, nt.Table)
			}
		}
	}
	if len(s.Plots) > 0 {
		b.WriteString("### Plots\n\n")
		for _, p := range s.Plots {
			fmt.Fprintf(b, "![%s](%s)\n\n", escapeMarkdown(p.Name), p.Path)
		}
	}
	b.WriteString("### Findings\n\n")
	for _, f := range s.Findings {
		writeFinding(b, f)
	}
}

func writeFinding(b *strings.Builder, f Finding) {
	fmt.Fprintf(b, "#### %s: %s\n\n*%s.* %s\n\n", f.ID, f.Verdict, f.Ref, f.Claim)
	if f.Paper != "" {
		b.WriteString("Paper: " + f.Paper + "\n\n")
	}
	if len(f.Rows) > 0 {
		conf := formatG(100*(1-stats.Level)) + "% CI"
		writePipeRow(b, []string{"A", "B", "expected", "n", "mean A − B", "SE", "t crit", conf, "p", "p Holm", "verdict"})
		writePipeRow(b, []string{"---", "---", ":---:", "---:", "---:", "---:", "---:", ":---:", "---:", "---:", "---"})
		tested := 0
		for _, r := range f.Rows {
			p := r.Paired
			diff, se, crit, ci, pv, adj := "--", "--", "--", "--", "--", "--"
			if p.N > 0 {
				diff = formatNum(p.Diff)
			}
			if p.N >= 2 {
				lo, hi := p.Interval()
				se, crit = formatNum(p.SE), formatNum(p.Critical)
				ci, pv, adj = "["+formatNum(lo)+", "+formatNum(hi)+"]", formatP(r.P), formatP(r.Adjusted)
				tested++
			}
			writePipeRow(b, []string{sideText(r.A), sideText(r.B), expected(r), strconv.Itoa(p.N), diff, se, crit, ci, pv, adj, string(r.Verdict)})
		}
		fmt.Fprintf(b, "\n*Intervals: %s%%, mean ± t crit · SE, paired t over the shared seeds, not adjusted. p: two-sided, against the bound of the expected relation (0 or the margin). "+
			"p Holm: adjusted over this finding's %d rows with two seeds or more; a row holds on p at %g, and does not hold only on p Holm at %[3]g.*\n\n",
			formatG(100*(1-stats.Level)), tested, stats.Level)
	}
	if f.Note != "" {
		b.WriteString(f.Note + "\n\n")
	}
	if f.Verdict == NoData && f.Need != "" {
		b.WriteString("Needs " + f.Need + ".\n\n")
	}
}

// expected is the relation a comparison's claim expects, with its margin.
func expected(r Comparison) string {
	switch r.Want {
	case "≤":
		return "A − B < " + formatG(r.Margin)
	case "≈":
		return "−" + formatG(r.Margin) + " < A − B < " + formatG(r.Margin)
	}
	return "A " + r.Want + " B"
}

// formatP formats a p-value with two significant digits.
func formatP(v float64) string { return strconv.FormatFloat(v, 'g', 2, 64) }

// sideText is a side of a comparison: its configuration, value, mean ± standard deviation
// and seeds.
func sideText(s Side) string {
	if s.Config == "0" {
		return "0"
	}
	v := "--"
	if s.N > 0 {
		v = formatNum(s.Mean)
		if s.N >= 2 {
			v += " ± " + formatNum(s.Std)
		}
	}
	seeds := []string{"n=" + strconv.Itoa(s.N)}
	if s.Diverged > 0 {
		seeds = append(seeds, strconv.Itoa(s.Diverged)+" diverged")
	}
	if s.Failed > 0 {
		seeds = append(seeds, strconv.Itoa(s.Failed)+" failed")
	}
	return fmt.Sprintf("%s · %s: %s (%s)", s.Config, s.Value, v, strings.Join(seeds, ", "))
}

// formatNum formats a number of a finding with four significant digits.
func formatNum(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// tally is a sweep's trials by status and the training time of their results.
type tally struct {
	n        map[status.Status]int
	training time.Duration
}

func trialTally(res *Results) tally {
	t := tally{n: map[status.Status]int{}}
	var seconds float64
	for _, tr := range res.Trials {
		switch o := res.Outcomes[tr.ID]; {
		case o.Result != nil:
			t.n[o.Result.Status]++
			seconds += o.Result.Seconds
		case o.Failed != "":
			t.n[status.Failed]++
		case o.Stopped > 0:
			t.n[status.Stopped]++
		default:
			t.n[status.Missing]++
		}
	}
	d := time.Duration(seconds * float64(time.Second))
	t.training = d.Round(time.Second)
	if d < time.Minute {
		t.training = d.Round(100 * time.Millisecond)
	}
	return t
}
