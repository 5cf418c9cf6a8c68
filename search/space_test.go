package search

import (
	"math"
	"strings"
	"testing"
)

// space is a search over one parameter of each kind.
var space = Space{
	{Name: "lr", Kind: LogUniform, Min: 1e-5, Max: 1e-1},
	{Name: "weight_decay", Kind: Uniform, Min: 0, Max: 0.3},
	{Name: "batch", Kind: IntUniform, Min: 1, Max: 4},
	{Name: "beta2", Kind: Choice, Choices: []float64{0.9, 0.95, 0.99, 0.999}},
}

func TestSpaceValidate(t *testing.T) {
	if err := space.Validate(); err != nil {
		t.Fatal(err)
	}
	lr := func(p Param) Space { p.Name = "lr"; return Space{p} }
	for _, c := range []struct {
		s    Space
		want []string // the error names the parameter, the value and the reason
	}{
		{Space{}, []string{"no parameters"}},
		{Space{{Kind: Uniform, Min: 0, Max: 1}}, []string{"parameter 0", "no name"}},
		{Space{space[0], space[0]}, []string{`"lr"`, "twice"}},
		{lr(Param{Kind: "cauchy", Min: 0, Max: 1}), []string{`"lr"`, `"cauchy"`}},
		{lr(Param{Kind: Normal, Min: 0, Max: 1, Sigma: 1}), []string{`"lr"`, "min and max", "not used"}},
		{lr(Param{Kind: Normal, Mu: 1}), []string{`"lr"`, "sigma 0", "above 0"}},
		{lr(Param{Kind: Normal, Mu: math.NaN(), Sigma: 1}), []string{`"lr"`, "mu NaN", "not finite"}},
		{lr(Param{Kind: LogNormal, Mu: 700, Sigma: 10}), []string{`"lr"`, "mu 700", "not finite"}},
		{lr(Param{Kind: Uniform, Min: 0, Max: 1e10, Q: 1e-310}), []string{`"lr"`, "quantized by 1e-310", "+Inf", "not finite"}},
		{lr(Param{Kind: Normal, Sigma: 1, A: 2}), []string{`"lr"`, "a and b", "not used"}},
		{lr(Param{Kind: Beta, A: 1}), []string{`"lr"`, "b 0", "above 0"}},
		{lr(Param{Kind: Beta, A: 1, B: 1, Sigma: 1}), []string{`"lr"`, "mu and sigma", "not used"}},
		{lr(Param{Kind: Uniform, Min: 0, Max: 1, Q: -1}), []string{`"lr"`, "q -1", "≥ 0"}},
		{lr(Param{Kind: Uniform, Min: 0, Max: 1, Mu: 1}), []string{`"lr"`, "mu and sigma", "not used"}},
		{lr(Param{Kind: IntUniform, Min: 0, Max: 4, Q: 2}), []string{`"lr"`, "q 2", "int_uniform"}},
		{lr(Param{Kind: Choice, Choices: []float64{1}, Q: 1}), []string{`"lr"`, "q", "not used"}},
		{lr(Param{Kind: Uniform, Min: 1, Max: 1}), []string{`"lr"`, "min 1", "max 1"}},
		{lr(Param{Kind: Uniform, Min: 2, Max: 1}), []string{`"lr"`, "min 2", "max 1"}},
		{lr(Param{Kind: Uniform, Min: math.NaN(), Max: 1}), []string{`"lr"`, "NaN", "not finite"}},
		{lr(Param{Kind: Uniform, Min: 0, Max: math.Inf(1)}), []string{`"lr"`, "+Inf", "not finite"}},
		{lr(Param{Kind: LogUniform, Min: 0, Max: 1}), []string{`"lr"`, "min 0", "above 0"}},
		{lr(Param{Kind: LogUniform, Min: -1, Max: 1}), []string{`"lr"`, "min -1", "above 0"}},
		{lr(Param{Kind: IntUniform, Min: 1, Max: 4.5}), []string{`"lr"`, "max 4.5", "whole"}},
		{lr(Param{Kind: Uniform, Min: 0, Max: 1, Choices: []float64{1}}), []string{`"lr"`, "choices [1]"}},
		{lr(Param{Kind: Choice}), []string{`"lr"`, "no choices"}},
		{lr(Param{Kind: Choice, Choices: []float64{1, 2, 1}}), []string{`"lr"`, "choice 1", "twice"}},
		{lr(Param{Kind: Choice, Choices: []float64{math.Inf(-1)}}), []string{`"lr"`, "-Inf", "not finite"}},
		{lr(Param{Kind: Choice, Min: 1, Choices: []float64{1}}), []string{`"lr"`, "min 1", "not used"}},
	} {
		err := c.s.Validate()
		if err == nil {
			t.Errorf("%+v: no error", c.s)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: error %q does not say %s", c.s, err, w)
			}
		}
	}
}
