package report

// Runs: a sweep's trials as one flat table, a row per trial (runs.csv beside the tables),
// as W&B's CSV export and Optuna's trials_dataframe give them: every setting of the
// trial's config, its state, and every final metric.

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/trial"
)

// The states of a trial in runs.csv.
const (
	RunCompleted = "completed"
	RunDiverged  = "diverged"
	RunFailed    = "failed"  // after its retries
	RunStopped   = "stopped" // by a search's early stopping, at stopped_at
	RunPending   = "pending" // no outcome yet
)

// runsLead are runs.csv's first columns; the config's ("config.optimizer.lr", its JSON
// keys joined by dots) and the metrics' follow.
var runsLead = []string{"trial_id", "state", "attempts", "steps", "tokens", "seconds", "diverged_at", "stopped_at", "primary", "val_loss", "test_loss", "test_ppl"}

// WriteRuns writes the trials' rows as CSV: the lead columns (val_loss, test_loss and
// test_ppl are the primary iterate's: x for SF-AdamW, w for AdamW), then each config
// setting any trial has, then the validation and test loss of every iterate
// (val_loss.<iterate>), a program's named metrics (metric.<name>), and the reason of a
// failure. A cell a trial has no value for is empty; numbers are as the config and the
// results store them.
func WriteRuns(w io.Writer, trials []sweeps.Trial, outcomes map[string]trial.Outcome) error {
	rows := make([]map[string]string, len(trials))
	configCols, metricCols := map[string]bool{}, map[string]bool{}
	for i, tr := range trials {
		row := map[string]string{"trial_id": tr.ID}
		set, err := ConfigSettings(tr.Config)
		if err != nil {
			return fmt.Errorf("trial %s: %w", tr.ID, err)
		}
		for k, v := range set {
			row["config."+k] = v
			configCols["config."+k] = true
		}
		o := outcomes[tr.ID]
		row["state"] = RunPending
		if o.Attempts > 0 {
			row["attempts"] = strconv.Itoa(o.Attempts)
		}
		switch r := o.Result; {
		case r != nil:
			row["state"] = RunCompleted
			if r.Status == status.Diverged {
				row["state"], row["diverged_at"] = RunDiverged, strconv.Itoa(r.DivergedAt)
			}
			row["steps"], row["tokens"] = strconv.Itoa(r.Steps), strconv.FormatInt(r.Tokens, 10)
			row["seconds"], row["primary"] = num(r.Seconds), r.Primary
			for name, m := range map[string]map[string]float64{"val_loss": r.Val, "test_loss": r.Test, "test_ppl": r.TestPPL} {
				if v, ok := m[r.Primary]; ok {
					row[name] = num(v)
				}
				for it, v := range m {
					row[name+"."+it] = num(v)
					metricCols[name+"."+it] = true
				}
			}
			for k, v := range r.Metrics {
				row["metric."+k] = num(v)
				metricCols["metric."+k] = true
			}
		case o.Failed != "":
			row["state"], row["failed"] = RunFailed, o.Failed
		case o.Stopped > 0:
			row["state"], row["stopped_at"] = RunStopped, strconv.Itoa(o.Stopped)
		}
		rows[i] = row
	}
	header := append(append(slices.Clone(runsLead), slices.Sorted(maps.Keys(configCols))...), slices.Sorted(maps.Keys(metricCols))...)
	header = append(header, "failed")
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return err
	}
	rec := make([]string, len(header))
	for _, row := range rows {
		for i, h := range header {
			rec[i] = row[h]
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// ConfigSettings are the leaves of a run config, by their JSON keys joined by dots
// (optimizer.lr, trainer.params.width): a number as the config stores it, a list as its
// JSON; a null is left out.
func ConfigSettings(cfg training.Config) (map[string]string, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	set := map[string]string{}
	for k, e := range v {
		flatten(k, e, set)
	}
	return set, nil
}

// flatten writes v's leaves into row under prefix: an object's members as prefix.key, a
// list as its JSON, a null as nothing.
func flatten(prefix string, v any, row map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			flatten(prefix+"."+k, e, row)
		}
	case nil:
	case string:
		row[prefix] = x
	case json.Number:
		row[prefix] = x.String()
	case bool:
		row[prefix] = strconv.FormatBool(x)
	default:
		b, _ := json.Marshal(x)
		row[prefix] = string(b)
	}
}

// num is a float in Go's shortest round-trip form.
func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
