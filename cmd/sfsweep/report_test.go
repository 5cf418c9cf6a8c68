package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// reportManifest is the end-to-end model over two seeds: constant-LR AdamW, vanilla and
// refined SF-AdamW at a suboptimal and a good β1, with a decay probe from step 6.
var reportManifest = "name: report-e2e\n" + strings.Replace(e2eTraining, "seeds: [1]", "seeds: [1, 2]", 1) + `optimizers:
  - {name: adamw, lr: 3e-3, betas: [[0.9, 0.95]], schedule: constant}
  - {name: sfadamw, lr: 3e-3, betas: [[0.5, 0.99], [0.9, 0.99]], c: [vanilla, 50]}
probes:
  decay: {at: [6], steps: 2}
tables:
  - {kind: c_sensitivity, name: c_report, title: report end to end, label: tab:c_report}
`

// reportCommand runs `sfsweep report` and returns its exit code, stdout and stderr.
func reportCommand(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := runMain(ctx, append([]string{"report"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// A real sweep, then its report: every check with a verdict, the decay probe's comparison
// with its numbers over the two seeds, the table, and plot links that resolve to the PNGs
// copied beside the report. A manifest that does not parse, a sweep without results and a
// state directory without a store are errors that say which.
func TestReportEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded Temporal server and trains (-short)")
	}
	dir := t.TempDir()
	manifest := filepath.Join(dir, "report.yaml")
	if err := os.WriteFile(manifest, []byte(reportManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	if log := runCommand(t, state, filepath.Join(dir, "out"), manifest); !strings.Contains(log, "10 run now (10 completed") {
		t.Fatalf("sweep:\n%s", log)
	}

	out := filepath.Join(dir, "report", "report.md")
	code, stdout, stderr := reportCommand(t, "-dir", state, manifest, "-o", out) // flags after the manifest too
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "report-e2e: ") || !strings.Contains(stdout, "report: "+out) {
		t.Errorf("stdout:\n%s", stdout)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	if testing.Verbose() {
		t.Log(md)
	}
	for _, want := range []string{
		"| check | claim | report-e2e |\n",
		"| 10 | 10 | 0 | 0 | 0 | ",
		"#### c\\_report\n\n**report end to end**\n",
		"#### obs1-decay: ",
		// AdamW's decay-probe gain against SF-AdamW's (β1 = 0.9, the better vanilla one, or 0.5) over 2 seeds: t(1) = 12.71
		"| AdamW (constant) lr 3e-3 β (0.9, 0.95), batch 128 · decay-probe gain (before − after) from step 6: ",
		" | A > B | 2 | ",
		" | 12.71 | ",
		"#### obs4-eos: no data in this sweep\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// a 20-step twin is outside the paper's regime, by its tokens per parameter: the verdict
	// says so, and its note what the rows alone read
	if !regexp.MustCompile(`#### obs1-decay: outside the paper's regime\n`).MatchString(md) ||
		!regexp.MustCompile(`tokens per parameter [^\n]*Its rows alone read: (holds|does not hold|not distinguishable from noise)\.`).MatchString(md) {
		t.Errorf("obs1-decay has no verdict from data:\n%s", md)
	}
	links := regexp.MustCompile(`!\[[^]]*\]\(([^)]+)\)`).FindAllStringSubmatch(md, -1)
	if len(links) < 2 {
		t.Errorf("%d plots linked, want the curves, the decay probe and the heat map", len(links))
	}
	for _, l := range links {
		if _, err := os.Stat(filepath.Join(filepath.Dir(out), filepath.FromSlash(l[1]))); err != nil {
			t.Errorf("plot link %s: %v", l[1], err)
		}
	}
	if !strings.Contains(md, "](report-e2e/curves.png)") {
		t.Error("no link to the validation curves")
	}
	// the same results, the same report
	if code, _, stderr := reportCommand(t, "-dir", state, "-o", out, manifest); code != 0 {
		t.Fatalf("again: exit %d: %s", code, stderr)
	}
	if again, _ := os.ReadFile(out); !bytes.Equal(again, b) {
		t.Error("the report changed with the results unchanged")
	}

	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(strings.Replace(reportManifest, "[[0.5, 0.99], [0.9, 0.99]]", "[[0.5, 1.5]]", 1)), 0o644)
	if code, _, stderr := reportCommand(t, "-dir", state, "-o", out, manifest, bad); code != 1 || !strings.Contains(stderr, bad+": line ") ||
		!strings.Contains(stderr, "optimizers[1].betas[0][1] = 1.5") {
		t.Errorf("a bad manifest: exit %d, stderr %q", code, stderr)
	}
	other := filepath.Join(dir, "other.yaml")
	os.WriteFile(other, []byte(strings.NewReplacer("name: report-e2e", "name: not-run", "3e-3", "7e-3").Replace(reportManifest)), 0o644)
	if code, _, stderr := reportCommand(t, "-dir", state, "-o", out, other); code != 1 || !strings.Contains(stderr, other+": sweep not-run has no results") {
		t.Errorf("a sweep not run: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := reportCommand(t, "-dir", filepath.Join(dir, "nowhere"), manifest); code != 1 || !strings.Contains(stderr, "no results store") {
		t.Errorf("no store: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := reportCommand(t, "-dir", state); code != 2 || !strings.Contains(stderr, "want one or more sweep manifests") {
		t.Errorf("no manifest: exit %d, stderr %q", code, stderr)
	}
}
