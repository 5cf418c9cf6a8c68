package sweeps

// The import of a Weights & Biases sweep configuration: its method, metric, parameters,
// early termination and budget become a manifest's optimizers and search block, on a base
// manifest that supplies what W&B has no notion of. docs/wandb.md has the mapping. This
// file holds the import and the manifest it builds; wandb_search.go the search block
// (method, metric, run_cap, early_terminate), wandb_params.go the parameters, and
// yamlnodes.go the YAML node helpers.

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/sfsweep/sfsweep/fielderr"
)

// DefaultWandbBase is the base manifest of a W&B import when none is given: the run
// settings and seeds of examples/c-sensitivity-quick.yaml (twin-llama on the offline byte
// corpus, 300 steps of 2,048 tokens, evaluation and checkpoints every 30 steps, seeds 1,
// 2, 3), under its own name, without the example's description, optimizers, tables and
// output prefix.
const DefaultWandbBase = `name: wandb-import
model: twin-llama
data:
  default: byte
  max_bytes: 8000000
seq_len: 128
micro_batch: 16
batch_tokens: 2048
steps: 300
warmup_frac: 0.05
eval_every: 30
eval_seqs: 64
test_seqs: 128
checkpoint_every: 30
ewa_decay: 0.8333
seeds: [1, 2, 3]
`

// BaseError is an error of a W&B import that lies in its base manifest.
type BaseError struct{ Err error }

func (e *BaseError) Error() string { return "base manifest: " + e.Err.Error() }
func (e *BaseError) Unwrap() error { return e.Err }

// wandbHeader heads every imported manifest.
const wandbHeader = `Imported from a W&B sweep by "sfsweep import wandb" (docs/wandb.md): the search (method,
metric, parameters, early stopping, budget) is the sweep's, the rest the base manifest's.`

// FromWandb turns the W&B sweep configuration src (YAML) into a manifest (YAML) on base,
// the manifest that supplies what W&B has no notion of: model, data, steps, evaluation,
// checkpoints, seeds unless the sweep searches seed, tables; nil is DefaultWandbBase. The
// base's optimizer grids, if it has any, are the templates of the sweep's (their label,
// schedule, clipping). notes say, with their lines, what was ignored or changes meaning.
// An error of the sweep is an *fielderr.Error with the line of its key in src; an error of the
// base is a *BaseError.
func FromWandb(src, base []byte) (manifest []byte, notes []string, err error) {
	return fromWandb(src, WandbOptions{Base: base, Native: true})
}

// fromWandb is the import of a sweep that trains with sfsweep's engine.
func fromWandb(src []byte, o WandbOptions) (manifest []byte, notes []string, err error) {
	base := o.Base
	if base == nil {
		base = []byte(DefaultWandbBase)
	}
	top, err := yamlMapping(src, "W&B sweep")
	if err != nil {
		return nil, nil, err
	}
	w, bm, err := readBase(base)
	if err != nil {
		return nil, nil, err
	}
	out, err := w.manifest(top, bm)
	if err != nil {
		return nil, nil, err
	}
	manifest, err = encodeManifest(out)
	if err != nil {
		return nil, nil, err
	}
	m, err := Parse(manifest)
	if err != nil {
		return nil, nil, w.explain(err, bm)
	}
	if w.finishBest(m, out) {
		if manifest, err = encodeManifest(out); err != nil {
			return nil, nil, err
		}
		if _, err := Parse(manifest); err != nil {
			return nil, nil, w.explain(err, bm)
		}
	}
	return manifest, w.notesText(), nil
}

