package sweeps

// The parameters of a W&B import: each of the sweep's parameters (a value, values, or a
// distribution) as a manifest's list or distribution, the optimizers and seeds it names,
// and those sfsweep refuses or cannot sample.

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/training"
)

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
const wandbSearched = "sfsweep searches learning_rate (lr), beta1, beta2, betas, c, weight_decay (wd), warmup_frac (warmup_ratio), batch_tokens, optimizer and seed; the base manifest sets the rest. A sweep of your own program takes any parameter: name its program in the sweep, or give -program"

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
	return &fielderr.Error{Field: p.field(), Value: value, Reason: reason, Line: p.line}
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
	return p, p.read()
}

// read reads the parameter's fields and its distribution, given or inferred.
func (p *wandbParam) read() error {
	v := p.v
	if v.Kind != yaml.MappingNode {
		return p.err(brief(v), "want {value: ...}, {values: [...]} or a distribution")
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		pk, pv := v.Content[i], v.Content[i+1]
		switch pk.Value {
		case "distribution":
			p.dist = pv.Value
		case "value", "values", "min", "max", "q", "mu", "sigma", "a", "b", "probabilities", "parameters":
			p.f[pk.Value] = pv
		default:
			return &fielderr.Error{Field: p.field() + "." + pk.Value, Value: brief(pv), Reason: "not a key of a W&B parameter (distribution, value, values, min, max, q, mu, sigma, a, b, probabilities, parameters)", Line: pk.Line}
		}
	}
	if p.dist != "" {
		return nil
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
		return p.err(brief(v), "want value, values, or min and max (or a distribution)")
	}
	return nil
}

// wandbUnsampled are W&B's distributions sfsweep does not sample, with why.
var wandbUnsampled = map[string]string{
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
		if err := p.only("max", "min"); err != nil {
			return nil, err
		}
		if w.method == MethodGrid {
			return nil, p.err(fmt.Sprintf("{distribution: %s}", p.dist), "a grid takes value, values or int_uniform, as W&B's does: give values, or method random or bayes")
		}
		lo, hi, err := p.bounds()
		if err != nil {
			return nil, err
		}
		if !(lo < hi) {
			return nil, p.err(fmt.Sprintf("[%s, %s]", p.f["min"].Value, p.f["max"].Value), "want min < max")
		}
		if lo <= 0 && (p.dist == "log_uniform_values" || p.dist == "inv_log_uniform_values") {
			return nil, &fielderr.Error{Field: p.field() + ".min", Value: p.f["min"].Value, Reason: p.dist + " takes values > 0: its logarithm is uniform", Line: p.f["min"].Line}
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
	if _, ok := wandbShaped[p.dist]; ok {
		if w.method == MethodGrid {
			return nil, p.err(fmt.Sprintf("{distribution: %s}", p.dist), "a grid takes value, values or int_uniform, as W&B's does: give values, or method random or bayes")
		}
		return p.shaped()
	}
	if why, ok := wandbUnsampled[p.dist]; ok {
		return nil, p.err(fmt.Sprintf("{distribution: %s}", p.dist), why+": sfsweep samples every W&B distribution but weighted choices and nested parameters; list the values")
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
			return 0, 0, &fielderr.Error{Field: p.field() + "." + k, Value: brief(n), Reason: "want a number", Line: n.Line}
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

// wandbValue is a parameter of the sweep and its manifest node.
type wandbValue struct {
	p    *wandbParam
	node *yaml.Node
}

// parameters puts the sweep's parameters into out: the shared ones (batch_tokens,
// warmup_frac, seeds) at the top, the others in each optimizer grid (wandb_grid.go).
func (w *wandbImport) parameters(out, k, v, baseGrids *yaml.Node) error {
	var grid, shared []wandbValue
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
			shared = append(shared, wandbValue{p, node})
		case ParamBetas:
			node, err = w.betas(p)
			grid = append(grid, wandbValue{p, node})
		default:
			node, err = w.numeric(p, p.name == ParamC)
			grid = append(grid, wandbValue{p, node})
		}
		if err != nil {
			return err
		}
	}
	if seen[ParamBetas] != nil && (seen[ParamBeta1] != nil || seen[ParamBeta2] != nil) {
		p := seen[ParamBetas]
		return p.err("[[beta1, beta2], ...]", "give betas as pairs, or beta1 and beta2 apart, not both")
	}
	if p := seen[ParamC]; p != nil && !w.trainsSFAdamW(names, baseGrids) {
		return p.err(brief(p.v), "C is refined SF-AdamW's, and the sweep trains no sfadamw")
	}
	grids, err := w.grids(out, k, grid, shared, names, optimizer, baseGrids)
	if err != nil {
		return err
	}
	setKey(out, "optimizers", &yaml.Node{Kind: yaml.SequenceNode, Content: grids})
	w.origins = append(w.origins, origin{field: "optimizers", key: "parameters", line: k.Line, exact: true})
	return nil
}

// trainsSFAdamW reports whether the grids of the import train sfadamw: the optimizers the
// sweep names, else the base's grids, else the default sfadamw grid.
func (w *wandbImport) trainsSFAdamW(names []string, baseGrids *yaml.Node) bool {
	if names != nil {
		return slices.Contains(names, training.SFAdamW)
	}
	if baseGrids == nil || baseGrids.Kind != yaml.SequenceNode || len(baseGrids.Content) == 0 {
		return true
	}
	for _, b := range baseGrids.Content {
		if n := lookup(b, "name"); n != nil && n.Value == training.SFAdamW {
			return true
		}
	}
	return false
}
