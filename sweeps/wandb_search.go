package sweeps

// The search block of a W&B import: the sweep's method, metric, budget (run_cap) and
// early_terminate (Hyperband) as sfsweep's method, metric, trials and early stopping.

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/sfsweep/sfsweep/fielderr"
)

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
			return nil, &fielderr.Error{Field: "run_cap", Value: brief(rk[1]), Reason: "must be a whole number ≥ 1", Line: rk[0].Line}
		}
		if w.method == MethodGrid { // the grids hold the points run_cap lets run
			delKey(s, "trials")
			if seeds > 1 {
				w.note("run_cap", n, rk[0].Line, fmt.Sprintf("sfsweep trains each configuration on every seed (%d)", seeds))
			}
			break
		}
		setKey(s, "trials", plain(strconv.Itoa(n)))
		w.from("search.trials", "run_cap", rk[0].Line)
		if grids*seeds > 1 {
			w.note("run_cap", n, rk[0].Line, fmt.Sprintf("search.trials = %d configurations of each optimizer grid (%d), each trained on every seed (%d): up to %d trials, where W&B runs %d", n, grids, seeds, n*grids*seeds, n))
		}
	case w.method != MethodGrid:
		return nil, &fielderr.Error{Field: "run_cap", Value: "not given", Reason: fmt.Sprintf("a %s search needs a budget: give run_cap, the configurations to try (W&B would run until stopped)", keys["method"][1].Value), Line: mline}
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
	if _, err := w.hyperband(keys, s); err != nil {
		return nil, err
	}
	return s, nil
}

// hyperband sets the sweep's early_terminate as search's early_stopping, or deletes it
// if the sweep has none or the import leaves it out; es is what it set, nil if nothing.
func (w *wandbImport) hyperband(keys map[string][2]*yaml.Node, search *yaml.Node) (es *yaml.Node, err error) {
	delKey(search, "early_stopping")
	ek, ok := keys["early_terminate"]
	if !ok {
		return nil, nil
	}
	w.etLine = ek[0].Line
	if es, err = w.earlyStopping(ek[0], ek[1]); err != nil || es == nil {
		return nil, err
	}
	setKey(search, "early_stopping", es)
	return es, nil
}

// wandbMetricSpec is the sweep's metric: its name and goal, with their lines.
type wandbMetricSpec struct {
	name, goal         string
	nameLine, goalLine int
}

// readMetric reads the sweep's metric block, noting the keys sfsweep ignores.
func (w *wandbImport) readMetric(k, v *yaml.Node) (wandbMetricSpec, error) {
	m := wandbMetricSpec{nameLine: k.Line, goal: "minimize", goalLine: k.Line}
	if v.Kind != yaml.MappingNode {
		return m, &fielderr.Error{Field: "metric", Value: brief(v), Reason: "want {name: ..., goal: minimize}", Line: k.Line}
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		mk, mv := v.Content[i], v.Content[i+1]
		switch mk.Value {
		case "name":
			m.name, m.nameLine = mv.Value, mk.Line
		case "goal":
			m.goal, m.goalLine = mv.Value, mk.Line
		case "target", "impute", "impute_while_running":
			w.note("metric."+mk.Value, brief(mv), mk.Line, "ignored: sfsweep runs the whole budget and counts failed trials as failed")
		default:
			return m, &fielderr.Error{Field: "metric." + mk.Value, Value: brief(mv), Reason: "not a key of a W&B metric (name, goal, target)", Line: mk.Line}
		}
	}
	return m, nil
}

// metric maps the sweep's metric to one of sfsweep's, which are losses.
func (w *wandbImport) metric(k, v *yaml.Node) (string, error) {
	spec, err := w.readMetric(k, v)
	if err != nil {
		return "", err
	}
	m, ppl := wandbMetric(spec.name)
	if m == "" {
		return "", &fielderr.Error{Field: "metric.name", Value: fmt.Sprintf("%q", spec.name), Reason: "sfsweep ranks by val_loss (the validation loss or perplexity: val_loss, valid_loss, eval_loss, loss/val, val_ppl, perplexity, ...), test_loss or test_ppl", Line: spec.nameLine}
	}
	if ppl {
		w.note("metric.name", fmt.Sprintf("%q", spec.name), spec.nameLine, "ranked by val_loss: a perplexity is e^loss, so the two rank configurations alike")
	}
	if spec.goal != "minimize" {
		return "", &fielderr.Error{Field: "metric.goal", Value: fmt.Sprintf("%q", spec.goal), Reason: "sfsweep's metrics are losses (val_loss, test_loss, test_ppl): the goal is minimize", Line: spec.goalLine}
	}
	w.from("search.metric", "metric.name", spec.nameLine)
	return m, nil
}

