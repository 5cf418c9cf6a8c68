package program

import (
	"math"
	"strings"
	"testing"
)

func TestParseMetric(t *testing.T) {
	m, err := ParseMetric([]byte(`{"step": 30, "tokens": 61440, "lr": 0.002, "train_loss": 3.91, "val_loss": 3.87, "test_loss": null, "val": {"x": 3.87, "y": 3.95}, "val_ppl": 47.9, "note": "ok", "flags": [1]}`))
	if err != nil {
		t.Fatal(err)
	}
	if m.Step != 30 || m.Tokens != 61440 || *m.LR != 0.002 || *m.TrainLoss != 3.91 || *m.ValLoss != 3.87 || m.TestLoss != nil ||
		m.Val["x"] != 3.87 || m.Val["y"] != 3.95 || len(m.Named) != 1 || m.Named["val_ppl"] != 47.9 {
		t.Errorf("ParseMetric = %+v", m)
	}
	if !m.Finite() || !m.HasVal() {
		t.Error("a finite line with a validation loss")
	}
	m, err = ParseMetric([]byte(`{"step": 3.0, "train_loss": NaN, "val_loss": Infinity, "accuracy": -Infinity, "name": "NaN Infinity \"NaN"}`))
	if err != nil {
		t.Fatal(err)
	}
	if m.Step != 3 || !math.IsNaN(*m.TrainLoss) || !math.IsInf(*m.ValLoss, 1) || !math.IsInf(m.Named["accuracy"], -1) {
		t.Errorf("non-finite: %+v", m)
	}
	if m.Finite() {
		t.Error("Finite with a NaN train loss")
	}
	inf := math.Inf(1)
	if (Metric{ValLoss: &inf}).Finite() || !(Metric{TestLoss: &inf}).Finite() {
		t.Error("Finite looks at the train and validation losses")
	}
	for _, tc := range []struct{ line, err string }{
		{``, "not a JSON object"},
		{`[1]`, "not a JSON object"},
		{`null`, "not a JSON object"},
		{`{"step": 1} {"step": 2}`, "more than one"},
		{`{"step": 1`, "not a JSON object"},
		{`{"train_loss": 3}`, "no step"},
		{`{"step": null}`, "no step"},
		{`{"step": -1}`, "want an integer >= 0"},
		{`{"step": 1.5}`, "want an integer >= 0"},
		{`{"step": "3"}`, "want an integer >= 0"},
		{`{"step": NaN}`, "step NaN: want an integer >= 0"},
		{`{"step": 1, "val_loss": "3.8"}`, `val_loss "3.8": want a number`},
		{`{"step": 1, "lr": true}`, "lr true: want a number"},
		{`{"step": 1, "tokens": 2.5}`, "tokens 2.5: want an integer"},
		{`{"step": 1, "tokens": -2}`, "tokens -2: negative"},
		{`{"step": 1, "val": 3.8}`, "val 3.8: want an object"},
		{`{"step": 1, "val": {"x": "a"}}`, "x: want a number"},
		{`{"step": 1, "val_loss": Nan}`, "not a JSON object"},
	} {
		if _, err := ParseMetric([]byte(tc.line)); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseMetric(%s) = %v, want %q", tc.line, err, tc.err)
		}
	}
}

func FuzzParseMetric(f *testing.F) {
	for _, s := range []string{`{"step": 1, "val_loss": NaN}`, `{"step": 2, "val": {"x": -Infinity}}`, `{"s\"NaN": 1}`, `[`, `{"step": 1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := ParseMetric(line)
		if err == nil && m.Step < 0 {
			t.Errorf("step %d accepted", m.Step)
		}
	})
}
