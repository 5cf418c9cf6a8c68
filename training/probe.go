package training

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/internal/probe"
	"github.com/sfsweep/sfsweep/sfadamw"
)

// A probe starts from weights of a run (a checkpoint's iterate), does its own short
// computation on the run's model and data, and reports a result of its own type. Probes
// are functions of their inputs: the same weights, config and data give the same result.

// DecayProbeConfig is the decay probe of the paper's fig:Obs1 (right) and
// fig:Decay_AdamW_betas: AdamW with a learning rate decaying linearly from PeakLR to 0
// over Steps steps, from fresh optimizer state, then an evaluation.
type DecayProbeConfig struct {
	FromStep    int     `json:"from_step"`    // the checkpoint's step: the probe reads the batches of the steps after it
	Iterate     string  `json:"iterate"`      // which iterate the weights are (x, y, w, ...), for the record
	Steps       int     `json:"steps"`        // length of the decay
	PeakLR      float64 `json:"peak_lr"`      // the paper: probe.DefaultDecayPeakLR
	Beta1       float64 `json:"beta1"`        // AdamW's betas; the paper's AdamW: (0.9, 0.95)
	Beta2       float64 `json:"beta2"`        //
	WeightDecay float64 `json:"weight_decay"` // 0.1
	GradClip    float64 `json:"grad_clip"`    // 1.0
	// Shape is the decay's shape: "" for linear (the paper), probe.ShapeSqrt for 1 − sqrt.
	Shape string `json:"shape,omitempty"`
}

// DefaultDecayProbe returns the paper's decay probe from step fromStep: 1e-4 → 0 over
// steps, AdamW (0.9, 0.95), weight decay 0.1, clipping 1.0.
func DefaultDecayProbe(fromStep, steps int, iterate string) DecayProbeConfig {
	return DecayProbeConfig{FromStep: fromStep, Iterate: iterate, Steps: steps, PeakLR: probe.DefaultDecayPeakLR, Beta1: 0.9, Beta2: 0.95, WeightDecay: 0.1, GradClip: 1.0}
}

// DecayProbeFrom is the decay probe d, its defaults filled in (probe.Set.WithDefaults),
// from checkpoint step fromStep: the paper's probe at d's length, peak LR and iterate.
func DecayProbeFrom(fromStep int, d probe.Decay) DecayProbeConfig {
	d = *probe.Set{Decay: &d}.WithDefaults().Decay
	pc := DefaultDecayProbe(fromStep, d.Steps, d.Iterate)
	pc.PeakLR, pc.Shape = d.PeakLR, d.Shape
	return pc
}

// DecayProbeResult is the validation loss before and after the decay.
type DecayProbeResult struct {
	DecayProbeConfig
	Before     float64     `json:"val_before"`
	After      Loss        `json:"val_after"` // NaN (null) if the probe diverged
	EvalSeqs   int         `json:"eval_seqs"`
	DivergedAt int         `json:"diverged_at,omitempty"`
	Curve      []ProbeStep `json:"curve"`
}

// DecayProbe runs the decay probe on weights w of a run of cfg.
func DecayProbe(ctx context.Context, cfg Config, w []float32, data Batches, pc DecayProbeConfig) (*DecayProbeResult, error) {
	if pc.Steps < 1 {
		return nil, &fielderr.Error{Field: "decay_probe.steps", Value: pc.Steps, Reason: "must be ≥ 1"}
	}
	if pc.FromStep < 0 {
		return nil, &fielderr.Error{Field: "decay_probe.from_step", Value: pc.FromStep, Reason: "must be ≥ 0"}
	}
	ac := sfadamw.AdamWConfig{
		Schedule: sfadamw.Schedule{Kind: sfadamw.WSD, Peak: pc.PeakLR, DecayStart: 1, DecaySteps: pc.Steps, DecayShape: pc.Shape},
		Beta1:    pc.Beta1, Beta2: pc.Beta2, Eps: 1e-8, WeightDecay: pc.WeightDecay, GradClip: pc.GradClip,
	}
	// WSD with DecayStart 1 gives γ_t = peak·(1 − (t−1)/Steps): the peak at t = 1, down to
	// peak/Steps at the last step, the discrete linear decay that reaches 0 at Steps+1
	// (with the sqrt shape, γ_t = peak·(1 − sqrt((t−1)/Steps))).
	p, err := newProbe(ctx, cfg, w, data)
	if err != nil {
		return nil, err
	}
	defer p.eng.Close()
	res := &DecayProbeResult{DecayProbeConfig: pc}
	if res.Before, res.EvalSeqs, err = p.valLoss(cfg.EvalSeqs); err != nil {
		return nil, err
	}
	adamw, err := sfadamw.NewAdamW(ac, p.w)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	res.Curve, res.DivergedAt, err = p.train(ctx, &optimizer{adamw: adamw}, ac.Schedule, pc.FromStep, pc.Steps)
	if err != nil {
		return nil, err
	}
	res.After = Loss(math.NaN())
	if res.DivergedAt == 0 {
		after, _, err := p.valLoss(cfg.EvalSeqs)
		if err != nil {
			return nil, err
		}
		res.After = Loss(after)
	}
	return res, nil
}

