package sweeps

// The import of a W&B sweep as a sweep of the researcher's own program (docs/trainer.md):
// the sweep's program and command become the manifest's trainer, and every one of its
// parameters passes through to the program as W&B would pass it.

import (
	"fmt"
	"math"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/program"
)

// DefaultProgramBase is the base manifest of a program sweep's import when none is given:
// 300 steps, a metrics line and a checkpoint expected every 30 (one W&B iteration is one
// of them), and one seed, as W&B runs each configuration once.
const DefaultProgramBase = `name: wandb-import
steps: 300
eval_every: 30
checkpoint_every: 30
seeds: [1]
`

// WandbOptions are an import's settings besides the sweep.
type WandbOptions struct {
	Base    []byte // the base manifest; nil: DefaultWandbBase, or DefaultProgramBase for a program
	Program string // the program to sweep, over the sweep's own program if it names one
	Native  bool   // train with sfsweep's engine, ignoring the sweep's program and command
	Count   int    // the configurations to try when the sweep has no run_cap (wandb agent --count)
}

// ImportWandb turns the W&B sweep configuration src into a manifest. A sweep that names a
// program or command, or is given one in o.Program, is a sweep of that program (unless
// o.Native); any other trains with sfsweep's engine, as FromWandb. Notes and errors are as
// FromWandb's.
func ImportWandb(src []byte, o WandbOptions) (manifest []byte, notes []string, err error) {
	top, err := yamlMapping(src, "W&B sweep")
	if err != nil {
		return nil, nil, err
	}
	program := o.Program != "" || lookup(top, "program") != nil || lookup(top, "command") != nil
	if o.Native || !program {
		return fromWandb(src, o)
	}
	base := o.Base
	if base == nil {
		base = []byte(DefaultProgramBase)
	}
	w, bm, err := readBase(base)
	if err != nil {
		return nil, nil, err
	}
	w.program = true
	out, err := w.programManifest(top, bm, o)
	if err != nil {
		return nil, nil, err
	}
	manifest, err = encodeManifest(out)
	if err != nil {
		return nil, nil, err
	}
	return manifest, w.notesText(), nil
}

// programManifest builds a program sweep's manifest: the base's settings less its
// optimizer grids, the sweep's trainer, parameters and search.
func (w *wandbImport) programManifest(top, base *yaml.Node, o WandbOptions) (*yaml.Node, error) {
	keys, err := w.topKeys(top)
	if err != nil {
		return nil, err
	}
	out := cloneNode(base)
	out.HeadComment, out.FootComment = "", ""
	if len(out.Content) > 0 {
		out.Content[0].HeadComment = ""
	}
	if lookup(out, "optimizers") != nil {
		delKey(out, "optimizers")
		w.note("parameters", "the base's optimizers", top.Line, "left out: a program sweep trains with the program's own optimizer, and its parameters are the sweep's")
	}
	if err := w.nameAndDescription(out, keys, top); err != nil {
		return nil, err
	}
	trainer, err := w.trainer(keys, o.Program, top)
	if err != nil {
		return nil, err
	}
	pk, ok := keys["parameters"]
	if !ok || pk[1].Kind != yaml.MappingNode || len(pk[1].Content) == 0 {
		return nil, &fielderr.Error{Field: "parameters", Value: "none", Reason: "a W&B sweep lists its parameters: a mapping of parameter names to {value}, {values} or a distribution", Line: keyLine(keys, "parameters", top.Line)}
	}
	params := &yaml.Node{Kind: yaml.MappingNode}
	configs, err := w.programParams(params, "", pk[1])
	if err != nil {
		return nil, err
	}
	// after the name and description: the trainer and the parameters
	at := 0
	for i := 0; i+1 < len(out.Content); i += 2 {
		if v := out.Content[i].Value; v == "name" || v == "description" {
			at = i + 2
		}
	}
	out.Content = slices.Insert(out.Content, at, quoted("trainer"), trainer, quoted("parameters"), params)
	search, err := w.programSearch(keys, lookup(base, "search"), configs, o.Count)
	if err != nil {
		return nil, err
	}
	setKey(out, "search", search)
	return out, nil
}