// encodeManifest writes out, the manifest's mapping, under the import's header.
func encodeManifest(out *yaml.Node) ([]byte, error) {
	doc := &yaml.Node{Kind: yaml.DocumentNode, HeadComment: wandbHeader, Content: []*yaml.Node{out}}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// readBase reads the base manifest, and starts an import on its steps and eval_every.
func readBase(base []byte) (*wandbImport, *yaml.Node, error) {
	bm, err := yamlMapping(base, "base manifest")
	if err != nil {
		return nil, nil, &BaseError{err}
	}
	var b struct {
		Steps     int `yaml:"steps"`
		EvalEvery int `yaml:"eval_every"`
	}
	if err := bm.Decode(&b); err != nil {
		return nil, nil, &BaseError{fmt.Errorf("steps, eval_every: %s", strings.TrimPrefix(err.Error(), "yaml: "))}
	}
	return &wandbImport{steps: b.Steps, evalEvery: b.EvalEvery}, bm, nil
}

// yamlMapping reads src, a YAML mapping, as Parse would (size, nesting, no aliases or
// duplicate keys).
func yamlMapping(src []byte, what string) (*yaml.Node, error) {
	if len(src) > MaxManifestBytes {
		return nil, &fielderr.Error{Field: what, Value: fmt.Sprintf("%d bytes", len(src)), Reason: fmt.Sprintf("must be at most %d bytes", MaxManifestBytes)}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(src, &root); err != nil {
		return nil, fmt.Errorf("%s: %s", what, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if err := checkNode(&root, 0); err != nil {
		return nil, err
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, &fielderr.Error{Field: what, Value: "not a mapping", Reason: "want a YAML mapping of keys", Line: max(root.Line, 1)}
	}
	return root.Content[0], nil
}

// wandbImport is the state of one import: the method, the base's settings that place
// early stopping, the notes, where each field of the manifest comes from in the sweep, and
// which of the base's grids each of its optimizers comes from.
type wandbImport struct {
	method           string // sfsweep's: grid, random or tpe
	steps, evalEvery int    // the base's
	notes            []*fielderr.Error
	origins          []origin
	baseGrid         []int // the base's grid each of the manifest's optimizers comes from; -1: none
	runCap           int   // the sweep's run_cap, 0 if none
	runCapLine       int
	program          bool // a sweep of the researcher's program
	beta2Noted       bool
	etLine           int // early_terminate's
}

// origin is the key of the sweep that a field of the manifest comes from, so that an
// error of the manifest names the sweep's key and line.
type origin struct {
	field string // in the manifest: "optimizers[0].lr"
	key   string // in the sweep: "parameters.learning_rate"
	line  int
	exact bool   // only the field itself, not the fields below it
	value string // the value as the sweep writes it, if the error's is not
}

// bounds records that the bounds of v, a distribution, are the manifest field's first and
// second values where a check meets them (validation expands a distribution to its
// bounds), so that an error there names the sweep's min or max rather than the parameter.
func (w *wandbImport) bounds(field string, v wandbValue) {
	w.origins = append(w.origins, v.p.cornerOrigins(field, v.node)...)
}

// note records text about the sweep's field, which stands on line.
func (w *wandbImport) note(field string, value any, line int, text string) {
	w.notes = append(w.notes, &fielderr.Error{Field: field, Value: value, Reason: text, Line: line})
}

// notesText are the notes as lines of text, in the order of the sweep.
func (w *wandbImport) notesText() []string {
	slices.SortStableFunc(w.notes, func(a, b *fielderr.Error) int { return a.Line - b.Line })
	var ts []string
	for _, n := range w.notes {
		ts = append(ts, n.Error())
	}
	return ts
}

// from records that the manifest's field, and the fields below it, come from the sweep's
// key, which stands on line.
func (w *wandbImport) from(field, key string, line int) {
	w.origins = append(w.origins, origin{field: field, key: key, line: line})
}

// The methods of a sweep: bayes (W&B's Gaussian-process search) is tpe, sfsweep's
// model-based search.
var wandbMethods = map[string]string{"grid": MethodGrid, "random": MethodRandom, "bayes": MethodTPE}

// manifest builds the imported manifest: base, a mapping, with the sweep's name,
// description, parameters and search in place.
func (w *wandbImport) manifest(top, base *yaml.Node) (*yaml.Node, error) {
	keys, err := w.topKeys(top)
	if err != nil {
		return nil, err
	}
	for _, key := range []string{"program", "command"} {
		if k, ok := keys[key]; ok {
			w.note(key, brief(k[1]), k[0].Line, "ignored: sfsweep trains with its own loop, not a script")
		}
	}
	out := cloneNode(base)
	out.HeadComment, out.FootComment = "", ""
	if len(out.Content) > 0 {
		out.Content[0].HeadComment = "" // the base file's header: it describes the base
	}
	if err := w.nameAndDescription(out, keys, top); err != nil {
		return nil, err
	}
	pk, ok := keys["parameters"]
	if !ok || pk[1].Kind != yaml.MappingNode || len(pk[1].Content) == 0 {
		return nil, &fielderr.Error{Field: "parameters", Value: "none", Reason: "a W&B sweep lists its parameters: a mapping of parameter names to {value}, {values} or a distribution", Line: keyLine(keys, "parameters", top.Line)}
	}
	if err := w.parameters(out, pk[0], pk[1], lookup(base, "optimizers")); err != nil {
		return nil, err
	}
	_, prog := keys["program"]
	if _, cmd := keys["command"]; prog || cmd {
		w.noteOptimizers(out, pk, lookup(base, "optimizers"))
	}
	seeds := 1
	if s := lookup(out, "seeds"); s != nil && s.Kind == yaml.SequenceNode {
		seeds = len(s.Content)
	}
	search, err := w.search(keys, lookup(base, "search"), len(lookup(out, "optimizers").Content), seeds)
	if err != nil {
		return nil, err
	}
	setKey(out, "search", search)
	return out, nil
}

// noteOptimizers says, for a sweep of a program trained by sfsweep's engine instead, which
// optimizers the engine trains and why: the sweep's parameter optimizer names them, or
// else the base manifest's grids, or else sfsweep's default grid.
func (w *wandbImport) noteOptimizers(out *yaml.Node, pk [2]*yaml.Node, baseGrids *yaml.Node) {
	var names []string
	if g := lookup(out, "optimizers"); g != nil {
		for _, c := range g.Content {
			if n := lookup(c, "name"); n != nil && !slices.Contains(names, n.Value) {
				names = append(names, n.Value)
			}
		}
	}
	why := "sfsweep's default grid: the sweep has no parameter optimizer and the base manifest no grids"
	switch {
	case slices.ContainsFunc(pk[1].Content, func(k *yaml.Node) bool { return wandbParams[strings.ToLower(k.Value)] == "optimizer" }):
		why = "as the sweep's parameter optimizer names them"
	case baseGrids != nil && len(baseGrids.Content) > 0:
		why = "the base manifest's grids: the sweep has no parameter optimizer"
	}
	w.note("optimizers", strings.Join(names, ", "), pk[0].Line, "sfsweep's engine trains these, "+why)
}

// keyLine is the line of the sweep's key, or def if it has none.
func keyLine(keys map[string][2]*yaml.Node, key string, def int) int {
	if k, ok := keys[key]; ok {
		return k[0].Line
	}
	return def
}

// topKeys reads the sweep's top-level keys, notes those ignored, and reads its method
// and run_cap.
func (w *wandbImport) topKeys(top *yaml.Node) (map[string][2]*yaml.Node, error) {
	keys := map[string][2]*yaml.Node{}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		switch k.Value {
		case "method", "metric", "parameters", "early_terminate", "run_cap", "name", "description", "program", "command":
			keys[k.Value] = [2]*yaml.Node{k, v}
		case "project", "entity":
			w.note(k.Value, brief(v), k.Line, "ignored: results go to the store under the manifest's name (output.prefix)")
		case "controller", "job", "image_uri", "apiVersion", "kind":
			w.note(k.Value, brief(v), k.Line, "ignored: sfsweep runs its own controller and workers")
		case "metrics", "scheduler":
			return nil, &fielderr.Error{Field: k.Value, Value: brief(v), Reason: "multi-objective and custom (Optuna, Ax) schedulers have no sfsweep equivalent: give one metric and method grid, random or bayes", Line: k.Line}
		default:
			return nil, &fielderr.Error{Field: k.Value, Value: brief(v), Reason: "not a key of a W&B sweep (method, metric, parameters, early_terminate, run_cap, name, description, program, command, project, entity)", Line: k.Line}
		}
	}
	mk, ok := keys["method"]
	if !ok {
		return nil, &fielderr.Error{Field: "method", Value: "not given", Reason: "a W&B sweep names its method: grid, random or bayes", Line: top.Line}
	}
	if w.method, ok = wandbMethods[mk[1].Value]; !ok {
		return nil, &fielderr.Error{Field: "method", Value: fmt.Sprintf("%q", mk[1].Value), Reason: "must be grid, random or bayes (custom schedulers have no sfsweep equivalent)", Line: mk[0].Line}
	}
	if mk[1].Value == "bayes" {
		w.note("method", "bayes", mk[0].Line, "searched by tpe: both model the metric from the results so far; W&B's bayes is a Gaussian process, sfsweep's model-based search is the tree-structured Parzen estimator")
	}
	w.from("search.method", "method", mk[0].Line)
	if rk, ok := keys["run_cap"]; ok { // checked with the search block
		w.runCap, _ = strconv.Atoi(rk[1].Value)
		w.runCapLine = rk[0].Line
	}
	return keys, nil
}

// nameAndDescription carries the sweep's name and description into out.
func (w *wandbImport) nameAndDescription(out *yaml.Node, keys map[string][2]*yaml.Node, top *yaml.Node) error {
	if nk, ok := keys["name"]; ok {
		if err := w.name(out, nk[0], nk[1]); err != nil {
			return err
		}
	} else if n := lookup(out, "name"); n != nil {
		w.note("name", "not given", top.Line, fmt.Sprintf("the manifest is the base's %s: its results go where that name says", n.Value))
	}
	if dk, ok := keys["description"]; ok {
		if lookup(out, "description") == nil { // after the name
			at := 0
			for i := 0; i+1 < len(out.Content); i += 2 {
				if out.Content[i].Value == "name" {
					at = i + 2
				}
			}
			out.Content = slices.Insert(out.Content, at, quoted("description"), &yaml.Node{})
		}
		setKey(out, "description", quoted(dk[1].Value))
		w.from("description", "description", dk[0].Line)
	}
	return nil
}

// nameChars is s with each character a manifest's or trainer's name may not hold (letters,
// digits, '.', '_', '-') written '-'.
func nameChars(s string) string {
	return strings.Map(func(r rune) rune {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '_' || r == '-') {
			return r
		}
		return '-'
	}, s)
}

// name carries the sweep's name, made a manifest name.
func (w *wandbImport) name(out, k, v *yaml.Node) error {
	name := strings.TrimLeft(nameChars(strings.TrimSpace(v.Value)), "._-")
	name = name[:min(len(name), 100)]
	if name == "" {
		return &fielderr.Error{Field: "name", Value: fmt.Sprintf("%q", v.Value), Reason: "a manifest's name needs a letter or digit", Line: k.Line}
	}
	if name != v.Value {
		w.note("name", fmt.Sprintf("%q", v.Value), k.Line, fmt.Sprintf("written %s: a manifest's name is letters, digits, '.', '_' and '-'", name))
	}
	setKey(out, "name", quoted(name))
	w.from("name", "name", k.Line)
	return nil
}

// explain turns an error of the built manifest into one of the import's inputs: the
// sweep's key that the field comes from, with its line in the sweep, or else a
// *BaseError naming the base manifest's field (its grid's index there) and its line.
func (w *wandbImport) explain(err error, base *yaml.Node) error {
	var e *fielderr.Error
	if !errors.As(err, &e) {
		return &BaseError{err}
	}
	var best *origin
	for i, o := range w.origins {
		under := !o.exact && (strings.HasPrefix(e.Field, o.field+".") || strings.HasPrefix(e.Field, o.field+"["))
		if (e.Field == o.field || under) && (best == nil || len(o.field) > len(best.field)) {
			best = &w.origins[i]
		}
	}
	if best != nil {
		var v any = e.Value
		if best.value != "" {
			v = best.value
		}
		return &fielderr.Error{Field: best.key, Value: v, Reason: e.Reason, Line: best.line}
	}
	field := e.Field
	var gi int
	if rest, ok := strings.CutPrefix(field, "optimizers["); ok {
		if i := strings.IndexByte(rest, ']'); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil && n < len(w.baseGrid) && w.baseGrid[n] >= 0 {
				gi = w.baseGrid[n]
				field = fmt.Sprintf("optimizers[%d]%s", gi, rest[i+1:])
			}
		}
	}
	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{base}}
	return &BaseError{&fielderr.Error{Field: field, Value: e.Value, Reason: e.Reason, Line: lineOf(doc, field)}}
}

// brief is a node as an error shows it: a scalar's value, else its YAML on one line.
func brief(n *yaml.Node) string {
	if n == nil {
		return "not given"
	}
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	c := cloneNode(n)
	var flow func(*yaml.Node)
	flow = func(n *yaml.Node) {
		n.Style = yaml.FlowStyle
		for _, c := range n.Content {
			flow(c)
		}
	}
	flow(c)
	b, err := yaml.Marshal(c)
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}
