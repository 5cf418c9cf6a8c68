package report

// The evidence the findings' checks read: a sweep's trials grouped into configurations,
// the probe results of their trials (read through package trial), the values compared
// seed by seed, and how a check picks the configurations it compares.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/probe"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/trial"
)

// config is a configuration of the sweep: its trials, one per seed.
type config struct {
	cfg   training.Config // canonical, seed 0
	seeds []seedTrial     // by seed
	// butC and butBeta1 identify the configuration but for its C, its β1: configurations
	// with the same butC differ in C alone
	butC, butBeta1 string
}

type seedTrial struct {
	id string
	SeedOutcome
}

// evidence is what the checks read: the configurations, in the order of their first
// trial, and the probe results of their trials by trial ID.
type evidence struct {
	configs  []*config
	decay    map[string]map[int]*training.DecayProbeResult // from every checkpoint probed, by step
	lrDecays map[string][]*training.LRDecayResult          // from every checkpoint branched, by step
	// interp and decayed are the plain interpolation and the decayed one (AdamW's)
	interp, decayed map[string]*training.InterpolationResult
	// decaySteps are the checkpoint steps some trial has a decay-probe result from, in order
	decaySteps []int
}

// gatherEvidence groups res's trials into configurations and reads their probe results:
// for each trial, the decay probes and the LR-decay branches from every checkpoint, and
// the interpolations, plain and decayed.
func gatherEvidence(ctx context.Context, store blob.Store, m *sweeps.Manifest, res *Results) (*evidence, error) {
	e := &evidence{decay: map[string]map[int]*training.DecayProbeResult{}, lrDecays: map[string][]*training.LRDecayResult{},
		interp: map[string]*training.InterpolationResult{}, decayed: map[string]*training.InterpolationResult{}}
	byKey := map[string]*config{}
	for _, t := range res.Trials {
		o := res.Outcomes[t.ID]
		cfg := t.Config
		cfg.Seed = 0
		k := cfg.Hash()
		c := byKey[k]
		if c == nil {
			c = &config{cfg: cfg, butC: keyBut(cfg, func(o *training.OptimizerConfig) { o.C = 0 }),
				butBeta1: keyBut(cfg, func(o *training.OptimizerConfig) { o.Beta1 = 0 })}
			byKey[k] = c
			e.configs = append(e.configs, c)
		}
		c.seeds = append(c.seeds, seedTrial{t.ID, SeedOutcome{int(t.Config.Seed), o}})
		if o.Result == nil || o.Result.Status != status.Completed {
			continue
		}
		if err := e.readProbes(ctx, store, res.Listed, m.ProbesFor(t), t.ID); err != nil {
			return nil, fmt.Errorf("finding: %w", err)
		}
	}
	slices.Sort(e.decaySteps)
	e.decaySteps = slices.Compact(e.decaySteps)
	for _, c := range e.configs {
		slices.SortFunc(c.seeds, func(a, b seedTrial) int { return cmp.Compare(a.Seed, b.Seed) })
	}
	return e, nil
}

// readProbes reads trial id's probe results that the checks compare, as tp asks for them
// and the listing has them: the decay probes and the LR-decay branches from every
// checkpoint, and the interpolations, plain and (for AdamW) decayed.
func (e *evidence) readProbes(ctx context.Context, store blob.Store, listed trial.Listing, tp probe.Set, id string) error {
	if d := tp.Decay; d != nil {
		for _, step := range d.At {
			r, err := listed.DecayProbe(ctx, store, id, training.DecayProbeFrom(step, *d))
			if err != nil {
				return err
			}
			if r == nil {
				continue
			}
			if e.decay[id] == nil {
				e.decay[id] = map[int]*training.DecayProbeResult{}
			}
			e.decay[id][step] = r
			e.decaySteps = append(e.decaySteps, step)
		}
	}
	if b := tp.LRDecay; b != nil {
		rs, err := listed.LRDecays(ctx, store, id, b.Frac)
		if err != nil {
			return err
		}
		e.lrDecays[id] = rs
	}
	if ip := tp.Interpolate; ip != nil {
		for _, decayed := range []bool{false, true} {
			if decayed && !ip.Decayed {
				continue
			}
			r, err := listed.Interpolation(ctx, store, id, probe.Interpolation{From: ip.From, To: ip.To, Points: ip.Points, Decayed: decayed})
			if err != nil {
				return err
			}
			if r != nil && decayed {
				e.decayed[id] = r
			} else if r != nil {
				e.interp[id] = r
			}
		}
	}
	return nil
}

