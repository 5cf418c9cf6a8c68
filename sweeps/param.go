package sweeps

// A manifest's searched parameters: each is a list of values (a grid's axis, or the
// choices of a random or TPE search) or a distribution that a search samples.

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/search"
)

// The distributions a parameter may be sampled from (search.method random or tpe): the
// search package's, by the same names.
const (
	LogUniform = search.LogUniform // continuous in [min, max], uniform in log
	Uniform    = search.Uniform    // continuous in [min, max]
	IntUniform = search.IntUniform // whole numbers in [min, max]
	Choice     = search.Choice     // one of values
	Normal     = search.Normal     // Gaussian: mu, sigma
	LogNormal  = search.LogNormal  // its logarithm Gaussian: mu, sigma
	Beta       = search.Beta       // in [0, 1]: a, b
)

// The searched parameters' names: a search's points and its tables name them so.
const (
	ParamLR          = "lr"
	ParamBetas       = "betas" // the index of a (β1, β2) pair in the grid's betas list
	ParamBeta1       = "beta1"
	ParamBeta2       = "beta2"
	ParamC           = "c" // 0: vanilla
	ParamWeightDecay = "weight_decay"
	ParamWarmupFrac  = "warmup_frac"
	ParamBatchTokens = "batch_tokens"
)

// Param is a searched parameter: a list of Values, or a distribution (Dist) that only
// searches by method random or tpe sample. A list is a grid's axis, and a random or TPE
// search's choices.
type Param struct {
	Values []float64
	Dist   *Dist
}

// Dist is a distribution, written {distribution: log_uniform, min: 1e-4, max: 1e-2}, or
// {distribution: choice, values: [...]} (the same as the list), or
// {distribution: normal, mu: 0, sigma: 1}, {distribution: log_normal, mu: 0, sigma: 1},
// {distribution: beta, a: 2, b: 5}. q: quantizes a continuous one as W&B's q_
// distributions do: a draw x becomes round(x/q)·q (search.Param).
type Dist struct {
	Kind     string
	Min, Max float64
	Mu       float64 // normal, log_normal
	Sigma    float64
	A, B     float64 // beta
	Q        float64
	Values   []float64 // choice
	Line     int
}

// Search is the distribution as the search samples parameter name.
func (d Dist) Search(name string) search.Param {
	return search.Param{Name: name, Kind: d.Kind, Min: d.Min, Max: d.Max, Mu: d.Mu, Sigma: d.Sigma, A: d.A, B: d.B, Q: d.Q}
}

// Whole reports whether the distribution gives whole numbers only: int_uniform, or
// quantized by a whole q (W&B's q_ distributions give integers for an integer q).
func (d Dist) Whole() bool {
	return d.Kind == IntUniform || (d.Q > 0 && d.Q == math.Trunc(d.Q))
}

// bounded reports whether the distribution is the kind of [min, max] unquantized, which
// the manifest checks field by field.
func (d Dist) bounded() bool {
	return d.Q == 0 && (d.Kind == LogUniform || d.Kind == Uniform || d.Kind == IntUniform)
}

// SearchParam is the parameter name as the search samples it: its distribution, or a
// choice among its values.
func (p Param) SearchParam(name string) search.Param {
	if p.Dist != nil {
		return p.Dist.Search(name)
	}
	return search.Param{Name: name, Kind: search.Choice, Choices: p.Values}
}

// Set reports whether the parameter is given at all.
func (p Param) Set() bool { return len(p.Values) > 0 || p.Dist != nil }

// Searched reports whether the parameter takes more than one value.
func (p Param) Searched() bool { return len(p.Values) > 1 || p.Dist != nil }

// Only is the parameter's value when it has exactly one, and false otherwise.
func (p Param) Only() (float64, bool) {
	if len(p.Values) == 1 && p.Dist == nil {
		return p.Values[0], true
	}
	return 0, false
}

// String writes the parameter as a manifest would.
func (p Param) String() string {
	if d := p.Dist; d != nil {
		switch {
		case d.Kind == Choice:
			return fmt.Sprintf("%s %v", d.Kind, d.Values)
		case d.bounded():
			return fmt.Sprintf("%s [%g, %g]", d.Kind, d.Min, d.Max)
		}
		return d.Search("").String()
	}
	if len(p.Values) == 1 {
		return strconv.FormatFloat(p.Values[0], 'g', -1, 64)
	}
	return fmt.Sprint(p.Values)
}

// UnmarshalYAML reads a number, a list of numbers, or a distribution.
func (p *Param) UnmarshalYAML(n *yaml.Node) error { return p.parse(n, false) }

// CParam is refined SF-AdamW's C: as Param, where "vanilla" stands for 0 (C = 1/(1−β1)).
type CParam struct{ Param }

// UnmarshalYAML reads C as Param does, with "vanilla" for 0.
func (p *CParam) UnmarshalYAML(n *yaml.Node) error { return p.parse(n, true) }

