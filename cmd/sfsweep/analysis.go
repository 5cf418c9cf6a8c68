package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/sfsweep/sfsweep/analysis"
	"github.com/sfsweep/sfsweep/fielderr"
)

// The analysis commands reproduce the paper's analytical figures (package analysis): each
// writes its data (JSON or CSV) and its plots (PNG, SVG and PDF) into an output folder and prints
// one line per file written, or a JSON summary with -json.

// Default settings of the figures that the analysis package does not fix.
var (
	defaultWeightBetas  = []float64{0.1, 0.5, 0.9, 0.95} // fig:weights_histogram
	defaultRefinedBetas = []float64{0.1, 0.5, 0.9}       // fig:modified_weights_histogram(_T5000)
	defaultRefinedCs    = []float64{5, 20, 50}
	defaultWeightsT     = 1000
	defaultWeightsTLong = 5000 // fig:modified_weights_histogram_T5000
	defaultWeightBins   = 50
)

// floatList is a flag holding a comma-separated list of numbers, each checked by check.
type floatList struct {
	vals  []float64
	check func(float64) error
}

func (l *floatList) String() string {
	if l == nil {
		return ""
	}
	parts := make([]string, len(l.vals))
	for i, v := range l.vals {
		parts[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

// Set parses the list; the flag package reports an error with the flag's name and value.
func (l *floatList) Set(s string) error {
	var vals []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", f)
		}
		if err := l.check(v); err != nil {
			return err
		}
		vals = append(vals, v)
	}
	l.vals = vals
	return nil
}

func checkMomentum(v float64) error {
	if !(v >= 0 && v < 1) {
		return fmt.Errorf("%v outside the valid range [0, 1)", v)
	}
	return nil
}

func checkPositiveFinite(v float64) error {
	if !(v > 0) || math.IsInf(v, 0) {
		return fmt.Errorf("%v outside the valid range (0, ∞)", v)
	}
	return nil
}

// flagOfField maps the fields of *fielderr.Error to the flags that set them.
var flagOfField = map[string]string{
	"lr": "lr", "beta1": "beta1", "beta2": "beta2", "eps": "eps", "weight_decay": "wd",
	"warmup_steps": "warmup", "c": "c", "steps": "steps", "window": "window", "T": "T",
}

// asFlagError turns a configuration error into a usage error naming the flag, its value
// and the valid range; other errors pass through.
func asFlagError(err error) error {
	var ce *fielderr.Error
	if errors.As(err, &ce) {
		return flagError(flagOfField, ce.Field, ce.Value, ce.Reason, err)
	}
	return err
}

// flagError is a usage error naming the flag that sets field (names maps fields to
// flags), its value and reason; err where no flag sets the field.
func flagError(names map[string]string, field string, value any, reason string, err error) error {
	if name, ok := names[field]; ok {
		return &usageError{msg: fmt.Sprintf("invalid value %v for flag -%s: %s", value, name, reason)}
	}
	return err
}

// optimizerFlags are the SF-AdamW hyperparameters of the toy runs.
type optimizerFlags struct {
	beta2, lr, wd, c, eps float64
	steps, warmup         int
}

func (o *optimizerFlags) register(fs *flag.FlagSet, steps int) {
	d := analysis.DefaultToyConfig(0.9)
	fs.Float64Var(&o.beta2, "beta2", d.Beta2, "second-moment decay β2 in [0, 1)")
	fs.Float64Var(&o.lr, "lr", d.LR, "learning rate γ > 0")
	fs.IntVar(&o.steps, "steps", steps, "number of steps ≥ 1")
	fs.IntVar(&o.warmup, "warmup", 0, "linear warmup steps ≥ 0 (0: none)")
	fs.Float64Var(&o.wd, "wd", 0, "weight decay λ ≥ 0")
	fs.Float64Var(&o.c, "c", 0, "refined SF decoupling parameter C > 0 (0: vanilla)")
	fs.Float64Var(&o.eps, "eps", d.Eps, "ε > 0")
}

func (o *optimizerFlags) config(beta1 float64) analysis.ToyConfig {
	c := analysis.DefaultToyConfig(beta1)
	c.Beta2, c.LR, c.Steps, c.WarmupSteps, c.WeightDecay, c.C, c.Eps = o.beta2, o.lr, o.steps, o.warmup, o.wd, o.c, o.eps
	return c
}

func runToyCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("toy", stderr)
	betas := &floatList{vals: append([]float64(nil), analysis.DefaultToyBeta1s...), check: checkMomentum}
	fs.Var(betas, "beta1", "comma-separated momenta β1, each in [0, 1)")
	var opt optimizerFlags
	opt.register(fs, analysis.DefaultToySteps)
	var out outputFlags
	out.register(fs, "out/toy")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := out.validate(); err != nil {
		return err
	}
	cfgs := make([]analysis.ToyConfig, len(betas.vals))
	for i, b := range betas.vals {
		cfgs[i] = opt.config(b)
		if err := cfgs[i].Validate(); err != nil {
			return asFlagError(err)
		}
	}
	a, err := newArtifacts(out.out, out.json, stdout, stderr)
	if err != nil {
		return err
	}
	sum, err := produceToy(ctx, a, out.format, cfgs)
	if err != nil {
		return err
	}
	return a.summary("toy", sum)
}

