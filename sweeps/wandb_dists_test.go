package sweeps

import (
	"math"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/sfsweep/sfsweep/search"
)

// wandbDists is a program sweep with each of W&B's distributions that sfsweep samples as
// its own kinds, plain and quantized, one with W&B's defaults.
const wandbDists = `program: train.py
method: random
run_cap: 8
parameters:
  layers: {distribution: q_uniform, min: 2, max: 12, q: 2}
  lr: {distribution: q_log_uniform_values, min: 1.0e-4, max: 1.0e-2, q: 1.0e-4}
  hidden: {distribution: q_log_uniform, min: 4, max: 6, q: 64}
  batch_size: {distribution: q_log_uniform_values, min: 8, max: 256}
  prior: {distribution: normal, mu: 0, sigma: 0.5}
  shift: {distribution: q_normal, mu: 10, sigma: 3, q: 1}
  scale: {distribution: log_normal, mu: -2, sigma: 0.5}
  tokens: {distribution: q_log_normal, mu: 4, sigma: 0.3, q: 8}
  dropout: {distribution: beta, a: 2, b: 8}
  keep: {distribution: q_beta, a: 5, b: 2, q: 0.05}
  plain: {distribution: normal}
  scale_inv: {distribution: inv_log_uniform_values, min: 0.01, max: 1}
`

// TestWandbProgramDistributions: each distribution imports as the manifest's kind with W&B's
// fields (q_log_uniform's bounds exponentiated, defaults written out), and the program's
// values a search samples lie in their range, on their lattice, as integers for a whole
// q (W&B returns ints then).
func TestWandbProgramDistributions(t *testing.T) {
	_, out, _ := importProgram(t, wandbDists, WandbOptions{})
	for _, want := range []string{
		"layers: {distribution: uniform, min: 2, max: 12, q: 2}",
		"lr: {distribution: log_uniform, min: 0.0001, max: 0.01, q: 0.0001}",
		"hidden: {distribution: log_uniform, min: 54.598150033144236, max: 403.4287934927351, q: 64}",
		"batch_size: {distribution: log_uniform, min: 8, max: 256, q: 1}",
		"prior: {distribution: normal, mu: 0, sigma: 0.5}",
		"shift: {distribution: normal, mu: 10, sigma: 3, q: 1}",
		"scale: {distribution: log_normal, mu: -2, sigma: 0.5}",
		"tokens: {distribution: log_normal, mu: 4, sigma: 0.3, q: 8}",
		"dropout: {distribution: beta, a: 2, b: 8}",
		"keep: {distribution: beta, a: 5, b: 2, q: 0.05}",
		"plain: {distribution: normal, mu: 0, sigma: 1}",
		"scale_inv: {distribution: log_uniform, min: 0.01, max: 1}",
	} {
		if !strings.Contains(out, "  "+want+"\n") {
			t.Errorf("the manifest has no %q:\n%s", want, out)
		}
	}
	var doc struct {
		Parameters Parameters `yaml:"parameters"`
	}
	if err := yaml.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if err := doc.Parameters.check(false, true); err != nil {
		t.Fatal(err)
	}
	var space search.Space
	for _, p := range doc.Parameters {
		d := p.Dim()
		space = append(space, d.Param.SearchParam(d.Name))
	}
	s, err := search.NewSampler(search.MethodTPE, space, 5, search.StartupTrials(5))
	if err != nil {
		t.Fatal(err)
	}
	wholes := map[string]bool{"layers": true, "hidden": true, "batch_size": true, "shift": true, "tokens": true}
	var h []search.Observation
	for i := range 40 {
		pt, err := s.Suggest(i, h)
		if err != nil {
			t.Fatal(err)
		}
		h = append(h, search.Observation{Point: pt, Outcome: search.Complete, Value: pt["prior"] * pt["prior"]})
		vals, err := doc.Parameters.at(pt)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range doc.Parameters {
			lo, hi := space[i].Range()
			x := pt[p.Name]
			if q := space[i].Q; x < lo || x > hi || (q > 0 && x != math.RoundToEven(x/q)*q) {
				t.Fatalf("%s = %v: outside [%v, %v] or off its lattice", p.Name, x, lo, hi)
			}
			if _, isInt := vals[p.Name].(int); isInt != wholes[p.Name] {
				t.Fatalf("%s = %v (%T): want an int: %v", p.Name, vals[p.Name], vals[p.Name], wholes[p.Name])
			}
		}
	}
}