// value is a number a check reads from one trial; ok is false where the trial lacks it (a
// probe not run). A value that is not finite counts as a diverged seed.
type value struct {
	name string
	of   func(e *evidence, id string, r *training.Result) (v float64, ok bool)
}

// gather is the configuration's value v over its seeds.
func (c *config) gather(e *evidence, v value) Seeds {
	vals := map[*training.Result]float64{}
	outs := make([]SeedOutcome, 0, len(c.seeds))
	for _, s := range c.seeds {
		o := s.SeedOutcome
		if r := o.Result; r != nil && r.Status == status.Completed {
			x, ok := v.of(e, s.id, r)
			if !ok {
				o.Outcome = trial.Outcome{} // no value: missing, like a trial not run
			}
			vals[r] = x
		}
		outs = append(outs, o)
	}
	return Gather(outs, func(r *training.Result) float64 { return vals[r] })
}

// compare compares value va of configuration a with vb of b seed by seed; b nil compares
// with the constant 0. Its verdict waits for the finding's other comparisons (decide).
func compare(e *evidence, a *config, va value, b *config, vb value, want string) Comparison {
	c := Comparison{A: Side{Config: a.label(), Value: va.name, Seeds: a.gather(e, va)}, Want: want}
	if b == nil {
		c.B = Side{Config: "0"}
		for _, s := range c.A.Samples {
			c.B.Samples = append(c.B.Samples, SeedValue{Seed: s.Seed})
		}
		c.B.N, c.B.Status = len(c.B.Samples), status.Completed
	} else {
		c.B = Side{Config: b.label(), Value: vb.name, Seeds: b.gather(e, vb)}
	}
	c.Paired = Compare(c.A.Spread, c.B.Spread)
	if want == "≤" || want == "≈" {
		c.Margin = margin
	}
	return c
}

// missing is a part of a claim that the sweep has no data for: a comparison without seeds,
// whose verdict is NoData, so that the finding reads partial, never holds.
func missing(config, value, want string) Comparison {
	c := Comparison{A: Side{Config: config, Value: value}, B: Side{Config: config, Value: value}, Want: want}
	if want == "≤" || want == "≈" {
		c.Margin = margin
	}
	return c
}

// The values the checks compare.
var (
	primaryVal = value{"Val (primary)", func(_ *evidence, _ string, r *training.Result) (float64, bool) {
		v, ok := r.Val[r.Primary]
		return v, ok
	}}
	primaryPPL = value{"test perplexity", func(_ *evidence, _ string, r *training.Result) (float64, bool) {
		v, ok := r.TestPPL[r.Primary]
		return v, ok
	}}
	// primaryTestLoss is the log of the test perplexity: the scale of the margin
	primaryTestLoss = value{"test loss (log perplexity)", func(_ *evidence, _ string, r *training.Result) (float64, bool) {
		v, ok := r.TestPPL[r.Primary]
		return math.Log(v), ok
	}}
)

// decayGain is the decay probe's loss before − after, from checkpoint step from.
func decayGain(from int) value {
	return value{fmt.Sprintf("decay-probe gain (before − after) from step %d", from), func(e *evidence, id string, _ *training.Result) (float64, bool) {
		r := e.decay[id][from]
		if r == nil {
			return 0, false
		}
		return r.Before - float64(r.After), true
	}}
}

// val is the final validation loss at one iterate.
func val(iterate string) value {
	return value{"Val[" + iterate + "]", func(_ *evidence, _ string, r *training.Result) (float64, bool) {
		v, ok := r.Val[iterate]
		return v, ok
	}}
}

// valGap is Val[a] − Val[b].
func valGap(a, b string) value {
	return value{"Val[" + a + "] − Val[" + b + "]", func(_ *evidence, _ string, r *training.Result) (float64, bool) {
		va, okA := r.Val[a]
		vb, okB := r.Val[b]
		return va - vb, okA && okB
	}}
}

// --- selecting configurations ---

func (c *config) opt() training.OptimizerConfig { return c.cfg.Optimizer }