// produceToy runs the toy configurations and writes their trajectories, fig:river-valley and fig:toy_model.
func produceToy(ctx context.Context, a *artifacts, format string, cfgs []analysis.ToyConfig) ([]analysis.ToySummary, error) {
	runs := make([]*analysis.ToyRun, 0, len(cfgs))
	sums := make([]analysis.ToySummary, 0, len(cfgs))
	for _, cfg := range cfgs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		run, err := analysis.RunToy(cfg)
		if err != nil {
			return nil, err
		}
		if run.DivergedAt > 0 {
			fmt.Fprintf(a.stderr, "toy β1=%g lr=%g: diverged at step %d; its %d finite steps are recorded\n",
				cfg.Beta1, cfg.LR, run.DivergedAt, len(run.Steps))
		}
		if err := writeRun(a, fmt.Sprintf("toy_beta1_%g", cfg.Beta1), format, run.WriteJSON, run.WriteCSV); err != nil {
			return nil, err
		}
		runs = append(runs, run)
		sums = append(sums, run.Summary())
	}
	f, err := analysis.RiverValleyFigure(analysis.DefaultToyRegion)
	if err := a.figure("river_valley", f, err); err != nil {
		return nil, err
	}
	f, err = analysis.ToyFigure(runs, analysis.DefaultToyRegion)
	if err := a.figure("toy_model", f, err); err != nil {
		return nil, err
	}
	return sums, nil
}

func runWeightsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("weights", stderr)
	betas := &floatList{vals: append([]float64(nil), defaultWeightBetas...), check: checkMomentum}
	fs.Var(betas, "beta", "comma-separated momenta β, each in [0, 1)")
	cs := &floatList{vals: append([]float64(nil), defaultRefinedCs...), check: checkPositiveFinite}
	fs.Var(cs, "c", "comma-separated decoupling parameters C > 0 of the refined method")
	T := fs.Int("T", defaultWeightsT, "number of steps T ≥ 1")
	bins := fs.Int("bins", defaultWeightBins, "histogram bins ≥ 1")
	var out outputFlags
	out.register(fs, "out/weights")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := out.validate(); err != nil {
		return err
	}
	if *T < 1 {
		return &usageError{msg: fmt.Sprintf("invalid value %d for flag -T: must be ≥ 1", *T)}
	}
	if *bins < 1 {
		return &usageError{msg: fmt.Sprintf("invalid value %d for flag -bins: must be ≥ 1", *bins)}
	}
	a, err := newArtifacts(out.out, out.json, stdout, stderr)
	if err != nil {
		return err
	}
	sum, err := produceWeights(ctx, a, out.format, betas.vals, betas.vals, cs.vals, []int{*T}, *bins)
	if err != nil {
		return err
	}
	return a.summary("weights", sum)
}

