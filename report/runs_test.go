package report

import (
	"bytes"
	"encoding/csv"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/trial"
)

// readRuns writes the trials' runs.csv and reads it back, a map of column to cell per row.
func readRuns(t *testing.T, trials []sweeps.Trial, outcomes map[string]trial.Outcome) ([]string, []map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteRuns(&buf, trials, outcomes); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatalf("runs.csv does not read as CSV: %v\n%s", err, buf.String())
	}
	var rows []map[string]string
	for _, r := range recs[1:] {
		row := map[string]string{}
		for i, h := range recs[0] {
			row[h] = r[i]
		}
		rows = append(rows, row)
	}
	return recs[0], rows
}

// parseSweep parses a manifest and expands it.
func parseSweep(t *testing.T, src []byte) (*sweeps.Manifest, []sweeps.Trial) {
	t.Helper()
	m, err := sweeps.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	trials, err := m.Expand()
	if err != nil {
		t.Fatal(err)
	}
	return m, trials
}

func expand(t *testing.T, src string) []sweeps.Trial {
	t.Helper()
	_, trials := parseSweep(t, []byte(src))
	return trials
}

// runs.csv has a row per trial in the sweep's order: its config's every setting (each
// trial's own), its state, and its final metrics, the primary iterate's and each
// iterate's.
func TestWriteRuns(t *testing.T) {
	trials := expand(t, `name: r
model: tiny-llama
steps: 100
batch_tokens: 2048
seeds: [1]
optimizers:
  - name: sfadamw
    lr: [1e-3, 2e-3]
    betas: [[0.9, 0.99]]
  - name: adamw
    lr: 3e-3
    betas: [[0.9, 0.95]]
`)
	if len(trials) != 3 {
		t.Fatalf("%d trials", len(trials))
	}
	outcomes := map[string]trial.Outcome{
		trials[0].ID: {Result: &training.Result{Status: status.Completed, Steps: 100, Tokens: 204800, Primary: "x", Seconds: 1.5,
			Val: map[string]float64{"x": 3.25, "y": 3.5}, Test: map[string]float64{"x": 3.3}, TestPPL: map[string]float64{"x": 27.1126}}},
		trials[1].ID: {Result: &training.Result{Status: status.Diverged, DivergedAt: 40, Steps: 40, Primary: "x"}, Attempts: 2},
		trials[2].ID: {Failed: "exit status 1: CUDA out of memory"},
	}
	header, rows := readRuns(t, trials, outcomes)
	if !slices.Equal(header[:len(runsLead)], runsLead) || header[len(header)-1] != "failed" {
		t.Errorf("header %q", header)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3", len(rows))
	}
	for i, tr := range trials {
		if rows[i]["trial_id"] != tr.ID {
			t.Errorf("row %d is trial %s, want %s", i, rows[i]["trial_id"], tr.ID)
		}
		if got, _ := strconv.ParseFloat(rows[i]["config.optimizer.lr"], 64); got != tr.Config.Optimizer.LR {
			t.Errorf("row %d: config.optimizer.lr %q, want %v", i, rows[i]["config.optimizer.lr"], tr.Config.Optimizer.LR)
		}
		if rows[i]["config.optimizer.name"] != tr.Config.Optimizer.Name || rows[i]["config.seed"] != "1" || rows[i]["config.steps"] != "100" {
			t.Errorf("row %d: optimizer %q seed %q steps %q", i, rows[i]["config.optimizer.name"], rows[i]["config.seed"], rows[i]["config.steps"])
		}
	}
	want := []map[string]string{
		{"state": "completed", "steps": "100", "tokens": "204800", "seconds": "1.5", "primary": "x", "val_loss": "3.25", "val_loss.y": "3.5", "test_loss": "3.3", "test_ppl": "27.1126", "failed": ""},
		{"state": "diverged", "diverged_at": "40", "attempts": "2", "val_loss": ""},
		{"state": "failed", "failed": "exit status 1: CUDA out of memory", "steps": ""},
	}
	for i, w := range want {
		for k, v := range w {
			if rows[i][k] != v {
				t.Errorf("row %d: %s = %q, want %q", i, k, rows[i][k], v)
			}
		}
	}
	// AdamW's schedule is a column; SF-AdamW's rows leave it as their config does
	if !slices.Contains(header, "config.optimizer.schedule") {
		t.Errorf("no config.optimizer.schedule column: %q", header)
	}
	// a trial without an outcome is pending, and a comma or quote in a reason stays one cell
	outcomes[trials[2].ID] = trial.Outcome{Failed: `exit 1: "bad", and worse`}
	delete(outcomes, trials[0].ID)
	_, rows = readRuns(t, trials, outcomes)
	if rows[0]["state"] != "pending" || rows[2]["failed"] != `exit 1: "bad", and worse` {
		t.Errorf("pending %q, failed %q", rows[0]["state"], rows[2]["failed"])
	}
}

// A program sweep's rows carry the program's own parameters and named metrics.
func TestWriteRunsProgram(t *testing.T) {
	trials := expand(t, "name: own\ntrainer: {name: mine, version: v1}\nparameters: {width: [64, 128], dropout: 0.1}\nsteps: 10\nseeds: [1]\n")
	outcomes := map[string]trial.Outcome{trials[1].ID: {Result: &training.Result{Status: status.Completed, Steps: 10, Primary: "w",
		Val: map[string]float64{"w": 2.5}, Metrics: map[string]float64{"accuracy": 0.75}}}}
	header, rows := readRuns(t, trials, outcomes)
	for _, col := range []string{"config.trainer.params.width", "config.trainer.params.dropout", "metric.accuracy"} {
		if !slices.Contains(header, col) {
			t.Errorf("no %s column: %q", col, header)
		}
	}
	if rows[0]["config.trainer.params.width"] != "64" || rows[1]["config.trainer.params.width"] != "128" || rows[1]["metric.accuracy"] != "0.75" || rows[1]["val_loss"] != "2.5" {
		t.Errorf("rows %v", rows)
	}
	if strings.Contains(strings.Join(header, ","), "config.trainer.params.width.") {
		t.Errorf("a parameter split further: %q", header)
	}
}
