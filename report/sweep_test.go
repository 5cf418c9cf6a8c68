package report

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/trial"
)

func finished(ppl float64) trial.Outcome {
	return trial.Outcome{Result: &training.Result{Status: status.Completed, Primary: "x", TestPPL: map[string]float64{"x": ppl, "y": 1}}}
}

// The C-sensitivity twin's table from outcomes: the vanilla trial fills both its cells,
// a diverged trial reads as such, a failed one as failed, a missing one as --.
func TestBuildCSensitivity(t *testing.T) {
	src, _ := os.ReadFile("../sweeps/examples/c-sensitivity-tiny.yaml")
	m, trials := parseSweep(t, src)
	out := map[string]trial.Outcome{}
	for i, tr := range trials {
		p := tr.Points[0]
		switch {
		case p.Beta1 == 0.1 && p.C == 5:
			out[tr.ID] = trial.Outcome{Result: &training.Result{Status: status.Diverged, DivergedAt: 17}}
		case p.Beta1 == 0.5 && p.C == 200:
			out[tr.ID] = trial.Outcome{Failed: "CUDA error"}
		case p.Beta1 == 0.95 && p.C == 500:
			// missing
		default:
			out[tr.ID] = finished(20 + float64(i))
		}
	}
	tables, err := BuildTables(m, trials, out)
	if err != nil || len(tables) != 1 {
		t.Fatalf("%d tables, %v", len(tables), err)
	}
	tb := tables[0].Table
	cell := func(row float64, col string) TableCell {
		for _, c := range tb.Cells {
			if c.Row == row && c.Col == col {
				return c
			}
		}
		t.Fatalf("no cell (%v, %s)", row, col)
		return TableCell{}
	}
	if a, b := cell(0.95, "vanilla"), cell(0.95, "20"); a.Status != status.Completed || a.Value != b.Value {
		t.Errorf("β1 = 0.95: vanilla %+v and C = 20 %+v must be the same trial", a, b)
	}
	if c := cell(0.1, "5"); c.Status != status.Diverged || c.Step != 17 {
		t.Errorf("diverged cell %+v", c)
	}
	if c := cell(0.5, "200"); c.Status != status.Failed || c.Reason != "CUDA error" {
		t.Errorf("failed cell %+v", c)
	}
	if c := cell(0.95, "500"); c.Status != status.Missing {
		t.Errorf("missing cell %+v", c)
	}
	if c := cell(0.1, "200"); c.Status != status.Missing {
		t.Errorf("cell (0.1, 200), not in the grid: %+v", c)
	}
	var md bytes.Buffer
	if err := tb.WriteMarkdown(&md); err != nil || !strings.Contains(md.String(), "diverged (step 17)") {
		t.Errorf("markdown (%v):\n%s", err, md.String())
	}
	if tb.LR != 2e-3 || tb.Beta2 != 0.99 {
		t.Errorf("table LR %v, β2 %v; want the grid's 2e-3 and 0.99", tb.LR, tb.Beta2)
	}
}

// A C table's LR and β2 are those its cells share (a grid over several would give a cell
// two results of one seed, which the table refuses).
func TestCSensitivitySettings(t *testing.T) {
	m, trials := seedsSweep(t)
	out := map[string]trial.Outcome{}
	for i, tr := range trials {
		out[tr.ID] = finished(20 + float64(i))
	}
	for _, lr := range []float64{1e-3, 2e-3} {
		m.Tables[0].LR = lr
		tables, err := BuildTables(m, trials, out)
		if err != nil || len(tables) != 1 {
			t.Fatalf("%d tables, %v", len(tables), err)
		}
		if tb := tables[0].Table; tb.LR != lr || tb.Beta2 != 0.99 {
			t.Errorf("table at lr %v: LR %v, β2 %v", lr, tb.LR, tb.Beta2)
		}
	}
}

// seedsManifest is a grid of 2 learning rates, 2 β1 and 2 C values over three seeds.
const seedsManifest = `name: t
model: micro-llama
data: {default: byte}
batch_tokens: 32
steps: 10
seeds: [1, 2, 3]
optimizers:
  - {name: sfadamw, lr: [1e-3, 2e-3], betas: [[0.9, 0.99], [0.95, 0.99]], c: [vanilla, 50]}
tables:
  - {kind: c_sensitivity, name: t, lr: 1e-3, beta2: 0.99}
`

// seedsSweep parses seedsManifest and expands it.
func seedsSweep(t *testing.T) (*sweeps.Manifest, []sweeps.Trial) {
	t.Helper()
	return parseSweep(t, []byte(seedsManifest))
}

