package sweeps

// W&B's distributions that sfsweep samples as search kinds with fields of their own
// (normal, log_normal, beta, and the quantized q_ variants), and where validation meets
// a distribution's least and greatest value.

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sfsweep/sfsweep/fielderr"
)

// wandbShaped are W&B's distributions that sfsweep samples as search kinds of their own
// fields (search.Param): the kind, and the fields W&B's schema allows besides
// distribution, with their defaults (nil: required). The q_ ones are quantized by q, a
// draw x becoming round(x/q)·q.
var wandbShaped = map[string]struct {
	kind   string
	fields map[string]*float64
}{
	"q_uniform":            {Uniform, map[string]*float64{"min": nil, "max": nil, "q": ptr(1)}},
	"q_log_uniform":        {LogUniform, map[string]*float64{"min": nil, "max": nil, "q": ptr(1)}},
	"q_log_uniform_values": {LogUniform, map[string]*float64{"min": nil, "max": nil, "q": ptr(1)}},
	"normal":               {Normal, map[string]*float64{"mu": ptr(0), "sigma": ptr(1)}},
	"q_normal":             {Normal, map[string]*float64{"mu": ptr(0), "sigma": ptr(1), "q": ptr(1)}},
	"log_normal":           {LogNormal, map[string]*float64{"mu": ptr(0), "sigma": ptr(1)}},
	"q_log_normal":         {LogNormal, map[string]*float64{"mu": ptr(0), "sigma": ptr(1), "q": ptr(1)}},
	"beta":                 {Beta, map[string]*float64{"a": ptr(1), "b": ptr(1)}},
	"q_beta":               {Beta, map[string]*float64{"a": ptr(1), "b": ptr(1), "q": ptr(1)}},
}

func ptr(v float64) *float64 { return &v }

// only fails if p has a field besides distribution and keys (sorted), which W&B's schema
// of its distribution refuses.
func (p *wandbParam) only(keys ...string) error {
	for _, k := range []string{"value", "values", "min", "max", "q", "mu", "sigma", "a", "b", "probabilities", "parameters"} {
		if n := p.f[k]; n != nil && !slices.Contains(keys, k) {
			return &fielderr.Error{Field: p.field() + "." + k, Value: brief(n), Reason: fmt.Sprintf("%s takes %s, as W&B's schema says", p.dist, strings.Join(keys, ", ")), Line: n.Line}
		}
	}
	return nil
}

// cornerOrigins are the origins of the manifest field's first and second values where a
// check meets them: the least and greatest value that node, p's distribution, can take
// (Param.corners). They name the sweep's min and max, or the parameter where it has
// none (normal, beta); the value is the sweep's where a draw reaches it unrounded, else
// the value reached.
func (p *wandbParam) cornerOrigins(field string, node *yaml.Node) []origin {
	var d Param
	if node.Kind != yaml.MappingNode || d.parse(node, false) != nil || d.Dist == nil {
		return nil
	}
	corners := d.corners()
	var os []origin
	for i, b := range []string{"min", "max"} {
		o := origin{field: fmt.Sprintf("%s[%d]", field, i), key: p.field(), line: p.line}
		if n := p.f[b]; n != nil {
			o.key, o.line = p.field()+"."+b, n.Line
		}
		switch n := p.f[b]; {
		case n != nil && d.Dist.bounded():
			o.value = brief(n)
		default:
			o.value = fmt.Sprintf("%g, the %s value of %s", corners[i], [...]string{"least", "greatest"}[i], p.dist)
		}
		os = append(os, o)
	}
	return os
}

// shaped maps p, a distribution of wandbShaped, to the manifest's distribution: W&B's
// q_log_uniform takes e^min and e^max, as log_uniform does; the others keep their
// fields, with W&B's defaults written out.
func (p *wandbParam) shaped() (*yaml.Node, error) {
	sh := wandbShaped[p.dist]
	keys := make([]string, 0, len(sh.fields))
	for k := range sh.fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if err := p.only(keys...); err != nil {
		return nil, err
	}
	v := map[string]float64{}
	for _, k := range keys {
		n, def := p.f[k], sh.fields[k]
		if n == nil && def == nil {
			return nil, p.err(fmt.Sprintf("{distribution: %s}", p.dist), p.dist+" needs min and max")
		}
		if n == nil {
			v[k] = *def
			continue
		}
		x, err := number(n, false)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, &fielderr.Error{Field: p.field() + "." + k, Value: brief(n), Reason: "want a finite number", Line: n.Line}
		}
		v[k] = x
	}
	for _, k := range []string{"sigma", "a", "b", "q"} {
		if x, ok := v[k]; ok && !(x > 0) {
			line := p.line
			if n := p.f[k]; n != nil {
				line = n.Line
			}
			return nil, &fielderr.Error{Field: p.field() + "." + k, Value: x, Reason: fmt.Sprintf("%s's %s must be > 0 (0 would make it one value: give value instead)", p.dist, k), Line: line}
		}
	}
	switch p.dist {
	case "q_log_uniform": // min and max are natural logs
		v["min"], v["max"] = math.Exp(v["min"]), math.Exp(v["max"])
	case "q_log_uniform_values":
		if !(v["min"] > 0) {
			return nil, &fielderr.Error{Field: p.field() + ".min", Value: p.f["min"].Value, Reason: p.dist + " takes values > 0: its logarithm is uniform", Line: p.f["min"].Line}
		}
	}
	if _, ok := v["min"]; ok && !(v["min"] < v["max"]) {
		return nil, p.err(fmt.Sprintf("[%s, %s]", p.f["min"].Value, p.f["max"].Value), "want min < max")
	}
	m := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	setKey(m, "distribution", quoted(sh.kind))
	for _, k := range []string{"min", "max", "mu", "sigma", "a", "b", "q"} {
		if x, ok := v[k]; ok {
			setKey(m, k, numberNode(x))
		}
	}
	return m, nil
}