// trainer is the trainer block: the program (o.Program over the sweep's), the
// interpreter W&B would run it with, and the sweep's command.
func (w *wandbImport) trainer(keys map[string][2]*yaml.Node, override string, top *yaml.Node) (*yaml.Node, error) {
	t := &yaml.Node{Kind: yaml.MappingNode}
	program, line := override, top.Line
	if pk, ok := keys["program"]; ok {
		if pk[1].Kind != yaml.ScalarNode || pk[1].Value == "" {
			return nil, &fielderr.Error{Field: "program", Value: brief(pk[1]), Reason: "want the path of the training script", Line: pk[0].Line}
		}
		line = pk[0].Line
		if override == "" {
			program = pk[1].Value
		} else if override != pk[1].Value {
			w.note("program", pk[1].Value, line, fmt.Sprintf("the program is %s, as given", override))
		}
	}
	ck, hasCommand := keys["command"]
	var command []string
	if hasCommand {
		if ck[1].Kind != yaml.SequenceNode || len(ck[1].Content) == 0 {
			return nil, &fielderr.Error{Field: "command", Value: brief(ck[1]), Reason: "want a list: the program's argv, with ${interpreter}, ${program}, ${args}, ...", Line: ck[0].Line}
		}
		for _, a := range ck[1].Content {
			if a.Kind != yaml.ScalarNode {
				return nil, &fielderr.Error{Field: "command", Value: brief(a), Reason: "each item is one argument, a string", Line: a.Line}
			}
			if strings.Contains(a.Value, "${") && !slices.Contains(commandMacros, a.Value) {
				return nil, &fielderr.Error{Field: "command", Value: a.Value, Reason: "a trainer's command takes " + strings.Join(commandMacros, ", ") + " (docs/trainer.md), each as a whole argument", Line: a.Line}
			}
			command = append(command, a.Value)
		}
	}
	if module := moduleOf(command); hasCommand && override == "" && !slices.Contains(command, "${program}") && module != "" && slices.IndexFunc(command, isScript) < 0 {
		// python -m pkg.train: the command runs a module, whose file is its identity
		file := strings.ReplaceAll(module, ".", "/") + ".py"
		w.note("command", brief(ck[1]), ck[0].Line, fmt.Sprintf("runs the module %s: the trainer's identity is the hash of %s (add the files it imports to trainer.files)", module, file))
		setKey(t, "name", quoted(trainerName(file)))
		if slices.Contains(command, "${interpreter}") {
			setKey(t, "interpreter", quoted("python3"))
		}
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, a := range command {
			seq.Content = append(seq.Content, quoted(a))
		}
		setKey(t, "command", seq)
		files := flowSeq()
		files.Content = append(files.Content, quoted(file))
		setKey(t, "files", files)
		w.from("trainer", "command", ck[0].Line)
		return t, nil
	}
	if hasCommand && !slices.Contains(command, "${program}") {
		// W&B runs the command as written; a trainer runs ${program}, whose contents are
		// its identity: the script the command runs is the program
		i := slices.IndexFunc(command, isScript)
		if i < 0 {
			return nil, &fielderr.Error{Field: "command", Value: brief(ck[1]), Reason: "runs no program file (no ${program}, and no script such as train.py): a trainer runs a program, whose contents are its identity; write the script's path in place of what the command runs", Line: ck[0].Line}
		}
		if override == "" {
			if program != "" && program != command[i] {
				w.note("program", program, line, fmt.Sprintf("the command runs %s: that is the program", command[i]))
			}
			program = command[i]
		}
		w.note("command", brief(ck[1]), ck[0].Line, fmt.Sprintf("%s is the trainer's program: ${program} in its command", command[i]))
		command[i] = "${program}"
	}
	if program == "" {
		return nil, &fielderr.Error{Field: "program", Value: "not given", Reason: "W&B runs ${interpreter} ${program} ${args}: name the program here, or give -program", Line: line}
	}
	setKey(t, "name", quoted(trainerName(program)))
	setKey(t, "program", quoted(program))
	if !strings.ContainsAny(program, `/\`) && filepath.Ext(program) == "" {
		w.note("program", program, line, "a bare name, as of a console script: sfsweep run takes the file of that name beside the manifest, else the executable on PATH, and hashes that file as the trainer's identity")
	}
	if !hasCommand || slices.Contains(command, "${interpreter}") {
		// W&B's default command is ${env} ${interpreter} ${program} ${args}, and its
		// interpreter python
		setKey(t, "interpreter", quoted("python3"))
	}
	if hasCommand {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, a := range command {
			seq.Content = append(seq.Content, quoted(a))
		}
		setKey(t, "command", seq)
	}
	w.from("trainer", "program", line)
	return t, nil
}

// commandMacros are the macros of a trainer's command (docs/trainer.md): W&B's.
var commandMacros = []string{"${env}", "${interpreter}", "${program}", "${args}", "${args_no_hyphens}", "${args_no_boolean_flags}", "${args_json}"}

// moduleOf is the module a command runs with python's -m (src.train), or "".
func moduleOf(command []string) string {
	for i, a := range command[:max(len(command)-1, 0)] {
		if m := command[i+1]; a == "-m" && !strings.HasPrefix(m, "-") && !strings.Contains(m, "${") {
			return m
		}
	}
	return ""
}

// isScript reports whether a command's argument names a script to run: a literal (no
// macro, no flag) with a script's extension.
func isScript(arg string) bool {
	if strings.HasPrefix(arg, "-") || strings.Contains(arg, "${") {
		return false
	}
	return slices.Contains([]string{".py", ".sh", ".bash", ".jl", ".R", ".rb", ".pl", ".js", ".lua"}, path.Ext(arg))
}

// trainerName is a trainer's name for a program: its base name without the extension,
// made letters, digits, '-', '_' and '.'.
func trainerName(program string) string {
	name := strings.TrimSuffix(path.Base(program), path.Ext(program))
	if name = strings.Trim(nameChars(name), "._-"); name == "" {
		return "program"
	}
	return name[:min(len(name), 100)]
}

// programParams writes the sweep's parameters under prefix into params, nested ones
// flattened to dotted names, and returns how many configurations a grid of them has
// (capped at 1<<40).
func (w *wandbImport) programParams(params *yaml.Node, prefix string, v *yaml.Node) (int, error) {
	configs := 1
	for i := 0; i+1 < len(v.Content); i += 2 {
		k := v.Content[i]
		key := cloneNode(k)
		key.Value = prefix + k.Value
		p := &wandbParam{key: key.Value, name: key.Value, line: k.Line, v: v.Content[i+1], f: map[string]*yaml.Node{}}
		if err := p.read(); err != nil {
			return 0, err
		}
		if p.dist == "nested" {
			nested := p.f["parameters"]
			if nested.Kind != yaml.MappingNode || len(nested.Content) == 0 {
				return 0, p.err(brief(nested), "nested parameters: want a mapping of parameters")
			}
			n, err := w.programParams(params, key.Value+".", nested)
			if err != nil {
				return 0, err
			}
			configs = min(configs*n, 1<<40)
			continue
		}
		if lookup(params, key.Value) != nil {
			return 0, p.err(brief(p.v), "another parameter has this name")
		}
		node, n, err := w.programParam(p)
		if err != nil {
			return 0, err
		}
		if err := checkArgValue(p, node); err != nil {
			return 0, err
		}
		params.Content = append(params.Content, quoted(key.Value), node)
		w.from("parameters."+key.Value, p.field(), p.line)
		configs = min(configs*n, 1<<40)
	}
	return configs, nil
}

// programParam is the manifest's form of p: a value as it is, values as a list, or its
// distribution as sfsweep samples it, and the values it gives a grid (1 for a
// distribution).
func (w *wandbImport) programParam(p *wandbParam) (*yaml.Node, int, error) {
	switch p.dist {
	case "constant":
		n := p.f["value"]
		if n == nil {
			return nil, 0, p.err(brief(p.v), "constant needs value")
		}
		if n.Kind != yaml.ScalarNode { // a list or mapping that is one value
			m := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
			setKey(m, "value", cloneNode(n))
			return m, 1, nil
		}
		return cloneNode(n), 1, nil
	case "categorical":
		vs, err := p.values()
		if err != nil {
			return nil, 0, err
		}
		seq := flowSeq()
		for _, n := range vs {
			seq.Content = append(seq.Content, cloneNode(n))
		}
		if slices.ContainsFunc(vs, func(n *yaml.Node) bool { return n.Kind != yaml.ScalarNode }) {
			m := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
			setKey(m, "values", seq)
			return m, len(vs), nil
		}
		return seq, len(vs), nil
	}
	if w.method == MethodGrid {
		return w.gridValues(p)
	}
	// sfsweep samples the program's distributions as its own (docs/wandb.md)
	n, err := w.numeric(p, false)
	return n, 1, err
}

// gridValues lists p's values for a grid as W&B's grid does: every whole number of an
// int_uniform, the points min, min+q, ... below max of a q_uniform.
func (w *wandbImport) gridValues(p *wandbParam) (*yaml.Node, int, error) {
	if p.dist != "int_uniform" && p.dist != "q_uniform" {
		return nil, 0, p.err(fmt.Sprintf("{distribution: %s}", p.dist), "a grid takes value, values, int_uniform or q_uniform, as W&B's does: give values, or method random or bayes")
	}
	lo, hi, err := p.bounds()
	if err != nil {
		return nil, 0, err
	}
	step := 1.0
	if p.dist == "q_uniform" {
		q := 1.0
		if n := p.f["q"]; n != nil {
			if q, err = number(n, false); err != nil || !(q > 0) {
				return nil, 0, p.err(brief(n), "q: want a number > 0")
			}
		}
		step = q
	} else if lo != math.Trunc(lo) || hi != math.Trunc(hi) {
		return nil, 0, p.err(fmt.Sprintf("[%g, %g]", lo, hi), "int_uniform takes whole numbers min and max")
	}
	seq := flowSeq()
	for i := 0; ; i++ {
		v := lo + float64(i)*step
		if v > hi || (p.dist == "q_uniform" && v >= hi) {
			break
		}
		if i >= DefaultMaxTrials {
			return nil, 0, p.err(fmt.Sprintf("[%g, %g]", lo, hi), fmt.Sprintf("more than %d grid points", DefaultMaxTrials))
		}
		seq.Content = append(seq.Content, numberNode(v))
	}
	if len(seq.Content) == 0 {
		return nil, 0, p.err(fmt.Sprintf("[%g, %g]", lo, hi), "no grid points: want min < max")
	}
	return seq, len(seq.Content), nil
}

// checkArgValue refuses a value the program would misread, as validate does
// (docs/trainer.md): a string that would be read as a flag, or as a path outside the run
// directory. n is the parameter's manifest node: a value, a list of values, or a mapping
// ({value: ...}, {values: [...]}, a distribution).
func checkArgValue(p *wandbParam, n *yaml.Node) error {
	var items []*yaml.Node
	switch n.Kind {
	case yaml.ScalarNode:
		items = []*yaml.Node{n}
	case yaml.SequenceNode:
		items = n.Content
	case yaml.MappingNode:
		if vs := lookup(n, "values"); vs != nil {
			items = vs.Content
		}
	}
	if err := program.CheckValue(p.key, 0); err != nil {
		return p.err(fmt.Sprintf("%q", p.key), reason(err))
	}
	for _, it := range items {
		var v any
		if it.Kind != yaml.ScalarNode || it.Decode(&v) != nil {
			continue // a list or mapping goes to the program as JSON
		}
		if err := program.CheckValue(p.key, v); err != nil {
			return p.err(fmt.Sprintf("%q", it.Value), reason(err))
		}
	}
	return nil
}
