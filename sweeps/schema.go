package sweeps

// The keys of a manifest: every key no field of the schema takes, found in one walk over
// the YAML against the Manifest type, with the nearest key the schema has there.

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sfsweep/sfsweep/fielderr"
)

// unknownKeys returns an error for each key of the manifest root that the schema does not
// take where it stands, in line order, as yaml.v3's KnownFields refuses the first of them:
// each names the key's path, its value, its line, and the nearest key of the schema at
// that place where one is close ("did you mean steps?").
func unknownKeys(root *yaml.Node) Errors {
	var errs []*fielderr.Error
	walkSchema(root, reflect.TypeFor[Manifest](), "", &errs)
	slices.SortStableFunc(errs, func(a, b *fielderr.Error) int { return cmp.Compare(a.Line, b.Line) })
	var out Errors
	for _, e := range errs {
		out = append(out, e)
	}
	return out
}

// Errors are several errors of a manifest, in line order, each on a line of its own.
type Errors []error

func (es Errors) Error() string {
	if len(es) == 1 {
		return es[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d errors:", len(es))
	for _, e := range es {
		b.WriteString("\n  " + e.Error())
	}
	return b.String()
}

// Unwrap gives the errors to errors.Is and errors.As.
func (es Errors) Unwrap() []error { return es }

var unmarshaler = reflect.TypeFor[yaml.Unmarshaler]()

// walkSchema checks the keys of node n, which decodes into a value of type t at path.
// A type with its own UnmarshalYAML checks its node itself.
func walkSchema(n *yaml.Node, t reflect.Type, path string, errs *[]*fielderr.Error) {
	if n.Kind == yaml.DocumentNode {
		for _, c := range n.Content {
			walkSchema(c, t, path, errs)
		}
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshaler) || t.Implements(unmarshaler) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return
		}
		fields := schemaKeys(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := joinPath(path, k.Value)
			if ft, ok := fields[k.Value]; ok {
				walkSchema(v, ft, p, errs)
				continue
			}
			reason := "no such key"
			if near := nearestKey(k.Value, fields); near != "" {
				reason += "; did you mean " + near + "?"
			}
			*errs = append(*errs, &fielderr.Error{Field: p, Value: shape(v), Reason: reason, Line: k.Line})
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, c := range n.Content {
			walkSchema(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), errs)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			walkSchema(n.Content[i+1], t.Elem(), joinPath(path, n.Content[i].Value), errs)
		}
	}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// schemaKeys are the keys yaml.v3 decodes into struct type t, with the type each decodes
// into: a field's yaml tag name, or its name in lower case; the fields of an inline struct
// as the struct's own.
func schemaKeys(t reflect.Type) map[string]reflect.Type {
	keys := map[string]reflect.Type{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if slices.Contains(strings.Split(opts, ","), "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			for k, v := range schemaKeys(ft) {
				keys[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		keys[name] = f.Type
	}
	return keys
}

// nearestKey is the key of keys nearest to k by edit distance, where it is close: at most
// a third of k's length away, and at least one edit; "" where none is. Ties go to the
// first in sorted order.
func nearestKey(k string, keys map[string]reflect.Type) string {
	best, bestD := "", max(1, len(k)/3)+1
	for _, cand := range slices.Sorted(func(yield func(string) bool) {
		for c := range keys {
			if !yield(c) {
				return
			}
		}
	}) {
		if d := editDistance(strings.ToLower(k), cand); d < bestD {
			best, bestD = cand, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// shape is how an error shows a value: a scalar as written, a list or a mapping by its
// kind.
func shape(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Value
	case yaml.SequenceNode:
		return "[…]"
	case yaml.MappingNode:
		return "{…}"
	}
	return "…"
}
