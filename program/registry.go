package program

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sfsweep/sfsweep/fielderr"
)

// Registry is a worker's registered trainers by name (sfsweep worker -trainers FILE): the
// only programs a distributed worker runs.
type Registry map[string]Spec

// MaxRegistryBytes bounds a registry file.
const MaxRegistryBytes = 1 << 20

// ParseRegistry reads a registry file, the YAML mapping `trainers: {name: Spec}`. Unknown
// keys are refused, and every error is a *fielderr.Error naming the field
// ("trainers.torch-llama.command[1]"), its value, the reason and its line.
func ParseRegistry(src []byte) (Registry, error) {
	if len(src) > MaxRegistryBytes {
		return nil, &fielderr.Error{Field: "trainers", Value: fmt.Sprintf("%d bytes", len(src)), Reason: fmt.Sprintf("must be at most %d bytes", MaxRegistryBytes)}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		line, reason := yamlErr(err)
		return nil, &fielderr.Error{Field: "trainers", Value: "not YAML", Reason: reason, Line: line}
	}
	if err := noAliases(&doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, &fielderr.Error{Field: "trainers", Value: "not given", Reason: "want a mapping `trainers: {name: {program: ...}}`", Line: max(doc.Line, 1)}
	}
	top := doc.Content[0]
	var trainers *yaml.Node
	for i := 0; i < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		if k.Value != "trainers" {
			return nil, &fielderr.Error{Field: k.Value, Value: brief(v), Reason: "unknown key: a registry has only trainers", Line: k.Line}
		}
		trainers = v
	}
	if trainers == nil || trainers.Kind != yaml.MappingNode || len(trainers.Content) == 0 {
		line := top.Line
		if trainers != nil {
			line = trainers.Line
		}
		return nil, &fielderr.Error{Field: "trainers", Value: brief(trainers), Reason: "want a mapping of one trainer or more by name", Line: line}
	}
	reg := Registry{}
	for i := 0; i < len(trainers.Content); i += 2 {
		k, v := trainers.Content[i], trainers.Content[i+1]
		name := k.Value
		if _, dup := reg[name]; dup {
			return nil, &fielderr.Error{Field: "trainers." + name, Value: name, Reason: "registered twice", Line: k.Line}
		}
		s, err := parseSpec(name, k.Line, v)
		if err != nil {
			return nil, err
		}
		if err := s.Check(); err != nil {
			return nil, relocate(err, name, v)
		}
		reg[name] = s
	}
	return reg, nil
}

// parseSpec decodes one trainer's mapping, field by field, so that a value of the wrong
// type is refused with its own line.
func parseSpec(name string, line int, n *yaml.Node) (Spec, error) {
	s := Spec{Name: name, Line: line}
	field := func(key string) string { return "trainers." + name + "." + key }
	if n.Kind != yaml.MappingNode {
		return s, &fielderr.Error{Field: "trainers." + name, Value: brief(n), Reason: "want a mapping: program, interpreter, command, version, files, probes, env, env_pass, gpu_memory, home, launcher", Line: n.Line}
	}
	for i := 0; i < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value == "gpu_memory" {
			size, err := parseMemory(v)
			if err != nil {
				return s, &fielderr.Error{Field: field(k.Value), Value: brief(v), Reason: err.Error(), Line: v.Line}
			}
			s.GPUMemory = size
			continue
		}
		var dst any
		want := "a string"
		switch k.Value {
		case "program":
			dst = &s.Program
		case "interpreter":
			dst = &s.Interpreter
		case "version":
			dst = &s.Version
		case "command":
			dst, want = &s.Command, "a list of strings"
		case "files":
			dst, want = &s.Files, "a list of strings"
		case "probes":
			dst, want = &s.Probes, "a list of strings"
		case "env":
			dst, want = &s.Env, "a mapping of names to strings"
		case "env_pass":
			dst, want = &s.EnvPass, "a list of variable names or prefixes with *"
		case "home":
			dst = &s.Home
		case "launcher":
			dst = &s.Launcher
		default:
			return s, &fielderr.Error{Field: field(k.Value), Value: brief(v), Reason: "unknown key: want program, interpreter, command, version, files, probes, env, env_pass, gpu_memory, home or launcher", Line: k.Line}
		}
		if !shaped(v) || v.Decode(dst) != nil {
			return s, &fielderr.Error{Field: field(k.Value), Value: brief(v), Reason: "want " + want, Line: v.Line}
		}
	}
	return s, nil
}