// weightsSummary is one weight set without its long vectors.
type weightsSummary struct {
	Kind string  `json:"kind"`
	Beta float64 `json:"beta"`
	C    float64 `json:"c"`
	T    int     `json:"T"`
	TV   float64 `json:"tv"`
}

// produceWeights computes vanilla weights for vanillaBetas at the first T and refined weights
// for refinedBetas × cs at every T, and writes the data and one histogram figure per group
// (at most T bins).
func produceWeights(ctx context.Context, a *artifacts, format string, vanillaBetas, refinedBetas, cs []float64, Ts []int, bins int) ([]weightsSummary, error) {
	var all []analysis.WeightSet
	var vanilla []analysis.WeightSet
	for _, b := range vanillaBetas {
		s, err := analysis.VanillaWeights(Ts[0], b)
		if err != nil {
			return nil, err
		}
		vanilla = append(vanilla, s)
	}
	all = append(all, vanilla...)
	refined := make([][]analysis.WeightSet, len(Ts))
	for i, T := range Ts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for _, b := range refinedBetas {
			for _, c := range cs {
				s, err := analysis.RefinedWeights(T, b, c)
				if err != nil {
					return nil, err
				}
				refined[i] = append(refined[i], s)
			}
		}
		all = append(all, refined[i]...)
	}
	write := func(w io.Writer) error { return analysis.WriteWeightsJSON(w, all) }
	if format == "csv" {
		write = func(w io.Writer) error { return analysis.WriteWeightsCSV(w, all) }
	}
	if err := a.data("weights."+format, write); err != nil {
		return nil, err
	}
	if len(vanilla) > 0 {
		f, err := analysis.WeightsFigure(vanilla, min(2, len(vanilla)), min(bins, Ts[0]))
		if err := a.figure("weights_vanilla", f, err); err != nil {
			return nil, err
		}
	}
	for i, T := range Ts {
		if len(refined[i]) == 0 {
			continue
		}
		f, err := analysis.WeightsFigure(refined[i], max(1, len(cs)), min(bins, T))
		if err := a.figure(fmt.Sprintf("weights_refined_T%d", T), f, err); err != nil {
			return nil, err
		}
	}
	sums := make([]weightsSummary, len(all))
	for i, s := range all {
		sums[i] = weightsSummary{s.Kind, s.Beta, s.C, s.T, s.TV}
	}
	return sums, nil
}

func runEoSCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("eos", stderr)
	d := analysis.DefaultEoSConfig()
	beta1 := fs.Float64("beta1", d.Beta1, "momentum β1 in [0, 1)")
	var opt optimizerFlags
	opt.register(fs, d.Steps)
	var out outputFlags
	out.register(fs, "out/eos")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := out.validate(); err != nil {
		return err
	}
	cfg := opt.config(*beta1)
	if err := cfg.Validate(); err != nil {
		return asFlagError(err)
	}
	a, err := newArtifacts(out.out, out.json, stdout, stderr)
	if err != nil {
		return err
	}
	sum, err := produceEoS(ctx, a, out.format, cfg)
	if err != nil {
		return err
	}
	return a.summary("eos", sum)
}

// produceEoS writes the EoS trace of one toy run and its plot (fig:eos, left panel).
func produceEoS(ctx context.Context, a *artifacts, format string, cfg analysis.ToyConfig) (analysis.EoSSummary, error) {
	if err := ctx.Err(); err != nil {
		return analysis.EoSSummary{}, err
	}
	run, err := analysis.EoS(cfg)
	if err != nil {
		return analysis.EoSSummary{}, err
	}
	if err := writeRun(a, "eos", format, run.WriteJSON, run.WriteCSV); err != nil {
		return analysis.EoSSummary{}, err
	}
	f, err := analysis.EoSFigure(run)
	if err := a.figure("eos", f, err); err != nil {
		return analysis.EoSSummary{}, err
	}
	return run.Summary(), nil
}

func runCentralFlowCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("centralflow", stderr)
	d := analysis.DefaultCentralFlowConfig(0.9)
	betas := &floatList{vals: append([]float64(nil), analysis.DefaultToyBeta1s...), check: checkMomentum}
	fs.Var(betas, "beta1", "comma-separated momenta β1, each in [0, 1)")
	beta2 := fs.Float64("beta2", d.Beta2, "decay β2 of ν in [0, 1)")
	lr := fs.Float64("lr", d.LR, "learning rate γ > 0")
	steps := fs.Int("steps", d.Steps, "number of steps ≥ 1")
	window := fs.Int("window", d.Window, "half-width ≥ 1 of the centred moving averages")
	var out outputFlags
	out.register(fs, "out/centralflow")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := out.validate(); err != nil {
		return err
	}
	cfgs := make([]analysis.CentralFlowConfig, len(betas.vals))
	for i, b := range betas.vals {
		c := analysis.DefaultCentralFlowConfig(b)
		c.Beta2, c.LR, c.Steps, c.Window = *beta2, *lr, *steps, *window
		if err := c.Validate(); err != nil {
			return asFlagError(err)
		}
		cfgs[i] = c
	}
	a, err := newArtifacts(out.out, out.json, stdout, stderr)
	if err != nil {
		return err
	}
	sum, err := produceCentralFlow(ctx, a, out.format, cfgs)
	if err != nil {
		return err
	}
	return a.summary("centralflow", sum)
}

// produceCentralFlow writes the central-flow comparison of each configuration and one plot.
func produceCentralFlow(ctx context.Context, a *artifacts, format string, cfgs []analysis.CentralFlowConfig) ([]analysis.CentralFlowSummary, error) {
	var runs []*analysis.CentralFlowRun
	var sums []analysis.CentralFlowSummary
	for _, cfg := range cfgs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		run, err := analysis.CentralFlow(cfg)
		if err != nil {
			return nil, err
		}
		if err := writeRun(a, fmt.Sprintf("centralflow_beta1_%g", cfg.Beta1), format, run.WriteJSON, run.WriteCSV); err != nil {
			return nil, err
		}
		runs = append(runs, run)
		sums = append(sums, run.Summary())
	}
	f, err := analysis.CentralFlowFigure(runs)
	if err := a.figure("centralflow", f, err); err != nil {
		return nil, err
	}
	return sums, nil
}

func runFiguresCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("figures", stderr)
	var out outputFlags
	out.register(fs, "out/figures")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := out.validate(); err != nil {
		return err
	}
	a, err := newArtifacts(out.out, out.json, stdout, stderr)
	if err != nil {
		return err
	}
	var toyCfgs []analysis.ToyConfig
	var cfCfgs []analysis.CentralFlowConfig
	for _, b := range analysis.DefaultToyBeta1s {
		toyCfgs = append(toyCfgs, analysis.DefaultToyConfig(b))
		cfCfgs = append(cfCfgs, analysis.DefaultCentralFlowConfig(b))
	}
	var sum struct {
		Toy         []analysis.ToySummary         `json:"toy"`
		Weights     []weightsSummary              `json:"weights"`
		EoS         analysis.EoSSummary           `json:"eos"`
		CentralFlow []analysis.CentralFlowSummary `json:"centralflow"`
	}
	if sum.Toy, err = produceToy(ctx, a, out.format, toyCfgs); err != nil {
		return err
	}
	if sum.Weights, err = produceWeights(ctx, a, out.format, defaultWeightBetas, defaultRefinedBetas, defaultRefinedCs,
		[]int{defaultWeightsT, defaultWeightsTLong}, defaultWeightBins); err != nil {
		return err
	}
	if sum.EoS, err = produceEoS(ctx, a, out.format, analysis.DefaultEoSConfig()); err != nil {
		return err
	}
	if sum.CentralFlow, err = produceCentralFlow(ctx, a, out.format, cfCfgs); err != nil {
		return err
	}
	return a.summary("figures", sum)
}