// wandbMetric is sfsweep's metric for a W&B metric name ("val_loss", "eval/loss",
// "epoch/val_ppl", "test_perplexity"), or "" if it has none. The name's words, split at
// anything but letters and digits, must be a quantity (loss or perplexity) with a split
// (validation or test) and words that only say when or how it was taken (epoch, final,
// mean): "loss" alone is most often the training loss. A perplexity alone is the
// validation's, and a validation perplexity ranks as val_loss (perplexity is e^loss, so
// the two rank alike); ppl says so.
func wandbMetric(name string) (metric string, ppl bool) {
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
		case "ppl", "perplexity", "perp":
			q = "ppl"
		case "epoch", "final", "best", "avg", "average", "mean", "total", "overall", "min", "lm":
			continue
		default:
			return "", false
		}
		if (s != "" && split != "" && s != split) || (q != "" && quantity != "" && q != quantity) {
			return "", false
		}
		split, quantity = cmpOr(s, split), cmpOr(q, quantity)
	}
	if split == "" && quantity == "ppl" {
		split = "val"
	}
	switch split + "_" + quantity {
	case "val_loss":
		return MetricValLoss, false
	case "val_ppl":
		return MetricValLoss, true
	case "test_loss":
		return MetricTestLoss, false
	case "test_ppl":
		return MetricTestPPL, false
	}
	return "", false
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// earlyStopping maps W&B's hyperband onto the hyperband rule with W&B's meaning. One W&B
// iteration is one logged value of the metric: one evaluation, every eval_every steps of
// the base. W&B's "brackets" (min_iter·eta^k, or max_iter/eta^k for k = 1..s) are the
// steps where it judges every run: the rungs of a single bracket that starts every
// configuration at the first of them, brackets: 1 (W&B's s counts those rungs, not
// Hyperband's brackets).
func (w *wandbImport) earlyStopping(k, v *yaml.Node) (*yaml.Node, error) {
	if v.Kind != yaml.MappingNode {
		return nil, &fielderr.Error{Field: "early_terminate", Value: brief(v), Reason: "want {type: hyperband, min_iter: ...} or {type: hyperband, max_iter: ..., s: ...}", Line: k.Line}
	}
	f := map[string]*yaml.Node{}
	lines := map[string]int{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		ek, ev := v.Content[i], v.Content[i+1]
		switch ek.Value {
		case "type", "min_iter", "max_iter", "s", "eta":
			f[ek.Value], lines[ek.Value] = ev, ek.Line
		case "strict":
			w.note("early_terminate.strict", brief(ev), ek.Line, "ignored: hyperband promotes the best 1/eta of each rung")
		default:
			return nil, &fielderr.Error{Field: "early_terminate." + ek.Value, Value: brief(ev), Reason: "not a key of W&B's hyperband (type, min_iter, max_iter, s, eta, strict)", Line: ek.Line}
		}
	}
	if t := f["type"]; t == nil || t.Value != "hyperband" {
		return nil, &fielderr.Error{Field: "early_terminate.type", Value: brief(t), Reason: "W&B's early termination is hyperband, which sfsweep runs as its hyperband rule", Line: cmpLine(lines["type"], k.Line)}
	}
	whole := func(key string, least int) (int, error) {
		n := f[key]
		v, err := strconv.ParseFloat(n.Value, 64)
		if err != nil || n.Kind != yaml.ScalarNode || v != math.Trunc(v) || v < float64(least) || v > 1e9 {
			return 0, &fielderr.Error{Field: "early_terminate." + key, Value: brief(n), Reason: fmt.Sprintf("must be a whole number ≥ %d", least), Line: lines[key]}
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
		return nil, &fielderr.Error{Field: "early_terminate", Value: "hyperband", Reason: "one W&B iteration is one evaluation, and the base manifest sets no eval_every", Line: k.Line}
	}
	es := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	setKey(es, "rule", quoted(RuleHyperband))
	switch {
	case f["max_iter"] != nil: // W&B's controller reads max_iter first
		if f["s"] == nil {
			return nil, &fielderr.Error{Field: "early_terminate.max_iter", Value: brief(f["max_iter"]), Reason: "W&B's brackets from max_iter need s, their number", Line: lines["max_iter"]}
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
		if len(rungs.Content) == 0 && w.program {
			w.note("early_terminate.max_iter", maxIter, lines["max_iter"], w.pastTheEnd(fmt.Sprintf("its brackets %v", wandbBrackets(maxIter, s, eta))))
			return nil, nil
		}
		if len(rungs.Content) == 0 {
			return nil, &fielderr.Error{Field: "early_terminate.max_iter", Value: maxIter, Reason: fmt.Sprintf("its brackets %v (iterations: evaluations every eval_every = %d steps) all lie at or past the base's steps = %d, %d evaluations", wandbBrackets(maxIter, s, eta), w.evalEvery, w.steps, w.steps/w.evalEvery), Line: lines["max_iter"]}
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
		if minIter*w.evalEvery >= w.steps && w.program {
			w.note("early_terminate.min_iter", minIter, lines["min_iter"], w.pastTheEnd(fmt.Sprintf("its first bracket, %d", minIter)))
			return nil, nil
		}
		if minIter*w.evalEvery >= w.steps {
			return nil, &fielderr.Error{Field: "early_terminate.min_iter", Value: minIter, Reason: fmt.Sprintf("the first bracket, evaluation %d, is step %d: not before the base's steps = %d (%d evaluations of eval_every = %d)", minIter, minIter*w.evalEvery, w.steps, w.steps/w.evalEvery, w.evalEvery), Line: lines["min_iter"]}
		}
		setKey(es, "min_steps", plain(strconv.Itoa(minIter*w.evalEvery)))
		w.from("search.early_stopping", "early_terminate.min_iter", lines["min_iter"])
	default:
		return nil, &fielderr.Error{Field: "early_terminate", Value: "hyperband", Reason: "give min_iter (the first bracket), or max_iter and s", Line: k.Line}
	}
	setKey(es, "eta", plain(strconv.Itoa(eta)))
	setKey(es, "brackets", plain("1"))
	return es, nil
}

// finishBest keeps the best configuration of m's halving training to the end, as W&B's
// hyperband does: W&B stops a run only when it is worse than the bracket's threshold,
// the value of rank ⌊n/eta⌋ among the n runs there, so the best always goes on. Halving
// promotes ⌊n/eta⌋ of a rung's n, none of fewer than eta: with configs configurations,
// k rungs before the end let one finish only if eta^k ≤ configs. finishBest keeps the
// first so many rungs in out, and notes it, or drops early stopping if even the first
// would stop them all; it reports whether it changed out.
func (w *wandbImport) finishBest(m *Manifest, out *yaml.Node) bool {
	if m.Search == nil || m.Search.EarlyStopping == nil || m.Search.EarlyStopping.Rule != RuleHyperband || m.Brackets() != 1 {
		return false
	}
	plan, err := m.Plan()
	if err != nil {
		return false
	}
	configs := 0
	for _, n := range plan.Configs {
		configs += n
	}
	rungs := m.Rungs()
	return w.keepFinishing(lookup(out, "search"), rungs[:len(rungs)-1], configs, m.Eta())
}

// keepFinishing keeps the first of rungs (those before the end) that let one of configs
// configurations reach the end under halving by eta, in search's early_stopping, or drops
// early stopping; it reports whether it changed search.
func (w *wandbImport) keepFinishing(search *yaml.Node, rungs []int, configs, eta int) bool {
	keep := 0
	for p := eta; keep < len(rungs) && p <= configs; p *= eta {
		keep++
	}
	if keep == len(rungs) {
		return false
	}
	if keep == 0 {
		delKey(search, "early_stopping")
		w.note("early_terminate", "hyperband", w.etLine, fmt.Sprintf("dropped: %d configurations are fewer than eta = %d, and halving would stop them all at the first bracket, where W&B's hyperband lets the best go on; every configuration trains to the end", configs, eta))
		return true
	}
	es := lookup(search, "early_stopping")
	delKey(es, "min_steps")
	seq := flowSeq()
	for _, r := range rungs[:keep] {
		seq.Content = append(seq.Content, plain(strconv.Itoa(r)))
	}
	setKey(es, "rungs", seq)
	w.note("early_terminate", "hyperband", w.etLine, fmt.Sprintf("rungs %v of %v kept: halving keeps ⌊n/eta⌋ of a rung's n, and %d configurations with eta = %d let one reach the end past at most %d rungs; W&B's hyperband always lets its best run finish", rungs[:keep], rungs, configs, eta, keep))
	return true
}

// pastTheEnd notes hyperband brackets that a program's run never reaches: W&B's
// hyperband stops no run there either.
func (w *wandbImport) pastTheEnd(brackets string) string {
	return fmt.Sprintf("early stopping left out: %s (iterations: metrics lines, one every eval_every = %d steps) lies at or past the base's steps = %d, which no run reaches, so W&B's hyperband would stop none; give a base whose steps and eval_every are the program's to keep it", brackets, w.evalEvery, w.steps)
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