// Seeds of one cell are averaged over those that completed.
func TestBuildSeedsMean(t *testing.T) {
	m, trials := seedsSweep(t)
	out := map[string]trial.Outcome{}
	for _, tr := range trials {
		switch tr.Points[0].Seed {
		case 1:
			out[tr.ID] = finished(30)
		case 2:
			out[tr.ID] = finished(40)
		case 3:
			out[tr.ID] = trial.Outcome{Result: &training.Result{Status: status.Diverged, DivergedAt: 3}}
		}
	}
	tables, err := BuildTables(m, trials, out)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range tables[0].Table.Cells {
		// the sample standard deviation of 30 and 40 is √50
		if c.Status != status.Completed || math.Abs(c.Value-35) > 1e-12 || c.N != 2 || math.Abs(c.Std-math.Sqrt(50)) > 1e-12 ||
			c.Diverged != 1 || c.Failed != 0 || len(c.Samples) != 2 || c.Samples[0] != (SeedValue{1, 30}) {
			t.Errorf("cell %+v, want the mean 35 ± 7.07 of the 2 completed seeds and 1 diverged", c)
		}
		if c.Best {
			t.Errorf("cell %+v with a diverged seed is bold", c)
		}
	}
	var md bytes.Buffer
	if err := tables[0].Table.WriteMarkdown(&md); err != nil || !strings.Contains(md.String(), "| 35.00 ± 7.07 (n=2, 1 diverged) |") {
		t.Errorf("markdown (%v):\n%s", err, md.String())
	}
	if n := len(tables[0].Table.Cells); n != 4 {
		t.Errorf("%d cells, want 2 β1 × 2 C at lr 1e-3", n)
	}
}

// Every example manifest's tables build from a sweep with no results yet.
func TestExampleTables(t *testing.T) {
	files, err := filepath.Glob("../sweeps/examples/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("%d example manifests (%v)", len(files), err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if src, err = sweeps.ResolveTrainer(src, filepath.Dir(f)); err != nil { // as the commands do
			t.Fatalf("%s: %v", f, err)
		}
		m, err := sweeps.Parse(src)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var trials []sweeps.Trial // a sampled search has none before it runs
		if !m.Sampled() {
			if trials, err = m.Expand(); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
		}
		if _, err := BuildTables(m, trials, map[string]trial.Outcome{}); err != nil {
			t.Errorf("%s: tables: %v", f, err)
		}
	}
}

// A table whose results come from engines of different arithmetic says so in its caption
// and its JSON; one engine adds nothing.
func TestMixedEngines(t *testing.T) {
	m, trials := seedsSweep(t)
	out := map[string]trial.Outcome{}
	for i, tr := range trials {
		o := finished(30)
		o.Result.Engine.Arithmetic = "cpu-fp32/2"
		if i == 1 {
			o.Result.Engine.Arithmetic = "cpu-fp32/1"
		}
		out[tr.ID] = o
	}
	for _, mixed := range []bool{true, false} {
		if !mixed {
			out[trials[1].ID].Result.Engine.Arithmetic = "cpu-fp32/2"
		}
		tables, err := BuildTables(m, trials, out)
		if err != nil {
			t.Fatal(err)
		}
		var md, js bytes.Buffer
		if err := tables[0].Table.WriteMarkdown(&md); err != nil {
			t.Fatal(err)
		}
		if err := tables[0].Table.WriteJSON(&js); err != nil {
			t.Fatal(err)
		}
		says := strings.Contains(md.String(), "engines of different arithmetic (cpu-fp32/1, cpu-fp32/2)") && strings.Contains(js.String(), `"engines"`)
		if says != mixed {
			t.Errorf("mixed %v: the table says so: %v\n%s\n%s", mixed, says, md.String(), js.String())
		}
	}
}

// A hyperparameters table shows no weight decay: over trials that differ only in it, it
// refuses, naming the setting and what to give; with weight_decay: it keeps that one.
func TestHyperparametersWeightDecay(t *testing.T) {
	src, err := os.ReadFile("../sweeps/settle/weight-decay.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m, trials := parseSweep(t, src)
	out := map[string]trial.Outcome{}
	for i, tr := range trials {
		out[tr.ID] = finished(10 + float64(i))
	}
	tables, err := BuildTables(m, trials, out)
	if err != nil || len(tables) != 2 {
		t.Fatalf("%d tables, %v", len(tables), err)
	}
	for _, nt := range tables {
		if n := len(nt.Table.Trials); n != 2 {
			t.Errorf("table %s: %d configurations, want AdamW's and SF-AdamW's", nt.Name, n)
		}
	}
	m.Tables = m.Tables[:1]
	m.Tables[0].WeightDecay = nil
	if _, err := BuildTables(m, trials, out); err == nil || !strings.Contains(err.Error(), "give the table weight_decay:") {
		t.Errorf("a table over both weight decays: %v", err)
	}
}
