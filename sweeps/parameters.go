package sweeps

// A program trainer's own parameters (parameters:), passed to it as they are written:
// each is one value, a list of values (a grid's axis, or a search's choices), or a
// distribution that a search samples.

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"go.yaml.in/yaml/v3"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/program"
	"github.com/sfsweep/sfsweep/training"
)

// Parameters are a program trainer's own parameters, sorted by name.
type Parameters []Parameter

// Parameter is one of them. Its values are what YAML reads (numbers, strings, booleans,
// lists, maps); a distribution's values are numbers.
type Parameter struct {
	Name   string
	Values []any
	Dist   *Dist
	Line   int
}

// UnmarshalYAML reads a mapping of names to values: a scalar is one value, a list is a
// list of values, and a mapping is {value: v}, {values: [...]} or a distribution
// ({distribution: log_uniform, min: 1e-4, max: 1e-2}).
func (ps *Parameters) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return &fielderr.Error{Value: n.Value, Reason: "parameters: want a mapping of names to values", Line: n.Line}
	}
	*ps = nil
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p := Parameter{Name: k.Value, Line: k.Line}
		if err := p.parse(v); err != nil {
			return err
		}
		*ps = append(*ps, p)
	}
	sort.SliceStable(*ps, func(i, j int) bool { return (*ps)[i].Name < (*ps)[j].Name })
	return nil
}

// parse reads the value node n of p.
func (p *Parameter) parse(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return &fielderr.Error{Value: n.Value, Reason: err.Error(), Line: n.Line}
		}
		p.Values = []any{v}
		return nil
	case yaml.SequenceNode:
		return n.Decode(&p.Values)
	case yaml.MappingNode:
		if v := lookup(n, "value"); v != nil && len(n.Content) == 2 {
			var one any
			if err := v.Decode(&one); err != nil {
				return err
			}
			p.Values = []any{one}
			return nil
		}
		if v := lookup(n, "values"); v != nil && len(n.Content) == 2 {
			if v.Kind != yaml.SequenceNode {
				return &fielderr.Error{Value: v.Value, Reason: "values: want a list", Line: v.Line}
			}
			return v.Decode(&p.Values)
		}
		var q Param
		if err := q.parse(n, false); err != nil {
			return err
		}
		if q.Dist == nil {
			for _, v := range q.Values {
				p.Values = append(p.Values, v)
			}
			return nil
		}
		p.Dist = q.Dist
		return nil
	}
	return &fielderr.Error{Value: n.Value, Reason: "want a value, a list or a distribution", Line: n.Line}
}

// Searched reports whether the parameter takes more than one value.
func (p Parameter) Searched() bool { return len(p.Values) > 1 || p.Dist != nil }

// numbers returns the parameter's values as numbers, and false if one is not a number.
func (p Parameter) numbers() ([]float64, bool) {
	vs := make([]float64, len(p.Values))
	for i, v := range p.Values {
		f, ok := asNumber(v)
		if !ok {
			return nil, false
		}
		vs[i] = f
	}
	return vs, true
}

