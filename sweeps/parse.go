package sweeps

// Reading a manifest: first as YAML, bounded in size, depth and aliases, then as the
// Manifest with its fields checked (validate.go).

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/training/backend"
)

// MaxManifestBytes bounds the size of a manifest file.
const MaxManifestBytes = 1 << 20

// MaxMappingKeys bounds the keys of one YAML mapping in a manifest. A manifest needs tens;
// the bound keeps decoding cheap, since yaml.v3's check for duplicate keys when it decodes
// into a struct or a map is quadratic in a mapping's size.
const MaxMappingKeys = 1000

// CheckSize refuses a manifest of n bytes beyond MaxManifestBytes, before anything parses it.
func CheckSize(n int64) error {
	if n > MaxManifestBytes {
		return &fielderr.Error{Field: "manifest", Value: fmt.Sprintf("%d bytes", n), Reason: fmt.Sprintf("must be at most %d bytes", MaxManifestBytes)}
	}
	return nil
}

// readNode reads src as YAML nodes, as every reader of a manifest must before it decodes
// anything: bounded in size first, then in nesting, aliases and the keys of a mapping,
// each check linear in the input.
func readNode(src []byte) (*yaml.Node, error) {
	if err := CheckSize(int64(len(src))); err != nil {
		return nil, err
	}
	var root yaml.Node
	if err := yaml.Unmarshal(src, &root); err != nil {
		return nil, fmt.Errorf("manifest: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if err := checkNode(&root, 0); err != nil {
		return nil, err
	}
	return &root, nil
}

// Parse reads and validates a manifest. Errors name the field, the value, the reason and
// the line of the manifest where the field stands.
func Parse(src []byte) (*Manifest, error) {
	root, err := readNode(src)
	if err != nil {
		return nil, err
	}
	if errs := unknownKeys(root); len(errs) > 0 {
		return nil, errs
	}
	var m Manifest
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		if e := (*fielderr.Error)(nil); errors.As(err, &e) && e.Field == "" {
			e.Field = fieldAt(root, e.Line) // a Param's error knows its line, not its field
			return nil, e
		}
		return nil, fmt.Errorf("manifest: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if err := m.validate(); err != nil {
		errs, ok := err.(Errors)
		if !ok {
			errs = Errors{err}
		}
		for _, err := range errs {
			var e *fielderr.Error
			if errors.As(err, &e) && e.Line == 0 {
				if required[e.Field] && !hasKey(root, e.Field) && (e.Field != "model" || !hasKey(root, "model_config")) {
					e.Missing = true // no line: it stands nowhere
				} else {
					e.Line = lineOf(root, e.Field)
				}
			}
		}
		slices.SortStableFunc(errs, func(a, b error) int { return cmp.Compare(errLine(a), errLine(b)) })
		if len(errs) == 1 {
			return nil, errs[0]
		}
		return nil, errs
	}
	return &m, nil
}

// errLine is the manifest line an error names; a missing key sorts first.
func errLine(err error) int {
	if e := (*fielderr.Error)(nil); errors.As(err, &e) {
		return e.Line
	}
	return 0
}

// required are the top-level keys a manifest must give (optimizers unless it has a
// trainer): an error of one left out says it is missing.
var required = map[string]bool{"name": true, "seeds": true, "optimizers": true, "steps": true, "batch_tokens": true, "model": true}

// hasKey reports whether the document root has the top-level key.
func hasKey(root *yaml.Node, key string) bool {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}
	return false
}

// CheckBackend tells whether this build of sfsweep carries the manifest's backend, whose
// text is src: nil if it does, else an *fielderr.Error naming the field, its line, and how to build
// a binary that has it. A worker that lacks it never receives its trials: they wait for
// one that has it. A program trainer's trials need no engine, so any build runs them.
func (m *Manifest) CheckBackend(src []byte) error {
	if m.Trainer != nil {
		return nil
	}
	name, err := backend.Resolve(m.Backend, m.Precision) // "" is backend.Default
	if err != nil {
		return nil // Parse refused it already
	}
	var ue *backend.UnavailableError
	if err := backend.Check(name); !errors.As(err, &ue) {
		return err // nil, or a name Parse already refused
	}
	var root yaml.Node
	_ = yaml.Unmarshal(src, &root) // Parse read it
	return &fielderr.Error{Field: "backend", Value: name, Reason: ue.Reason(), Line: lineOf(&root, "backend")}
}

// checkNode rejects what YAML allows but a manifest never needs: deep nesting, aliases
// (which can expand exponentially), mappings of more than MaxMappingKeys keys and
// duplicate keys.
func checkNode(n *yaml.Node, depth int) error {
	if depth > 20 {
		return &fielderr.Error{Field: "manifest", Value: fmt.Sprintf("nesting depth %d", depth), Reason: "must be at most 20", Line: n.Line}
	}
	if n.Kind == yaml.AliasNode {
		return &fielderr.Error{Field: "manifest", Value: "*" + n.Value, Reason: "YAML aliases are not allowed", Line: n.Line}
	}
	if n.Kind == yaml.MappingNode {
		if k := len(n.Content) / 2; k > MaxMappingKeys {
			return &fielderr.Error{Field: "manifest", Value: fmt.Sprintf("a mapping of %d keys", k), Reason: fmt.Sprintf("must have at most %d", MaxMappingKeys), Line: n.Line}
		}
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if prev, dup := seen[k.Value]; dup {
				return &fielderr.Error{Field: k.Value, Value: "duplicate key", Reason: fmt.Sprintf("already given on line %d", prev), Line: k.Line}
			}
			seen[k.Value] = k.Line
		}
	}
	for _, c := range n.Content {
		if err := checkNode(c, depth+1); err != nil {
			return err
		}
	}
	return nil
}
