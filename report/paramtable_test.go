package report

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/figure"
	"github.com/sfsweep/sfsweep/internal/keys"
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

// A program's grid gets a plot per parameter of more than one value: its metric against
// the parameter, a line for each setting of the others, each point the mean over seeds
// with its sd (by hand below), on a log axis for a learning rate spanning 100×, on
// categories for a string; Build writes them beside the table.
func TestParamPlot(t *testing.T) {
	src := "name: own\ntrainer: {name: mine, version: v1}\nparameters: {lr: [1e-1, 1e-3, 1e-2], model: [small, large]}\nsteps: 10\nseeds: [1, 2]\n"
	m, err := sweeps.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	trials, err := m.Expand()
	if err != nil || len(trials) != 12 {
		t.Fatalf("%d trials, %v", len(trials), err)
	}
	// val_loss = 3 + log10(lr)/10 (+0.5 for large) + 0.1·seed: mean over seeds 1, 2 is
	// that + 0.15, sd 0.1/√2; lr 0.1, large, seed 2 failed (mean of seed 1 alone, sd 0)
	outcomes := map[string]trial.Outcome{}
	want := func(lr float64, large bool, seed int) float64 {
		v := 3 + math.Log10(lr)/10 + 0.1*float64(seed)
		if large {
			v += 0.5
		}
		return v
	}
	for _, tr := range trials {
		p := tr.Config.Trainer.Params
		lr, large := p["lr"].(float64), p["model"] == "large"
		if lr == 0.1 && large && tr.Config.Seed == 2 {
			outcomes[tr.ID] = trial.Outcome{Failed: "out of memory"}
			continue
		}
		outcomes[tr.ID] = trial.Outcome{Result: &training.Result{Status: status.Completed, Primary: "x",
			Val: map[string]float64{"x": want(lr, large, int(tr.Config.Seed))}}}
	}
	pt := NewParamTable(m, trials, outcomes)
	ax, lines, err := paramPlotSeries(pt, "val_loss", "lr")
	if err != nil {
		t.Fatal(err)
	}
	if !ax.numeric || !ax.log {
		t.Errorf("lr over 1e-3 … 1e-1: axis %+v, want numeric and log", ax)
	}
	if len(lines) != 2 || lines[0].label != "model=small" || lines[1].label != "model=large" {
		t.Fatalf("lines %+v, want model=small and model=large", lines)
	}
	for _, l := range lines {
		large := l.label == "model=large"
		if !slices.Equal(l.xs, []float64{1e-3, 1e-2, 1e-1}) {
			t.Errorf("%s: xs %v, want sorted 1e-3, 1e-2, 1e-1", l.label, l.xs)
		}
		for i, lr := range l.xs {
			mean, sd := (want(lr, large, 1)+want(lr, large, 2))/2, 0.1/math.Sqrt2
			if large && lr == 0.1 {
				mean, sd = want(lr, large, 1), 0
			}
			if math.Abs(l.mean[i]-mean) > 1e-12 || math.Abs(l.std[i]-sd) > 1e-12 {
				t.Errorf("%s lr %g: mean %g ± %g, want %g ± %g", l.label, lr, l.mean[i], l.std[i], mean, sd)
			}
		}
	}
	ax, lines, err = paramPlotSeries(pt, "val_loss", "model")
	if err != nil {
		t.Fatal(err)
	}
	if ax.numeric || !slices.Equal(ax.labels, []string{"small", "large"}) || len(lines) != 3 || !slices.Equal(lines[0].xs, []float64{0, 1}) {
		t.Errorf("model: axis %+v, %d lines (%+v), want the categories small, large and a line per lr", ax, len(lines), lines)
	}
	if _, _, err := paramPlotSeries(pt, "val_loss", "steps"); err == nil {
		t.Error("a plot against a parameter the grid does not vary")
	}

	ctx := context.Background()
	store, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for id, o := range outcomes {
		if o.Result == nil {
			if err := trial.WriteFailure(ctx, store, id, o.Failed); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, _ := json.Marshal(o.Result)
		if err := store.Put(ctx, keys.RunResult(keys.Trial(id)), b); err != nil {
			t.Fatal(err)
		}
	}
	written, err := Build(ctx, store, m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, param := range []string{"lr", "model"} {
		key := keys.Plot(Output(m), "parameters-"+param, figure.FormatSVG)
		if !slices.Contains(written, key) {
			t.Fatalf("Build wrote %q, not %s", written, key)
		}
		svg, _ := store.Get(ctx, key)
		checkSVG(t, svg)
		for _, s := range []string{"own: parameters: val_loss against " + param + " (mean ± sd over seeds)", "val_loss"} {
			if !bytes.Contains(svg, []byte(">"+s+"<")) {
				t.Errorf("parameters-%s.svg has no text %q", param, s)
			}
		}
	}
}
