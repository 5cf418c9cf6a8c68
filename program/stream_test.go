package program

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTailerLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "metrics.jsonl")
	w, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out Outcome
	var steps []int
	a := &Attempt{OnMetric: func(m Metric) { steps = append(steps, m.Step) }}
	tl := &tailer{a: a, f: r, out: &out, chunk: make([]byte, 1000)}
	write := func(s string) {
		t.Helper()
		if _, err := w.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"step": 1}` + "\n" + `{"step": 2, "val_`)
	tl.read(false)
	if out.Lines != 1 {
		t.Fatalf("%d lines after one and a half", out.Lines)
	}
	write(`loss": 3.9}` + "\r\n" + `{"step": 3, "x": "` + strings.Repeat("y", maxMetricsLine) + `"}` + "\n")
	tl.read(false)
	write(`{"step": 4, "val_loss": 3.8}`)
	tl.read(false)
	if out.Lines != 2 || out.Refused != 1 || !tl.sawVal || !strings.HasPrefix(out.RefusedSample[0], "line 3: longer than") {
		t.Fatalf("%d lines, %d refused %q", out.Lines, out.Refused, out.RefusedSample)
	}
	tl.read(true)
	if out.Lines != 3 || out.Last.Step != 4 || len(steps) != 3 || steps[2] != 4 {
		t.Errorf("at the end: %d lines, last %d, OnMetric %v", out.Lines, out.Last.Step, steps)
	}
}
