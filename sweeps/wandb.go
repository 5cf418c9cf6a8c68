package sweeps

// The import of a Weights & Biases sweep configuration: its method, metric, parameters,
// early termination and budget become a manifest's optimizers and search block, on a base
// manifest that supplies what W&B has no notion of. docs/wandb.md has the mapping.

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/sfsweep/sfsweep/training"
)

// DefaultWandbBase is the base manifest of a W&B import when none is given: the settings
// of examples/c-sensitivity-quick.yaml (twin-llama on the offline byte corpus, 300 steps
// of 2,048 tokens, evaluation and checkpoints every 30 steps, seeds 1, 2, 3) without its
// optimizers and tables.
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
// An error of the sweep is an *Error with the line of its key in src; an error of the
// base is a *BaseError.
func FromWandb(src, base []byte) (manifest []byte, notes []string, err error) {
	if base == nil {
		base = []byte(DefaultWandbBase)
	}
	top, err := yamlMapping(src, "W&B sweep")
	if err != nil {
		return nil, nil, err
	}
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
	w := &wandbImport{steps: b.Steps, evalEvery: b.EvalEvery}
	out, err := w.manifest(top, bm)
	if err != nil {
		return nil, nil, err
	}
	doc := &yaml.Node{Kind: yaml.DocumentNode, HeadComment: wandbHeader, Content: []*yaml.Node{out}}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, nil, err
	}
	if _, err := Parse(buf.Bytes()); err != nil {
		return nil, nil, w.explain(err, bm)
	}
	return buf.Bytes(), w.notesText(), nil
}