func (c *config) label() string {
	o := c.opt()
	name := "SF-AdamW"
	switch {
	case o.Name == training.AdamW:
		name = "AdamW (" + o.Schedule + ")"
	case o.C != 0:
		name = "refined SF-AdamW C=" + formatG(o.C)
	}
	return fmt.Sprintf("%s lr %s β (%s, %s), batch %d", name, formatLR(o.LR), formatG(o.Beta1), formatG(o.Beta2), c.cfg.BatchTokens)
}

// keyBut identifies cfg with edit applied to its optimizer.
func keyBut(cfg training.Config, edit func(o *training.OptimizerConfig)) string {
	edit(&cfg.Optimizer)
	b, _ := json.Marshal(cfg)
	return string(b)
}

func vanilla(c *config) bool { return c.opt().Name == training.SFAdamW && c.opt().C == 0 }
func refined(c *config) bool { return c.opt().Name == training.SFAdamW && c.opt().C != 0 }

func adamW(schedule sfadamw.ScheduleKind) func(*config) bool {
	return func(c *config) bool { return c.opt().Name == training.AdamW && c.opt().Schedule == string(schedule) }
}

// where returns the configurations that pass every test.
func (e *evidence) where(tests ...func(*config) bool) []*config {
	var out []*config
	for _, c := range e.configs {
		if !slices.ContainsFunc(tests, func(t func(*config) bool) bool { return !t(c) }) {
			out = append(out, c)
		}
	}
	return out
}

// best is the configuration of lowest mean primary validation loss over its completed
// seeds (the first of equals); nil if none completed a seed.
func (e *evidence) best(cs []*config) *config {
	var b *config
	bestMean := math.Inf(1)
	for _, c := range cs {
		if s := c.gather(e, primaryVal); s.N > 0 && s.Mean < bestMean {
			b, bestMean = c, s.Mean
		}
	}
	return b
}

func batch(n int) func(*config) bool { return func(c *config) bool { return c.cfg.BatchTokens == n } }

// beta1Below tests β1 < 0.9: the paper's suboptimal momentum.
func beta1Below(c *config) bool { return c.opt().Beta1 < 0.9 }

// obs1Pair is Observation 1's pair: the best vanilla SF-AdamW configuration and the best
// constant-LR AdamW one at its batch size; a note says which is missing.
func (e *evidence) obs1Pair() (aw, sf *config, note string) {
	sf = e.best(e.where(vanilla))
	if sf == nil {
		return nil, nil, "no vanilla SF-AdamW configuration completed a seed"
	}
	aw = e.best(e.where(adamW(sfadamw.Constant), batch(sf.cfg.BatchTokens)))
	if aw == nil {
		return nil, nil, fmt.Sprintf("no constant-LR AdamW configuration at batch %d completed a seed", sf.cfg.BatchTokens)
	}
	return aw, sf, ""
}

// momentumSlice is the vanilla SF-AdamW configurations that differ from the anchor only in
// β1, by β1, with the anchor: the best vanilla configuration with β1 ≥ 0.9 (the paper's
// tuned momentum), else the best one.
func (e *evidence) momentumSlice() (anchor *config, slice []*config) {
	anchor = e.best(e.where(vanilla, func(c *config) bool { return !beta1Below(c) }))
	if anchor == nil {
		anchor = e.best(e.where(vanilla))
	}
	if anchor == nil {
		return nil, nil
	}
	slice = e.where(vanilla, func(c *config) bool { return c.butBeta1 == anchor.butBeta1 })
	slices.SortStableFunc(slice, func(a, b *config) int { return cmp.Compare(a.opt().Beta1, b.opt().Beta1) })
	return anchor, slice
}

// refinedOf returns the refined configurations that differ from vanilla configuration v
// only in C: the one with C = prefer if run, else all of them, by C.
func (e *evidence) refinedOf(v *config, prefer float64) []*config {
	rs := e.where(refined, func(c *config) bool { return c.butC == v.butC })
	if i := slices.IndexFunc(rs, func(c *config) bool { return c.opt().C == prefer }); i >= 0 {
		return rs[i : i+1]
	}
	slices.SortStableFunc(rs, func(a, b *config) int { return cmp.Compare(a.opt().C, b.opt().C) })
	return rs
}
