package sweeps

// The search block of a program sweep's import: the sweep's method, its metric as the
// program names it, its budget and its hyperband.

import (
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/sfsweep/sfsweep/fielderr"
)

// programSearch is a program sweep's search block: the base's (its seed, parallel) with
// the sweep's method, metric and goal, its budget, and early stopping that lets the best
// of configs configurations (a grid's points) finish. count is the budget of a sweep
// without run_cap (wandb agent's --count).
func (w *wandbImport) programSearch(keys map[string][2]*yaml.Node, base *yaml.Node, configs, count int) (*yaml.Node, error) {
	s := &yaml.Node{Kind: yaml.MappingNode}
	if base != nil && base.Kind == yaml.MappingNode {
		s = cloneNode(base)
	}
	delKey(s, "iterate") // an iterate of sfsweep's optimizers
	setKey(s, "method", quoted(w.method))
	mline := keys["method"][0].Line
	rk, hasCap := keys["run_cap"]
	if hasCap && (w.runCap < 1 || rk[1].Kind != yaml.ScalarNode) {
		return nil, &fielderr.Error{Field: "run_cap", Value: brief(rk[1]), Reason: "must be a whole number ≥ 1", Line: rk[0].Line}
	}
	trials, points := 0, configs
	switch {
	case w.method == MethodGrid:
		delKey(s, "trials")
		if hasCap && w.runCap < configs {
			trials = w.runCap
			w.note("run_cap", w.runCap, rk[0].Line, fmt.Sprintf("search.trials = %d of the grid's %d points, which early stopping draws at random, where W&B takes the first in its order", w.runCap, configs))
		}
	case hasCap:
		trials = w.runCap
	case count > 0:
		trials = count
		w.note("run_cap", "not given", mline, fmt.Sprintf("search.trials = %d, as given (wandb agent --count)", count))
	case lookup(s, "trials") != nil:
		n, err := strconv.Atoi(lookup(s, "trials").Value)
		if err != nil || n < 1 {
			return nil, &BaseError{&fielderr.Error{Field: "search.trials", Value: lookup(s, "trials").Value, Reason: "must be a whole number ≥ 1"}}
		}
		trials = n
		w.note("run_cap", "not given", mline, fmt.Sprintf("search.trials = %d, the base manifest's", n))
	default:
		return nil, &fielderr.Error{Field: "run_cap", Value: "not given", Reason: fmt.Sprintf("a %s search needs a budget: give run_cap, or -count (as wandb agent --count), the configurations to try (W&B would run until stopped)", keys["method"][1].Value), Line: mline}
	}
	if trials > 0 {
		setKey(s, "trials", plain(strconv.Itoa(trials)))
		w.from("search.trials", "run_cap", keyLine(keys, "run_cap", mline))
		configs = trials
	}
	metric, goal := MetricValLoss, "minimize"
	if mk, ok := keys["metric"]; ok {
		spec, err := w.readMetric(mk[0], mk[1])
		if err != nil {
			return nil, err
		}
		if spec.name == "" {
			return nil, &fielderr.Error{Field: "metric.name", Value: `""`, Reason: "want the name of a metric the program logs", Line: spec.nameLine}
		}
		if spec.goal != "minimize" && spec.goal != "maximize" {
			return nil, &fielderr.Error{Field: "metric.goal", Value: fmt.Sprintf("%q", spec.goal), Reason: "must be minimize or maximize", Line: spec.goalLine}
		}
		metric, goal = spec.name, spec.goal
		w.from("search.metric", "metric.name", spec.nameLine)
	} else {
		w.note("metric", "not given", mline, "ranked by val_loss, which the program's metrics lines give")
	}
	setKey(s, "metric", quoted(metric))
	setKey(s, "goal", quoted(goal))
	es, err := w.hyperband(keys, s)
	if err != nil {
		return nil, err
	}
	if es != nil {
		w.note("early_terminate", "hyperband", w.etLine, fmt.Sprintf("one W&B iteration is one metrics line of the program, taken as one every eval_every = %d steps: the program's metrics lines and checkpoints should come at those steps", w.evalEvery))
		w.keepFinishing(s, esRungs(es, w.steps), configs, esEta(es))
	}
	if w.method == MethodGrid && trials > 0 && lookup(s, "early_stopping") == nil {
		// a grid without early stopping is planned whole
		return nil, &fielderr.Error{Field: "run_cap", Value: w.runCap, Reason: fmt.Sprintf("W&B runs the first %d of the grid's %d points, in its order; a program's grid is one product of its parameters, run whole, which no manifest cuts in W&B's order: drop run_cap, or list fewer values", w.runCap, points), Line: rk[0].Line}
	}
	return s, nil
}

// esRungs are the rungs before the end of es, an early_stopping block the import wrote.
func esRungs(es *yaml.Node, steps int) []int {
	var rungs []int
	if rs := lookup(es, "rungs"); rs != nil {
		for _, r := range rs.Content {
			n, _ := strconv.Atoi(r.Value)
			rungs = append(rungs, n)
		}
		return rungs
	}
	first, _ := strconv.Atoi(lookup(es, "min_steps").Value)
	for r := first; r > 0 && r < steps; r *= esEta(es) {
		rungs = append(rungs, r)
	}
	return rungs
}

// esEta is the eta of es, an early_stopping block the import wrote.
func esEta(es *yaml.Node) int {
	eta, _ := strconv.Atoi(lookup(es, "eta").Value)
	return eta
}
