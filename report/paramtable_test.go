package report

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/trial"
)

// A program's grid of parameters gets a table of its own: a row per configuration, each
// metric the mean ± sample sd over the seeds that completed (by hand: 2.0 and 2.2 give
// 2.1000 ± 0.1414), a failed seed counted beside it.
func TestParamTable(t *testing.T) {
	m, err := sweeps.Parse([]byte("name: own\ntrainer: {name: mine, version: v1}\nparameters: {model: [small, large], dropout: 0.1}\nsteps: 10\nseeds: [1, 2]\n"))
	if err != nil {
		t.Fatal(err)
	}
	trials, err := m.Expand()
	if err != nil || len(trials) != 4 {
		t.Fatalf("%d trials, %v", len(trials), err)
	}
	outcomes := map[string]trial.Outcome{}
	small := 0
	for _, tr := range trials {
		if tr.Config.Trainer.Params["model"] == "large" && tr.Config.Seed == 2 {
			outcomes[tr.ID] = trial.Outcome{Failed: "out of memory"}
			continue
		}
		v := 3.0
		if tr.Config.Trainer.Params["model"] == "small" {
			v = 2.0 + 0.2*float64(small)
			small++
		}
		outcomes[tr.ID] = trial.Outcome{Result: &training.Result{Status: status.Completed, Primary: "w",
			Val: map[string]float64{"w": v}, Metrics: map[string]float64{"val_ppl": 2 * v}}}
	}
	pt := NewParamTable(m, trials, outcomes)
	if pt == nil {
		t.Fatal("no parameters table for a program's grid")
	}
	var b bytes.Buffer
	if err := pt.Write(&b, FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{"| model | val\\_loss | val\\_ppl | seeds |", "| small | 2.1000 ± 0.1414 | 4.2000 ± 0.2828 | 2/2 |", "| large | 3.0000 | 6.0000 | 1/2, 1 failed |"} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
	for _, f := range Formats {
		b.Reset()
		if err := pt.Write(&b, f.Format); err != nil || b.Len() == 0 {
			t.Errorf("%s: %v, %d bytes", f.Format, err, b.Len())
		}
	}
	src, err := os.ReadFile("../sweeps/examples/c-sensitivity-quick.yaml")
	if err != nil {
		t.Fatal(err)
	}
	eng, err := sweeps.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if NewParamTable(eng, nil, nil) != nil {
		t.Error("a parameters table for a manifest of optimizer grids")
	}
}