// asNumber is v as a float64, if it is a number.
func asNumber(v any) (float64, bool) {
	switch v := v.(type) {
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case uint64:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}

// Dim is the parameter as a search's dimension: its numbers, or, for other values, the
// index of a choice among them.
func (p Parameter) Dim() Dim {
	if p.Dist != nil {
		return Dim{Name: p.Name, Param: Param{Dist: p.Dist}, Whole: p.Dist.Whole()}
	}
	if vs, ok := p.numbers(); ok {
		whole := true
		for _, v := range vs {
			whole = whole && v == math.Trunc(v)
		}
		return Dim{Name: p.Name, Param: Param{Values: vs}, Whole: whole && p.allInts()}
	}
	return Dim{Name: p.Name, Param: Param{Values: indices(len(p.Values))}, Whole: true, Index: true}
}

// ValueText is how a searched value v of the search dimension name reads: for a choice
// among a program parameter's values that are not numbers (Dim.Index), the value the
// index v stands for, as the program is passed it; "" for any other dimension, which
// reads as its number.
func (m *Manifest) ValueText(name string, v float64) string {
	for _, p := range m.Parameters {
		if p.Name != name || !p.Dim().Index {
			continue
		}
		if i := int(v); float64(i) == v && i >= 0 && i < len(p.Values) {
			return program.Format(p.Values[i])
		}
	}
	return ""
}

// allInts reports whether every value was written as a whole number.
func (p Parameter) allInts() bool {
	for _, v := range p.Values {
		if _, ok := v.(int); !ok {
			return false
		}
	}
	return true
}

// indices are 0, 1, ..., n−1 as numbers: the choices of a list of other values.
func indices(n int) []float64 {
	idx := make([]float64, n)
	for i := range idx {
		idx[i] = float64(i)
	}
	return idx
}

// value is the parameter's value at a search's point v of its Dim.
func (p Parameter) value(v float64) (any, error) {
	d := p.Dim()
	if d.Index {
		i := int(v)
		if i < 0 || i >= len(p.Values) {
			return nil, fmt.Errorf("parameter %s: index %v outside its %d values", p.Name, v, len(p.Values))
		}
		return p.Values[i], nil
	}
	if d.Whole {
		return int(math.Round(v)), nil
	}
	return v, nil
}

// check validates the parameters of a manifest whose grids (optimizers) pass their own
// arguments when native: a name, a value safe to pass, no name of the run's own
// arguments, and distributions only in a sampled search.
func (ps Parameters) check(native, sampled bool) error {
	for _, p := range ps {
		field := "parameters." + p.Name
		e := func(v any, reason string) error {
			return &fielderr.Error{Field: field, Value: v, Reason: reason, Line: p.Line}
		}
		if native && slices.Contains(training.RunArgNames, p.Name) {
			return e(p.Name, "a trial of an optimizer grid passes this argument itself (docs/trainer.md): set it in the grid")
		}
		if len(p.Values) == 0 && p.Dist == nil {
			return e("[]", "give a value, a list of values or a distribution")
		}
		if err := program.CheckValue(p.Name, 0); err != nil {
			return e(fmt.Sprintf("%q", p.Name), reason(err))
		}
		for i, v := range p.Values {
			f, isFloat := v.(float64)
			switch err := program.CheckValue(p.Name, v); {
			case err != nil:
				val := v // CheckValue's own, where it says the value's size rather than the value
				if fe := (*fielderr.Error)(nil); errors.As(err, &fe) {
					val = fe.Value
				}
				return &fielderr.Error{Field: fmt.Sprintf("%s[%d]", field, i), Value: val, Reason: reason(err), Line: p.Line}
			case isFloat && (math.IsNaN(f) || math.IsInf(f, 0)):
				return &fielderr.Error{Field: fmt.Sprintf("%s[%d]", field, i), Value: v, Reason: "must be a finite number", Line: p.Line}
			}
		}
		if err := (Param{Dist: p.Dist}).check(field, sampled, false); err != nil {
			return err
		}
	}
	return nil
}

// reason is err's reason, without the field and value a fielderr.Error names.
func reason(err error) string {
	var fe *fielderr.Error
	if errors.As(err, &fe) {
		return fe.Reason
	}
	return err.Error()
}

// grid returns every combination of the parameters' values, in order (the last parameter
// varies fastest); one empty combination if there are none.
func (ps Parameters) grid() []map[string]any {
	combos := []map[string]any{{}}
	for _, p := range ps {
		next := make([]map[string]any, 0, len(combos)*len(p.Values))
		for _, c := range combos {
			for _, v := range p.Values {
				n := make(map[string]any, len(c)+1)
				for k, x := range c {
					n[k] = x
				}
				n[p.Name] = v
				next = append(next, n)
			}
		}
		combos = next
	}
	return combos
}

// count is len(ps.grid()), saturating at math.MaxInt.
func (ps Parameters) count() int {
	n := 1
	for _, p := range ps {
		k := max(len(p.Values), 1)
		if n > math.MaxInt/k {
			return math.MaxInt
		}
		n *= k
	}
	return n
}

// at returns the parameters' values at a search's point: the searched ones from values
// (by their Dim), the others their only value; nil if there are none.
func (ps Parameters) at(values map[string]float64) (map[string]any, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	out := make(map[string]any, len(ps))
	for _, p := range ps {
		if !p.Searched() {
			out[p.Name] = p.Values[0]
			continue
		}
		v, ok := values[p.Name]
		if !ok {
			return nil, fmt.Errorf("no value of parameter %s", p.Name)
		}
		x, err := p.value(v)
		if err != nil {
			return nil, err
		}
		out[p.Name] = x
	}
	return out, nil
}