// LRDecayResult is the LR-decay branch of a run (fig:Obs1 left): the run's own optimizer
// state continued with a linear decay to zero from its current learning rate. Its losses
// are at the iterate the run evaluates: w for AdamW, x for SF-AdamW.
type LRDecayResult struct {
	FromStep   int         `json:"from_step"`
	Steps      int         `json:"steps"`
	StartLR    float64     `json:"start_lr"`
	Before     float64     `json:"val_before"`
	After      Loss        `json:"val_after"` // NaN (null) if the branch diverged
	EvalSeqs   int         `json:"eval_seqs"`
	DivergedAt int         `json:"diverged_at,omitempty"`
	Curve      []ProbeStep `json:"curve"`
	// Constant is the validation loss of the run itself at the branch's end, continued from
	// the same checkpoint at constant LR on the same batches, where the run does not
	// evaluate that step (Config.Evaluates): the branch's control at matched compute. Nil
	// where the run's own curve has the step; NaN (null) if the continuation diverged.
	Constant *Loss `json:"val_constant,omitempty"`
}

// LRDecay continues a run of cfg (AdamW or SF-AdamW) from its checkpoint at fromStep
// (weights w, y for SF-AdamW, and optimizer state st) with the learning rate decaying
// linearly from its value at fromStep to zero over frac·fromStep steps, on the batches
// the run would have read. Where the run does not evaluate the branch's last step, it
// also continues the run at constant LR to that step and evaluates it (Constant), so that
// every branch has its control at the same step.
func LRDecay(ctx context.Context, cfg Config, w []float32, st sfadamw.State[float32], fromStep int, frac float64, data Batches) (*LRDecayResult, error) {
	if math.IsNaN(frac) || frac <= 0 || frac > 1 {
		return nil, &fielderr.Error{Field: "decay_branch.frac", Value: frac, Reason: "must be in (0, 1]"}
	}
	steps := probe.LRDecay{Frac: frac}.BranchSteps(fromStep)
	res, _, err := decayBranch(ctx, cfg, w, st, fromStep, steps, data, false)
	if err != nil || cfg.Evaluates(fromStep+steps) {
		return res, err
	}
	c, err := constantBranch(ctx, cfg, w, st, fromStep, steps, data)
	if err != nil {
		return nil, err
	}
	res.Constant = &c
	return res, nil
}

// Evaluates reports whether the run evaluates its validation loss after step: every
// EvalEvery steps and at its last.
func (c Config) Evaluates(step int) bool {
	return (c.EvalEvery > 0 && step%c.EvalEvery == 0) || step == c.Steps
}

// constantBranch continues a run from its checkpoint at fromStep on its own schedule for
// steps steps, as the run itself trains, and returns the validation loss at its evaluated
// iterate: NaN if a step's loss is not finite.
func constantBranch(ctx context.Context, cfg Config, w []float32, st sfadamw.State[float32], fromStep, steps int, data Batches) (Loss, error) {
	var sched sfadamw.Schedule
	switch cfg.Optimizer.Name {
	case AdamW:
		sched = cfg.AdamWConfig().Schedule
	case SFAdamW:
		sched = sfadamw.Schedule{Kind: sfadamw.Constant, Peak: cfg.Optimizer.LR, WarmupSteps: cfg.WarmupSteps()}
	default:
		return 0, &fielderr.Error{Field: "optimizer.name", Value: cfg.Optimizer.Name, Reason: "the LR-decay branch continues an adamw or sfadamw run"}
	}
	p, err := newProbe(ctx, cfg, w, data)
	if err != nil {
		return 0, err
	}
	defer p.eng.Close()
	o, err := branchOptimizer(cfg, p.w, st, sched)
	if err != nil {
		return 0, err
	}
	_, diverged, err := p.train(ctx, o, sched, fromStep, steps)
	if err != nil || diverged != 0 {
		return Loss(math.NaN()), err
	}
	l, _, err := p.evaluatedLoss(o, cfg.EvalSeqs)
	return Loss(l), err
}