// parse reads n into p; vanilla allows the word "vanilla" for 0.
func (p *Param) parse(n *yaml.Node, vanilla bool) error {
	switch n.Kind {
	case yaml.ScalarNode:
		v, err := number(n, vanilla)
		*p = Param{Values: []float64{v}}
		return err
	case yaml.SequenceNode:
		vs, err := numbers(n.Content, vanilla)
		*p = Param{Values: vs}
		return err
	case yaml.MappingNode:
		d := &Dist{Line: n.Line}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			var err error
			switch k.Value {
			case "distribution":
				d.Kind = v.Value
			case "min":
				d.Min, err = number(v, false)
			case "max":
				d.Max, err = number(v, false)
			case "mu":
				d.Mu, err = number(v, false)
			case "sigma":
				d.Sigma, err = number(v, false)
			case "a":
				d.A, err = number(v, false)
			case "b":
				d.B, err = number(v, false)
			case "q":
				d.Q, err = number(v, false)
			case "values":
				if v.Kind != yaml.SequenceNode {
					return &fielderr.Error{Value: v.Value, Reason: "values: want a list", Line: v.Line}
				}
				d.Values, err = numbers(v.Content, vanilla)
			default:
				return &fielderr.Error{Value: k.Value, Reason: "a distribution has the fields distribution, min, max, mu, sigma, a, b, q and values", Line: k.Line}
			}
			if err != nil {
				return err
			}
		}
		if d.Kind == Choice {
			if len(d.Values) == 0 {
				return &fielderr.Error{Value: "choice", Reason: "a choice lists its values: [...]", Line: n.Line}
			}
			*p = Param{Values: d.Values}
			return nil
		}
		*p = Param{Dist: d}
		return nil
	}
	return &fielderr.Error{Value: n.Value, Reason: "want a number, a list or a distribution", Line: n.Line}
}

func numbers(items []*yaml.Node, vanilla bool) ([]float64, error) {
	vs := make([]float64, 0, len(items))
	for _, it := range items {
		v, err := number(it, vanilla)
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	return vs, nil
}

func number(n *yaml.Node, vanilla bool) (float64, error) {
	want := "a number"
	if vanilla {
		want = `a number or "vanilla"`
	}
	if n.Kind != yaml.ScalarNode {
		return 0, &fielderr.Error{Value: n.Value, Reason: "want " + want, Line: n.Line}
	}
	if vanilla && strings.EqualFold(n.Value, "vanilla") {
		return 0, nil
	}
	v, err := strconv.ParseFloat(n.Value, 64)
	if err != nil {
		return 0, &fielderr.Error{Value: fmt.Sprintf("%q", n.Value), Reason: "want " + want, Line: n.Line}
	}
	return v, nil
}

// check validates a parameter under field: its kind and bounds, and that only searches
// that sample (sampled) give it a distribution. whole asks for whole numbers; positive for
// values > 0 (and log_uniform's min > 0 always).
func (p Param) check(field string, sampled, whole bool) error {
	for i, v := range p.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return &fielderr.Error{Field: fmt.Sprintf("%s[%d]", field, i), Value: v, Reason: "must be a finite number"}
		}
		if whole && v != math.Trunc(v) {
			return &fielderr.Error{Field: fmt.Sprintf("%s[%d]", field, i), Value: v, Reason: "must be a whole number"}
		}
	}
	d := p.Dist
	if d == nil {
		return nil
	}
	e := func(v any, reason string) error {
		return &fielderr.Error{Field: field, Value: v, Reason: reason, Line: d.Line}
	}
	switch d.Kind {
	case LogUniform, Uniform, IntUniform, Normal, LogNormal, Beta:
	default:
		return e(fmt.Sprintf("{distribution: %q}", d.Kind), fmt.Sprintf("distribution must be %s, %s, %s, %s, %s, %s or %s", LogUniform, Uniform, IntUniform, Normal, LogNormal, Beta, Choice))
	}
	if !sampled {
		return e(d.Kind, "a distribution is sampled by a search: set search.method to random or tpe, or give a list")
	}
	if !d.bounded() {
		return d.checkShape(field, whole)
	}
	if math.IsNaN(d.Min) || math.IsNaN(d.Max) || math.IsInf(d.Min, 0) || math.IsInf(d.Max, 0) || !(d.Min < d.Max) {
		return e(fmt.Sprintf("[%g, %g]", d.Min, d.Max), "min and max must be finite with min < max")
	}
	if d.Kind == LogUniform && d.Min <= 0 {
		return e(fmt.Sprintf("[%g, %g]", d.Min, d.Max), "log_uniform needs min > 0")
	}
	if (d.Kind == IntUniform || whole) && (d.Min != math.Trunc(d.Min) || d.Max != math.Trunc(d.Max)) {
		return e(fmt.Sprintf("[%g, %g]", d.Min, d.Max), "min and max must be whole numbers")
	}
	if whole && d.Kind != IntUniform {
		return e(d.Kind, "this parameter takes whole numbers: use int_uniform or a list")
	}
	return nil
}

// checkShape checks a normal, log_normal or beta distribution, or a quantized one, under
// field: as the search checks it, and whole numbers for a whole parameter.
func (d Dist) checkShape(field string, whole bool) error {
	if err := d.Search(field).Check(); err != nil {
		return &fielderr.Error{Field: field, Value: d.Search("").String(), Reason: err.Error(), Line: d.Line}
	}
	if whole && !d.Whole() {
		return &fielderr.Error{Field: field, Value: d.Search("").String(), Reason: "this parameter takes whole numbers: use int_uniform, a whole q, or a list", Line: d.Line}
	}
	if lo, hi := d.Search("").Range(); d.Whole() && max(-lo, hi) > 1<<53 {
		return &fielderr.Error{Field: field, Value: d.Search("").String(), Reason: fmt.Sprintf("its values reach [%g, %g]: whole numbers beyond ±2^53 are not exact", lo, hi), Line: d.Line}
	}
	return nil
}

// corners is the parameter's values for validation: its list, or the least and greatest
// value its distribution can give (search.Param.Range: its bounds, rounded if quantized;
// a normal's draws lie within about 8.2 standard deviations), so every trial a search may
// sample lies between them.
func (p Param) corners() []float64 {
	if p.Dist != nil {
		lo, hi := p.Dist.Search("").Range()
		return []float64{lo, hi}
	}
	return p.Values
}