// The units of a gpu_memory, binary as nvidia-smi's MiB are: a decimal GB would be read as
// a GiB by some and not by others, 7% apart.
var memoryUnits = map[string]int64{"MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}

var memorySize = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?) ?([KMGTkmgt]i?[Bb])$`)

// parseMemory reads a registry's gpu_memory: a size with its unit, "20GiB", "1.5 GiB",
// "512MiB". The error is the reason a value is refused.
func parseMemory(n *yaml.Node) (int64, error) {
	want := errors.New("want a size with its unit: 20GiB, 1.5GiB or 512MiB")
	m := memorySize.FindStringSubmatch(n.Value)
	if n.Kind != yaml.ScalarNode || m == nil {
		return 0, want
	}
	unit, ok := memoryUnits[m[2]]
	if !ok {
		return 0, fmt.Errorf("unit %s: want MiB, GiB or TiB (binary, as nvidia-smi's MiB)", m[2])
	}
	v, err := strconv.ParseFloat(m[1], 64)
	size := v * float64(unit)
	switch {
	case err != nil:
		return 0, want
	case size < 1<<20:
		return 0, errors.New("must be 1MiB or more")
	case size > 1<<50:
		return 0, errors.New("more than any GPU has: at most 1024TiB")
	}
	return int64(size), nil
}

// shaped reports whether n is a scalar or a list or mapping of scalars, the shapes a
// Spec's fields take; yaml would otherwise turn a nested list into a string's error late.
func shaped(n *yaml.Node) bool {
	for _, c := range n.Content {
		if c.Kind != yaml.ScalarNode {
			return false
		}
	}
	return true
}

var indexed = regexp.MustCompile(`^([a-z]+)(?:\[(\d+)\]|\.(.+))?$`)

// relocate places a Check error of the trainer under its registry name, with the line of
// the value it names.
func relocate(err error, name string, n *yaml.Node) error {
	fe, ok := err.(*fielderr.Error)
	if !ok {
		return err
	}
	out := *fe
	rest := strings.TrimPrefix(fe.Field, "trainer.")
	out.Field = "trainers." + name + "." + rest
	if rest == "name" {
		out.Field = "trainers." + name
		return &out
	}
	m := indexed.FindStringSubmatch(rest)
	if m == nil {
		return &out
	}
	for i := 0; i < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value != m[1] {
			continue
		}
		out.Line = v.Line
		if m[2] != "" {
			if j, _ := strconv.Atoi(m[2]); j < len(v.Content) {
				out.Line = v.Content[j].Line
			}
		}
		if m[3] != "" {
			for j := 0; j+1 < len(v.Content); j += 2 {
				if v.Content[j].Value == m[3] {
					out.Line = v.Content[j].Line
				}
			}
		}
	}
	return &out
}

// noAliases refuses YAML aliases: a registry has no use for them, and they can expand
// a small file into a huge document.
func noAliases(n *yaml.Node) error {
	if n.Kind == yaml.AliasNode {
		return &fielderr.Error{Field: "trainers", Value: "*" + n.Value, Reason: "YAML aliases are not allowed", Line: n.Line}
	}
	for _, c := range n.Content {
		if err := noAliases(c); err != nil {
			return err
		}
	}
	return nil
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)

// yamlErr splits a yaml error into the line it names (0 if none) and its reason.
func yamlErr(err error) (int, string) {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, msg[len(m[0]):]
	}
	return 0, strings.TrimPrefix(msg, "yaml: ")
}

// brief is a node as an error shows it: a scalar's value, else its YAML on one line.
func brief(n *yaml.Node) string {
	if n == nil {
		return "not given"
	}
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	b, err := yaml.Marshal(&yaml.Node{Kind: n.Kind, Style: yaml.FlowStyle, Tag: n.Tag, Content: n.Content})
	if err != nil {
		return "?"
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}