// branchStartLR is the learning rate of a run of cfg at step: AdamW's schedule's, or
// SF-AdamW's γ_t = γ·min(1, t/T_warmup) (Algorithm 1).
func branchStartLR(cfg Config, step int) (float64, error) {
	switch cfg.Optimizer.Name {
	case AdamW:
		return cfg.AdamWConfig().Schedule.At(step), nil
	case SFAdamW:
		return sfadamw.Schedule{Kind: sfadamw.Constant, Peak: cfg.Optimizer.LR, WarmupSteps: cfg.WarmupSteps()}.At(step), nil
	}
	return 0, &fielderr.Error{Field: "optimizer.name", Value: cfg.Optimizer.Name, Reason: "the LR-decay branch continues an adamw or sfadamw run"}
}

// LRDecayWeights is LRDecay over a given number of steps; it also returns the weights of
// the evaluated iterate the branch ends with (fig:river_valley_loss_profile, regime 2:
// AdamW decayed from t1 to t2).
func LRDecayWeights(ctx context.Context, cfg Config, w []float32, st sfadamw.State[float32], fromStep, steps int, data Batches) (*LRDecayResult, []float32, error) {
	if steps < 1 {
		return nil, nil, &fielderr.Error{Field: "decay_branch.steps", Value: steps, Reason: "must be ≥ 1"}
	}
	return decayBranch(ctx, cfg, w, st, fromStep, steps, data, true)
}

func decayBranch(ctx context.Context, cfg Config, w []float32, st sfadamw.State[float32], fromStep, steps int, data Batches, keep bool) (*LRDecayResult, []float32, error) {
	startLR, err := branchStartLR(cfg, fromStep)
	if err != nil {
		return nil, nil, err
	}
	// constant at startLR up to fromStep, then linear to 0 over steps: γ = 0 at the last
	sched := sfadamw.Schedule{Kind: sfadamw.WSD, Peak: startLR, DecayStart: fromStep, DecaySteps: steps}
	p, err := newProbe(ctx, cfg, w, data)
	if err != nil {
		return nil, nil, err
	}
	defer p.eng.Close()
	o, err := branchOptimizer(cfg, p.w, st, sched)
	if err != nil {
		return nil, nil, err
	}
	res := &LRDecayResult{FromStep: fromStep, Steps: steps, StartLR: startLR}
	if res.Before, res.EvalSeqs, err = p.evaluatedLoss(o, cfg.EvalSeqs); err != nil {
		return nil, nil, err
	}
	if res.Curve, res.DivergedAt, err = p.train(ctx, o, sched, fromStep, steps); err != nil {
		return nil, nil, err
	}
	res.After = Loss(math.NaN())
	if res.DivergedAt == 0 {
		after, _, err := p.evaluatedLoss(o, cfg.EvalSeqs)
		if err != nil {
			return nil, nil, err
		}
		res.After = Loss(after)
	}
	var final []float32
	if keep {
		final = p.evaluated(o) // the host copy is current after every step
	}
	return res, final, nil
}

// branchOptimizer is the run's optimizer over the prober's weights w, restored from st,
// with the learning rate of sched: AdamW's schedule is sched; SF-AdamW starts at sched's
// peak with no warmup left, and train sets its γ of each step from sched. SF-AdamW's
// c_{t+1} weighs each z_{t+1} by the largest γ so far, as upstream's schedulefree does,
// so x keeps following z through the decay.
func branchOptimizer(cfg Config, w []float32, st sfadamw.State[float32], sched sfadamw.Schedule) (*optimizer, error) {
	o := &optimizer{}
	var err error
	if cfg.Optimizer.Name == SFAdamW {
		sc := cfg.SFAdamWConfig()
		sc.LR, sc.WarmupSteps = sched.Peak, 0
		o.sf, err = sfadamw.New(sc, w)
	} else {
		ac := cfg.AdamWConfig()
		ac.Schedule = sched
		o.adamw, err = sfadamw.NewAdamW(ac, w)
	}
	if err == nil {
		err = o.restore(st)
	}
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	return o, nil
}

// evaluated is a copy of the iterate the run evaluates: the parameters, or SF-AdamW's x.
func (p *prober) evaluated(o *optimizer) []float32 {
	if o.sf == nil {
		return slices.Clone(p.w)
	}
	x := make([]float32, len(p.w))
	o.sf.X(x)
	return x
}