// yamlMapping reads src, a YAML mapping, as Parse would (size, nesting, no aliases or
// duplicate keys).
func yamlMapping(src []byte, what string) (*yaml.Node, error) {
	if len(src) > MaxManifestBytes {
		return nil, &Error{Field: what, Value: fmt.Sprintf("%d bytes", len(src)), Reason: fmt.Sprintf("must be at most %d bytes", MaxManifestBytes)}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(src, &root); err != nil {
		return nil, fmt.Errorf("%s: %s", what, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if err := checkNode(&root, 0); err != nil {
		return nil, err
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, &Error{Field: what, Value: "not a mapping", Reason: "want a YAML mapping of keys", Line: max(root.Line, 1)}
	}
	return root.Content[0], nil
}

// wandbImport is the state of one import: the base's settings it reads, the notes, and
// where each field of the manifest comes from in the sweep.
type wandbImport struct {
	method           string // sfsweep's: grid, random or tpe
	steps, evalEvery int    // the base's
	notes            []*Error
	origins          []origin
	baseGrid         []int // the base's grid each of the manifest's optimizers comes from; -1: none
}

// origin is the key of the sweep that a field of the manifest comes from, so that an
// error of the manifest names the sweep's key and line.
type origin struct {
	field string // in the manifest: "optimizers[0].lr"
	key   string // in the sweep: "parameters.learning_rate"
	line  int
	exact bool // only the field itself, not the fields below it
}

func (w *wandbImport) note(field string, value any, line int, text string) {
	w.notes = append(w.notes, &Error{Field: field, Value: value, Reason: text, Line: line})
}

// notesText are the notes as lines of text, in the order of the sweep.
func (w *wandbImport) notesText() []string {
	slices.SortStableFunc(w.notes, func(a, b *Error) int { return a.Line - b.Line })
	var ts []string
	for _, n := range w.notes {
		ts = append(ts, n.Error())
	}
	return ts
}

func (w *wandbImport) from(field, key string, line int) {
	w.origins = append(w.origins, origin{field: field, key: key, line: line})
}

// The methods of a sweep: bayes (W&B's Gaussian-process search) is tpe, sfsweep's
// model-based search.
var wandbMethods = map[string]string{"grid": MethodGrid, "random": MethodRandom, "bayes": MethodTPE}

// manifest builds the imported manifest: base, a mapping, with the sweep's name,
// description, parameters and search in place.
func (w *wandbImport) manifest(top, base *yaml.Node) (*yaml.Node, error) {
	keys := map[string][2]*yaml.Node{}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		switch k.Value {
		case "method", "metric", "parameters", "early_terminate", "run_cap", "name", "description":
			keys[k.Value] = [2]*yaml.Node{k, v}
		case "program", "command":
			w.note(k.Value, brief(v), k.Line, "ignored: sfsweep trains with its own loop, not a script")
		case "project", "entity":
			w.note(k.Value, brief(v), k.Line, "ignored: results go to the store under the manifest's name (output.prefix)")
		case "controller", "job", "image_uri", "apiVersion", "kind":
			w.note(k.Value, brief(v), k.Line, "ignored: sfsweep runs its own controller and workers")
		case "metrics", "scheduler":
			return nil, &Error{Field: k.Value, Value: brief(v), Reason: "multi-objective and custom (Optuna, Ax) schedulers have no sfsweep equivalent: give one metric and method grid, random or bayes", Line: k.Line}
		default:
			return nil, &Error{Field: k.Value, Value: brief(v), Reason: "not a key of a W&B sweep (method, metric, parameters, early_terminate, run_cap, name, description, program, command, project, entity)", Line: k.Line}
		}
	}
	mk, ok := keys["method"]
	if !ok {
		return nil, &Error{Field: "method", Value: "not given", Reason: "a W&B sweep names its method: grid, random or bayes", Line: top.Line}
	}
	if w.method, ok = wandbMethods[mk[1].Value]; !ok {
		return nil, &Error{Field: "method", Value: fmt.Sprintf("%q", mk[1].Value), Reason: "must be grid, random or bayes (custom schedulers have no sfsweep equivalent)", Line: mk[0].Line}
	}
	if mk[1].Value == "bayes" {
		w.note("method", "bayes", mk[0].Line, "searched by tpe: both model the metric from the results so far; W&B's bayes is a Gaussian process, sfsweep's model-based search is the tree-structured Parzen estimator")
	}
	w.from("search.method", "method", mk[0].Line)
	out := cloneNode(base)
	out.HeadComment, out.FootComment = "", ""
	if len(out.Content) > 0 {
		out.Content[0].HeadComment = "" // the base file's header: it describes the base
	}
	if nk, ok := keys["name"]; ok {
		if err := w.name(out, nk[0], nk[1]); err != nil {
			return nil, err
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
	pk, ok := keys["parameters"]
	if !ok || pk[1].Kind != yaml.MappingNode || len(pk[1].Content) == 0 {
		line := top.Line
		if ok {
			line = pk[0].Line
		}
		return nil, &Error{Field: "parameters", Value: "none", Reason: "a W&B sweep lists its parameters: a mapping of parameter names to {value}, {values} or a distribution", Line: line}
	}
	if err := w.parameters(out, pk[0], pk[1], lookup(base, "optimizers")); err != nil {
		return nil, err
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

// name carries the sweep's name, made a manifest name.
func (w *wandbImport) name(out, k, v *yaml.Node) error {
	name := strings.Map(func(r rune) rune {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '_' || r == '-') {
			return r
		}
		return '-'
	}, strings.TrimSpace(v.Value))
	name = strings.TrimLeft(name, "._-")
	if len(name) > 100 {
		name = name[:100]
	}
	if name == "" {
		return &Error{Field: "name", Value: fmt.Sprintf("%q", v.Value), Reason: "a manifest's name needs a letter or digit", Line: k.Line}
	}
	if name != v.Value {
		w.note("name", fmt.Sprintf("%q", v.Value), k.Line, fmt.Sprintf("written %s: a manifest's name is letters, digits, '.', '_' and '-'", name))
	}
	setKey(out, "name", quoted(name))
	w.from("name", "name", k.Line)
	return nil
}

// search is the search block: the base's (its seed, parallel, iterate) with the sweep's
// method, metric, budget and early stopping. grids and seeds count the configurations a
// run_cap becomes.
func (w *wandbImport) search(keys map[string][2]*yaml.Node, base *yaml.Node, grids, seeds int) (*yaml.Node, error) {
	s := &yaml.Node{Kind: yaml.MappingNode}
	if base != nil && base.Kind == yaml.MappingNode {
		s = cloneNode(base)
	}
	setKey(s, "method", quoted(w.method))
	mline := keys["method"][0].Line
	rk, ok := keys["run_cap"]
	switch {
	case ok:
		n, err := strconv.Atoi(rk[1].Value)
		if err != nil || n < 1 || rk[1].Kind != yaml.ScalarNode {
			return nil, &Error{Field: "run_cap", Value: brief(rk[1]), Reason: "must be a whole number ≥ 1", Line: rk[0].Line}
		}
		setKey(s, "trials", plain(strconv.Itoa(n)))
		w.from("search.trials", "run_cap", rk[0].Line)
		if w.method == MethodGrid {
			w.note("run_cap", n, rk[0].Line, fmt.Sprintf("W&B's grid stops after the first %d runs in grid order; sfsweep tries %d configurations of each grid, drawn at random", n, n))
		}
		if grids*seeds > 1 {
			w.note("run_cap", n, rk[0].Line, fmt.Sprintf("search.trials = %d configurations of each optimizer grid (%d), each trained on every seed (%d): up to %d trials, where W&B runs %d", n, grids, seeds, n*grids*seeds, n))
		}
	case w.method != MethodGrid:
		return nil, &Error{Field: "run_cap", Value: "not given", Reason: fmt.Sprintf("a %s search needs a budget: give run_cap, the configurations to try (W&B would run until stopped)", keys["method"][1].Value), Line: mline}
	default:
		delKey(s, "trials")
	}
	metric := MetricValLoss
	mk, ok := keys["metric"]
	if ok {
		var err error
		if metric, err = w.metric(mk[0], mk[1]); err != nil {
			return nil, err
		}
	} else {
		w.note("metric", "not given", mline, "ranked by val_loss")
	}
	setKey(s, "metric", quoted(metric))
	setKey(s, "goal", quoted("minimize"))
	ek, ok := keys["early_terminate"]
	if !ok {
		delKey(s, "early_stopping")
		return s, nil
	}
	es, err := w.earlyStopping(ek[0], ek[1])
	if err != nil {
		return nil, err
	}
	setKey(s, "early_stopping", es)
	return s, nil
}

// metric maps the sweep's metric to one of sfsweep's, which are losses.
func (w *wandbImport) metric(k, v *yaml.Node) (string, error) {
	if v.Kind != yaml.MappingNode {
		return "", &Error{Field: "metric", Value: brief(v), Reason: "want {name: ..., goal: minimize}", Line: k.Line}
	}
	name, nameLine := "", k.Line
	var goal, goalKey *yaml.Node
	for i := 0; i+1 < len(v.Content); i += 2 {
		mk, mv := v.Content[i], v.Content[i+1]
		switch mk.Value {
		case "name":
			name, nameLine = mv.Value, mk.Line
		case "goal":
			goal, goalKey = mv, mk
		case "target", "impute", "impute_while_running":
			w.note("metric."+mk.Value, brief(mv), mk.Line, "ignored: sfsweep runs the whole budget and counts failed trials as failed")
		default:
			return "", &Error{Field: "metric." + mk.Value, Value: brief(mv), Reason: "not a key of a W&B metric (name, goal, target)", Line: mk.Line}
		}
	}
	m := wandbMetric(name)
	if m == "" {
		return "", &Error{Field: "metric.name", Value: fmt.Sprintf("%q", name), Reason: "sfsweep ranks by val_loss (the validation loss: val_loss, valid_loss, eval_loss, loss/val, ...), test_loss or test_ppl", Line: nameLine}
	}
	if goal != nil && goal.Value != "minimize" {
		return "", &Error{Field: "metric.goal", Value: fmt.Sprintf("%q", goal.Value), Reason: "sfsweep's metrics are losses (val_loss, test_loss, test_ppl): the goal is minimize", Line: goalKey.Line}
	}
	w.from("search.metric", "metric.name", nameLine)
	return m, nil
}

// wandbMetric is sfsweep's metric for a W&B metric name ("val_loss", "eval/loss",
// "test_perplexity"), or "" if it has none. The name's words, split at anything but
// letters and digits, must be a split (validation or test) and a quantity (loss or
// perplexity): "loss" alone is most often the training loss.
func wandbMetric(name string) string {
	var split, quantity string
	for _, t := range strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		s, q := "", ""
		switch t {
		case "val", "valid", "validation", "eval", "evaluation", "dev":
			s = "val"
		case "test":
			s = "test"
		case "loss", "nll", "xent":
			q = "loss"
		case "ppl", "perplexity":
			q = "ppl"
		default:
			return ""
		}
		if (s != "" && split != "" && s != split) || (q != "" && quantity != "" && q != quantity) {
			return ""
		}
		split, quantity = cmpOr(s, split), cmpOr(q, quantity)
	}
	switch split + "_" + quantity {
	case "val_loss":
		return MetricValLoss
	case "test_loss":
		return MetricTestLoss
	case "test_ppl":
		return MetricTestPPL
	}
	return ""
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// earlyStopping maps W&B's hyperband to ASHA. One W&B iteration is one logged value of
// the metric: one evaluation, every eval_every steps of the base.
func (w *wandbImport) earlyStopping(k, v *yaml.Node) (*yaml.Node, error) {
	if v.Kind != yaml.MappingNode {
		return nil, &Error{Field: "early_terminate", Value: brief(v), Reason: "want {type: hyperband, min_iter: ...} or {type: hyperband, max_iter: ..., s: ...}", Line: k.Line}
	}
	f := map[string]*yaml.Node{}
	lines := map[string]int{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		ek, ev := v.Content[i], v.Content[i+1]
		switch ek.Value {
		case "type", "min_iter", "max_iter", "s", "eta":
			f[ek.Value], lines[ek.Value] = ev, ek.Line
		case "strict":
			w.note("early_terminate.strict", brief(ev), ek.Line, "ignored: asha promotes the best 1/eta of each rung")
		default:
			return nil, &Error{Field: "early_terminate." + ek.Value, Value: brief(ev), Reason: "not a key of W&B's hyperband (type, min_iter, max_iter, s, eta, strict)", Line: ek.Line}
		}
	}
	if t := f["type"]; t == nil || t.Value != "hyperband" {
		return nil, &Error{Field: "early_terminate.type", Value: brief(t), Reason: "W&B's early termination is hyperband, which sfsweep runs as asha", Line: cmpLine(lines["type"], k.Line)}
	}
	whole := func(key string, least int) (int, error) {
		n := f[key]
		v, err := strconv.ParseFloat(n.Value, 64)
		if err != nil || n.Kind != yaml.ScalarNode || v != math.Trunc(v) || v < float64(least) || v > 1e9 {
			return 0, &Error{Field: "early_terminate." + key, Value: brief(n), Reason: fmt.Sprintf("must be a whole number ≥ %d", least), Line: lines[key]}
		}
		return int(v), nil
	}
	eta := DefaultEta // W&B's default too
	if f["eta"] != nil {
		var err error
		if eta, err = whole("eta", 2); err != nil {
			return nil, err
		}
	}
	if w.evalEvery <= 0 {
		return nil, &Error{Field: "early_terminate", Value: "hyperband", Reason: "one W&B iteration is one evaluation, and the base manifest sets no eval_every", Line: k.Line}
	}
	es := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	setKey(es, "rule", quoted(RuleASHA))
	switch {
	case f["max_iter"] != nil: // W&B's controller reads max_iter first
		if f["s"] == nil {
			return nil, &Error{Field: "early_terminate.max_iter", Value: brief(f["max_iter"]), Reason: "W&B's brackets from max_iter need s, their number", Line: lines["max_iter"]}
		}
		if f["min_iter"] != nil {
			w.note("early_terminate.min_iter", brief(f["min_iter"]), lines["min_iter"], "ignored: the brackets come from max_iter and s, as in W&B")
		}
		maxIter, err := whole("max_iter", 1)
		if err != nil {
			return nil, err
		}
		s, err := whole("s", 1)
		if err != nil {
			return nil, err
		}
		rungs := flowSeq()
		var past []int
		for _, b := range wandbBrackets(maxIter, s, eta) {
			if step := b * w.evalEvery; step < w.steps {
				rungs.Content = append(rungs.Content, plain(strconv.Itoa(step)))
			} else {
				past = append(past, b)
			}
		}
		if len(rungs.Content) == 0 {
			return nil, &Error{Field: "early_terminate.max_iter", Value: maxIter, Reason: fmt.Sprintf("its brackets %v (iterations: evaluations every eval_every = %d steps) all lie at or past the base's steps = %d, %d evaluations", wandbBrackets(maxIter, s, eta), w.evalEvery, w.steps, w.steps/w.evalEvery), Line: lines["max_iter"]}
		}
		if len(past) > 0 {
			w.note("early_terminate.max_iter", maxIter, lines["max_iter"], fmt.Sprintf("brackets %v dropped: at or past the base's steps = %d (%d evaluations), which no run reaches", past, w.steps, w.steps/w.evalEvery))
		}
		setKey(es, "rungs", rungs)
		w.from("search.early_stopping", "early_terminate.max_iter", lines["max_iter"])
	case f["min_iter"] != nil:
		minIter, err := whole("min_iter", 1)
		if err != nil {
			return nil, err
		}
		if minIter*w.evalEvery >= w.steps {
			return nil, &Error{Field: "early_terminate.min_iter", Value: minIter, Reason: fmt.Sprintf("the first bracket, evaluation %d, is step %d: not before the base's steps = %d (%d evaluations of eval_every = %d)", minIter, minIter*w.evalEvery, w.steps, w.steps/w.evalEvery, w.evalEvery), Line: lines["min_iter"]}
		}
		setKey(es, "min_steps", plain(strconv.Itoa(minIter*w.evalEvery)))
		w.from("search.early_stopping", "early_terminate.min_iter", lines["min_iter"])
	default:
		return nil, &Error{Field: "early_terminate", Value: "hyperband", Reason: "give min_iter (the first bracket), or max_iter and s", Line: k.Line}
	}
	setKey(es, "eta", plain(strconv.Itoa(eta)))
	return es, nil
}

// wandbBrackets are W&B's hyperband brackets from max_iter, in iterations: ⌊max_iter/eta^k⌋
// for k = 1..s, those ≥ 1, in increasing order.
func wandbBrackets(maxIter, s, eta int) []int {
	var bs []int
	b := float64(maxIter)
	for range s {
		if b /= float64(eta); b < 1 {
			break
		}
		bs = append(bs, int(b))
	}
	sort.Ints(bs)
	return slices.Compact(bs)
}

func cmpLine(a, b int) int {
	if a > 0 {
		return a
	}
	return b
}

// The sweep's parameters that sfsweep searches, by the names W&B users give them.
var wandbParams = map[string]string{
	"lr": ParamLR, "learning_rate": ParamLR,
	"beta1": ParamBeta1, "beta_1": ParamBeta1, "adam_beta1": ParamBeta1,
	"beta2": ParamBeta2, "beta_2": ParamBeta2, "adam_beta2": ParamBeta2,
	"betas":        ParamBetas,
	"c":            ParamC,
	"weight_decay": ParamWeightDecay, "wd": ParamWeightDecay,
	"warmup_frac": ParamWarmupFrac, "warmup_ratio": ParamWarmupFrac,
	"batch_tokens": ParamBatchTokens,
	"optimizer":    "optimizer", "optim": "optimizer",
	"seed": "seed", "seeds": "seed",
}

// wandbRefused are parameters that look like sfsweep's and are not, with what to give.
var wandbRefused = map[string]string{
	"batch_size":   "batch_size counts sequences, not tokens: give batch_tokens, the tokens of one step (sequences × seq_len), instead",
	"warmup_steps": "give warmup_frac, the warmup as a fraction of the steps, instead",
	"epochs":       "the base manifest sets the length of a run (steps)",
	"steps":        "the base manifest sets the length of a run (steps)",
	"max_steps":    "the base manifest sets the length of a run (steps)",
}

// wandbSearched lists the parameters an import maps, for errors.
const wandbSearched = "sfsweep searches learning_rate (lr), beta1, beta2, betas, c, weight_decay (wd), warmup_frac (warmup_ratio), batch_tokens, optimizer and seed; the base manifest sets the rest"

// wandbParam is one entry of the sweep's parameters: its key, its distribution (given, or
// inferred as W&B infers it) and its fields.
type wandbParam struct {
	key  string // as the sweep writes it
	name string // sfsweep's: ParamLR, ..., "optimizer", "seed"
	line int
	v    *yaml.Node // as written
	dist string
	f    map[string]*yaml.Node
}

func (p *wandbParam) field() string { return "parameters." + p.key }

func (p *wandbParam) err(value any, reason string) error {
	return &Error{Field: p.field(), Value: value, Reason: reason, Line: p.line}
}

// readWandbParam reads the parameter key: v.
func readWandbParam(k, v *yaml.Node) (*wandbParam, error) {
	p := &wandbParam{key: k.Value, line: k.Line, v: v, f: map[string]*yaml.Node{}}
	norm := strings.ReplaceAll(strings.ToLower(k.Value), "-", "_")
	if why, ok := wandbRefused[norm]; ok {
		return nil, p.err(brief(v), why)
	}
	if p.name = wandbParams[norm]; p.name == "" {
		return nil, p.err(brief(v), "no sfsweep equivalent: "+wandbSearched)
	}
	if v.Kind != yaml.MappingNode {
		return nil, p.err(brief(v), "want {value: ...}, {values: [...]} or a distribution")
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		pk, pv := v.Content[i], v.Content[i+1]
		switch pk.Value {
		case "distribution":
			p.dist = pv.Value
		case "value", "values", "min", "max", "q", "mu", "sigma", "a", "b", "probabilities", "parameters":
			p.f[pk.Value] = pv
		default:
			return nil, &Error{Field: p.field() + "." + pk.Value, Value: brief(pv), Reason: "not a key of a W&B parameter (distribution, value, values, min, max, q, mu, sigma, a, b, probabilities, parameters)", Line: pk.Line}
		}
	}
	if p.dist != "" {
		return p, nil
	}
	switch { // as W&B infers a distribution not given
	case p.f["parameters"] != nil:
		p.dist = "nested"
	case p.f["values"] != nil && p.f["probabilities"] != nil:
		p.dist = "categorical_w_probabilities"
	case p.f["values"] != nil:
		p.dist = "categorical"
	case p.f["value"] != nil:
		p.dist = "constant"
	case p.f["min"] != nil && p.f["max"] != nil && p.f["min"].ShortTag() == "!!int" && p.f["max"].ShortTag() == "!!int":
		p.dist = "int_uniform"
	case p.f["min"] != nil && p.f["max"] != nil:
		p.dist = "uniform"
	default:
		return nil, p.err(brief(v), "want value, values, or min and max (or a distribution)")
	}
	return p, nil
}

// wandbUnsampled are W&B's distributions sfsweep does not sample, with why.
var wandbUnsampled = map[string]string{
	"q_uniform":                   "quantized",
	"q_log_uniform":               "quantized",
	"q_log_uniform_values":        "quantized",
	"q_normal":                    "quantized and unbounded",
	"q_log_normal":                "quantized and unbounded",
	"q_beta":                      "quantized",
	"normal":                      "unbounded",
	"log_normal":                  "unbounded",
	"beta":                        "a beta distribution",
	"categorical_w_probabilities": "a weighted choice",
	"nested":                      "nested parameters",
}

// numeric maps p to a manifest parameter: one value, a list, or a distribution. vanilla
// allows the word for C = 1/(1−β1).
func (w *wandbImport) numeric(p *wandbParam, vanilla bool) (*yaml.Node, error) {
	num := func(n *yaml.Node) (*yaml.Node, error) {
		if n != nil && n.Kind == yaml.ScalarNode && vanilla && strings.EqualFold(n.Value, "vanilla") {
			return plain("vanilla"), nil
		}
		if n == nil || n.Kind != yaml.ScalarNode {
			return nil, p.err(brief(n), "want a number")
		}
		v, err := number(n, vanilla)
		if err != nil {
			return nil, p.err(fmt.Sprintf("%q", n.Value), "want a number")
		}
		return numberNode(v), nil
	}
	dist := func(kind string, lo, hi float64) *yaml.Node {
		m := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		setKey(m, "distribution", quoted(kind))
		setKey(m, "min", numberNode(lo))
		setKey(m, "max", numberNode(hi))
		return m
	}
	switch p.dist {
	case "constant":
		return num(p.f["value"])
	case "categorical":
		vs, err := p.values()
		if err != nil {
			return nil, err
		}
		seq := flowSeq()
		for _, n := range vs {
			v, err := num(n)
			if err != nil {
				return nil, err
			}
			seq.Content = append(seq.Content, v)
		}
		return seq, nil
	case "int_uniform":
		lo, hi, err := p.bounds()
		if err != nil {
			return nil, err
		}
		if lo != math.Trunc(lo) || hi != math.Trunc(hi) {
			return nil, p.err(fmt.Sprintf("[%g, %g]", lo, hi), "int_uniform takes whole numbers min and max")
		}
		if w.method != MethodGrid {
			return dist(IntUniform, lo, hi), nil
		}
		if hi < lo || hi-lo >= DefaultMaxTrials {
			return nil, p.err(fmt.Sprintf("[%g, %g]", lo, hi), fmt.Sprintf("a grid lists every whole number of int_uniform, as W&B's does: want min ≤ max and at most %d of them", DefaultMaxTrials))
		}
		seq := flowSeq()
		for v := lo; v <= hi; v++ {
			seq.Content = append(seq.Content, numberNode(v))
		}
		return seq, nil
	case "uniform", "log_uniform_values", "log_uniform", "inv_log_uniform_values", "inv_log_uniform":
		if w.method == MethodGrid {
			return nil, p.err(fmt.Sprintf("{distribution: %s}", p.dist), "a grid takes value, values or int_uniform, as W&B's does: give values, or method random or bayes")
		}
		lo, hi, err := p.bounds()
		if err != nil {
			return nil, err
		}
		switch p.dist {
		case "uniform":
			return dist(Uniform, lo, hi), nil
		case "log_uniform": // min and max are natural logs
			return dist(LogUniform, math.Exp(lo), math.Exp(hi)), nil
		case "inv_log_uniform": // log(1/X) uniform in [min, max]: log X uniform in [−max, −min]
			return dist(LogUniform, math.Exp(-hi), math.Exp(-lo)), nil
		}
		// log_uniform_values; inv_log_uniform_values: log(1/X) uniform in
		// [log(1/max), log(1/min)], so log X is uniform in [log min, log max]
		return dist(LogUniform, lo, hi), nil
	}
	if why, ok := wandbUnsampled[p.dist]; ok {
		return nil, p.err(fmt.Sprintf("{distribution: %s}", p.dist), why+": sfsweep samples log_uniform, uniform, int_uniform and choice (a list of values), bounded and unquantized; list the values, or give bounds with uniform or log_uniform_values")
	}
	return nil, p.err(fmt.Sprintf("{distribution: %q}", p.dist), "not a W&B distribution")
}

// bounds are p's min and max.
func (p *wandbParam) bounds() (lo, hi float64, err error) {
	for i, k := range []string{"min", "max"} {
		n := p.f[k]
		if n == nil {
			return 0, 0, p.err(fmt.Sprintf("{distribution: %s}", p.dist), p.dist+" needs min and max")
		}
		v, e := number(n, false)
		if e != nil {
			return 0, 0, &Error{Field: p.field() + "." + k, Value: brief(n), Reason: "want a number", Line: n.Line}
		}
		if i == 0 {
			lo = v
		} else {
			hi = v
		}
	}
	return lo, hi, nil
}

// values are the items of p's values, a list.
func (p *wandbParam) values() ([]*yaml.Node, error) {
	vs := p.f["values"]
	if vs == nil || vs.Kind != yaml.SequenceNode || len(vs.Content) == 0 {
		return nil, p.err(brief(vs), "values: want a list of one or more")
	}
	return vs.Content, nil
}

// choices are the nodes of a value or values parameter (optimizer, seed, betas).
func (p *wandbParam) choices(what string) ([]*yaml.Node, error) {
	switch p.dist {
	case "constant":
		return []*yaml.Node{p.f["value"]}, nil
	case "categorical":
		return p.values()
	}
	return nil, p.err(fmt.Sprintf("{distribution: %s}", p.dist), what+": give value or values")
}

// betas maps a parameter of (β1, β2) pairs.
func (w *wandbImport) betas(p *wandbParam) (*yaml.Node, error) {
	pairs, err := p.choices("betas are [beta1, beta2] pairs (or give beta1 and beta2 apart, which may be distributions)")
	if err != nil {
		return nil, err
	}
	seq := flowSeq()
	for _, n := range pairs {
		if n.Kind != yaml.SequenceNode || len(n.Content) != 2 {
			return nil, p.err(brief(n), "want [beta1, beta2] pairs")
		}
		pair := flowSeq()
		for _, b := range n.Content {
			v, err := number(b, false)
			if err != nil {
				return nil, p.err(brief(n), "want [beta1, beta2] pairs of numbers")
			}
			pair.Content = append(pair.Content, numberNode(v))
		}
		seq.Content = append(seq.Content, pair)
	}
	return seq, nil
}

// optimizers are the names of a parameter optimizer: sfadamw or adamw.
func (w *wandbImport) optimizers(p *wandbParam) ([]string, error) {
	ns, err := p.choices("the optimizer is a choice")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, n := range ns {
		name := strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(n.Value))
		if n.Kind != yaml.ScalarNode || (name != training.SFAdamW && name != training.AdamW) {
			return nil, p.err(brief(n), "sfsweep trains sfadamw (Schedule-Free AdamW) and adamw")
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names, nil
}

// seeds are the seeds of a parameter seed: whole numbers ≥ 0.
func (w *wandbImport) seeds(p *wandbParam) (*yaml.Node, error) {
	ns, err := p.choices("seeds are listed")
	if err != nil {
		return nil, err
	}
	seq := flowSeq()
	for _, n := range ns {
		v, err := number(n, false)
		if err != nil || v != math.Trunc(v) || v < 0 || v > math.MaxInt32 {
			return nil, p.err(brief(n), "a seed is a whole number ≥ 0")
		}
		seq.Content = append(seq.Content, numberNode(v))
	}
	if len(ns) > 1 && w.method != MethodGrid {
		w.note(p.field(), brief(p.f["values"]), p.line, "W&B samples one seed a run; sfsweep trains every configuration on each seed and ranks it by their mean")
	}
	return seq, nil
}

// parameters puts the sweep's parameters into out: the shared ones (batch_tokens,
// warmup_frac, seeds) at the top, the others in each optimizer grid.
func (w *wandbImport) parameters(out, k, v, baseGrids *yaml.Node) error {
	type gridParam struct {
		p    *wandbParam
		node *yaml.Node
	}
	var grid []gridParam
	var names []string
	var optimizer *wandbParam
	seen := map[string]*wandbParam{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		p, err := readWandbParam(v.Content[i], v.Content[i+1])
		if err != nil {
			return err
		}
		if q := seen[p.name]; q != nil {
			return p.err(brief(p.v), fmt.Sprintf("the same parameter as %s (line %d)", q.field(), q.line))
		}
		seen[p.name] = p
		var node *yaml.Node
		switch p.name {
		case "optimizer":
			if names, err = w.optimizers(p); err != nil {
				return err
			}
			optimizer = p
			continue
		case "seed":
			node, err = w.seeds(p)
			setKey(out, "seeds", node)
			w.from("seeds", p.field(), p.line)
		case ParamBatchTokens, ParamWarmupFrac:
			node, err = w.numeric(p, false)
			setKey(out, p.name, node)
			w.from(p.name, p.field(), p.line)
		case ParamBetas:
			node, err = w.betas(p)
			grid = append(grid, gridParam{p, node})
		default:
			node, err = w.numeric(p, p.name == ParamC)
			grid = append(grid, gridParam{p, node})
		}
		if err != nil {
			return err
		}
	}
	if seen[ParamBetas] != nil && (seen[ParamBeta1] != nil || seen[ParamBeta2] != nil) {
		p := seen[ParamBetas]
		return p.err("[[beta1, beta2], ...]", "give betas as pairs, or beta1 and beta2 apart, not both")
	}
	// the grids: one per optimizer named, the base's of that name as its template; else
	// each of the base's; else one sfadamw grid
	var grids []*yaml.Node
	var bases []*yaml.Node
	if baseGrids != nil && baseGrids.Kind == yaml.SequenceNode {
		bases = baseGrids.Content
	}
	switch {
	case names != nil:
		for _, name := range names {
			g, j := &yaml.Node{Kind: yaml.MappingNode}, -1
			setKey(g, "name", quoted(name))
			for bi, b := range bases {
				if n := lookup(b, "name"); n != nil && n.Value == name {
					g, j = cloneNode(b), bi
					break
				}
			}
			grids, w.baseGrid = append(grids, g), append(w.baseGrid, j)
		}
	case len(bases) > 0:
		for bi, b := range bases {
			grids, w.baseGrid = append(grids, cloneNode(b)), append(w.baseGrid, bi)
		}
	default:
		g := &yaml.Node{Kind: yaml.MappingNode}
		setKey(g, "name", quoted(training.SFAdamW))
		grids, w.baseGrid = append(grids, g), append(w.baseGrid, -1)
	}
	sfadamw := false
	for gi, g := range grids {
		gname := ""
		if n := lookup(g, "name"); n != nil {
			gname = n.Value
		}
		sfadamw = sfadamw || gname == training.SFAdamW
		if optimizer != nil {
			w.from(fmt.Sprintf("optimizers[%d].name", gi), optimizer.field(), optimizer.line)
		}
		for _, gp := range grid {
			if gp.p.name == ParamC && gname != training.SFAdamW {
				continue // C is refined SF-AdamW's
			}
			switch gp.p.name {
			case ParamBetas:
				delKey(g, ParamBeta1)
				delKey(g, ParamBeta2)
			case ParamBeta1, ParamBeta2:
				delKey(g, ParamBetas)
			}
			setKey(g, gp.p.name, cloneNode(gp.node))
			w.from(fmt.Sprintf("optimizers[%d].%s", gi, gp.p.name), gp.p.field(), gp.p.line)
			if gp.p.name == ParamBeta1 || gp.p.name == ParamBeta2 {
				w.from(fmt.Sprintf("optimizers[%d].%s", gi, ParamBetas), gp.p.field(), gp.p.line)
			}
		}
		missing := ""
		switch {
		case lookup(g, ParamLR) == nil:
			missing = "learning_rate"
		case lookup(g, ParamBetas) == nil && lookup(g, ParamBeta1) == nil:
			missing = "beta1"
		case lookup(g, ParamBetas) == nil && lookup(g, ParamBeta2) == nil:
			missing = "beta2"
		}
		if missing != "" {
			return &Error{Field: "parameters." + missing, Value: "not given", Reason: fmt.Sprintf("the %s grid needs it: give it here, or in an optimizer grid of the base manifest (sfsweep needs lr, and beta1 and beta2 or betas)", gname), Line: k.Line}
		}
	}
	if p := seen[ParamC]; p != nil && !sfadamw {
		return p.err(brief(p.v), "C is refined SF-AdamW's, and the sweep trains no sfadamw")
	}
	setKey(out, "optimizers", &yaml.Node{Kind: yaml.SequenceNode, Content: grids})
	w.origins = append(w.origins, origin{field: "optimizers", key: "parameters", line: k.Line, exact: true})
	return nil
}

// explain maps an error of the imported manifest to the key of the sweep it comes from,
// or else to the base manifest's field.
func (w *wandbImport) explain(err error, base *yaml.Node) error {
	var e *Error
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
		return &Error{Field: best.key, Value: e.Value, Reason: e.Reason, Line: best.line}
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
	return &BaseError{&Error{Field: field, Value: e.Value, Reason: e.Reason, Line: lineOf(doc, field)}}
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

// ---- YAML nodes

func plain(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }

// str is a string scalar, quoted where it would read as something else.
func quoted(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// number64 is v written so that it reads back as the same float64.
func numberNode(v float64) *yaml.Node { return plain(strconv.FormatFloat(v, 'g', -1, 64)) }

func flowSeq() *yaml.Node { return &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle} }

// get is the value of key in mapping m, or nil.
func lookup(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// set puts key: v in mapping m: in place of the key's value, without the comments that
// described the old one, or else at the end.
func setKey(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; k.Value == key {
			k.HeadComment, k.LineComment, k.FootComment = "", "", ""
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, quoted(key), v)
}

// del removes key from mapping m.
func delKey(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = slices.Delete(m.Content, i, i+2)
			return
		}
	}
}

// clone is a deep copy of n.
func cloneNode(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, x := range n.Content {
		c.Content[i] = cloneNode(x)
	}
	return &c
}