// evaluatedLoss is the validation loss at the iterate the run evaluates; the engine
// computes with the optimizer's parameters again afterwards.
func (p *prober) evaluatedLoss(o *optimizer, maxSeqs int) (float64, int, error) {
	if o.sf == nil {
		return p.valLoss(maxSeqs)
	}
	y := slices.Clone(p.w) // on a host engine, setting x overwrites y
	if err := p.setParams(p.evaluated(o)); err != nil {
		return 0, 0, err
	}
	l, n, err := p.valLoss(maxSeqs)
	if err != nil {
		return 0, 0, err
	}
	return l, n, p.setParams(y)
}

// InterpolationResult is the validation loss along the segment between two weights of a
// run (fig:river_valley_loss_profile): α·w(From) + (1−α)·w(To), where w(To) is the end of
// an LR-decay branch from From when Decayed.
type InterpolationResult struct {
	From     int                  `json:"from_step"`
	To       int                  `json:"to_step"`
	Decayed  bool                 `json:"decayed,omitempty"`
	Iterate  string               `json:"iterate"`
	EvalSeqs int                  `json:"eval_seqs"`
	Points   []InterpolationPoint `json:"points"`
}

// Alphas returns n evenly spaced α from 0 to 1 (n ≥ 2).
func Alphas(n int) []float64 {
	a := make([]float64, n)
	for i := range a {
		a[i] = float64(i) / float64(n-1)
	}
	return a
}

// InterpolationPoint is the validation loss at α·w1 + (1−α)·w2.
type InterpolationPoint struct {
	Alpha float64 `json:"alpha"`
	Loss  Loss    `json:"val_loss"`
}

// Interpolate evaluates the validation loss along α·w1 + (1−α)·w2 for each α
// (fig:river_valley_loss_profile: w1, w2 the checkpoints at t1 and t2).
func Interpolate(ctx context.Context, cfg Config, w1, w2 []float32, alphas []float64, data Batches) ([]InterpolationPoint, error) {
	if len(w1) != len(w2) {
		return nil, fmt.Errorf("interpolate: weights of %d and %d parameters", len(w1), len(w2))
	}
	p, err := newProbe(ctx, cfg, w1, data)
	if err != nil {
		return nil, err
	}
	defer p.eng.Close()
	w := make([]float32, len(w1))
	out := make([]InterpolationPoint, 0, len(alphas))
	for _, a := range alphas {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return nil, &fielderr.Error{Field: "interpolate.alpha", Value: a, Reason: "must be finite"}
		}
		for i := range w {
			w[i] = float32(a*float64(w1[i]) + (1-a)*float64(w2[i]))
		}
		if err := p.setParams(w); err != nil {
			return nil, err
		}
		l, _, err := p.valLoss(cfg.EvalSeqs)
		if err != nil {
			return nil, err
		}
		out = append(out, InterpolationPoint{Alpha: a, Loss: Loss(l)})
	}
	return out, nil
}

// prober is an engine loaded with weights, on the run's data.
type prober struct{ *engine }

func newProbe(ctx context.Context, cfg Config, w []float32, data Batches) (*prober, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	mc, _ := cfg.ResolveModel()
	e, err := openEngine(ctx, cfg, mc, data, nil)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	if len(w) != len(e.w) {
		e.eng.Close()
		return nil, fmt.Errorf("probe: weights of %d parameters, the model has %d", len(w), len(e.w))
	}
	copy(e.w, w)
	if err := e.upload(); err != nil {
		e.eng.Close()
		return nil, err
	}
	return &prober{e}, nil
}

// train runs o for steps steps on the batches of steps fromStep+1, ..., and returns the
// per-step curve and the step whose loss was not finite (0 if none). SF-AdamW, which has
// no schedule of its own, takes each step's γ from sched. It steps on the host: the curve
// records the learning rate of every step, which the host's optimizer knows.
func (p *prober) train(ctx context.Context, o *optimizer, sched sfadamw.Schedule, fromStep, steps int) ([]ProbeStep, int, error) {
	curve := make([]ProbeStep, 0, steps)
	for s := 1; s <= steps; s++ {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		step := fromStep + s
		if o.sf != nil {
			o.sf.SetLR(sched.At(step))
		}
		loss, err := p.step(step, o)
		if err != nil {
			return nil, 0, err
		}
		if !finite(loss) {
			return curve, step, nil
		}
		curve = append(curve, ProbeStep{Step: step, LR: o.lastLR(), TrainLoss: loss})
	}
	return curve, 0, nil
}
