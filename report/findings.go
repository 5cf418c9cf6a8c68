package report

// The paper's findings as checks over a sweep's results: each observation of sections 3–5
// and each claimed gain of refined SF-AdamW, tested on the configurations of the sweep it
// needs, seed against seed (Compare), with a verdict and the numbers behind it. A check
// that finds no configuration it needs says so and names the data that would decide it.
//
// Conventions shared by every check:
//   - A configuration is a trial's canonical config without its seed: the seeds of a
//     configuration are its trials, and refined SF-AdamW with C = 1/(1−β1) is vanilla.
//   - The best configuration of a kind is the one of lowest mean validation loss at its
//     primary iterate (x for SF-AdamW, w for AdamW) over its completed seeds: chosen on
//     validation, judged on what the claim names (test perplexity for refined SF).
//   - Two configurations are compared by a paired t-test over the seeds both completed
//     (Compare); a diverged seed has no value and is counted, never averaged.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/internal/stats"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training"
)

// Verdict is what a sweep's results say of one of the paper's claims.
type Verdict string

// The verdicts of a finding or of one of its comparisons.
const (
	Holds       Verdict = "holds"
	DoesNotHold Verdict = "does not hold"
	Noise       Verdict = "not distinguishable from noise"
	NoData      Verdict = "no data in this sweep"
)

// Finding is one of the paper's claims checked on a sweep.
type Finding struct {
	ID      string // "obs1-decay"
	Ref     string // where the paper makes the claim: "Observation 1 · fig:Obs1 (right)"
	Claim   string // the claim, in words
	Verdict Verdict
	Rows    []Comparison // the comparisons behind the verdict
	Note    string       // what the rows do not show: why the sweep has no data, a tally
	Need    string       // the data that decides the claim, said when the verdict is NoData
}

// Comparison is one paired comparison A − B of two values over the seeds both have.
type Comparison struct {
	A, B    Side
	Want    string       // the relation of A to B the claim expects: "<", ">", or "≤" (not above beyond noise)
	Paired  stats.Paired // A − B
	Verdict Verdict
}

// Side is one side of a comparison: a value of a configuration over its seeds.
type Side struct {
	Config string // the configuration, in words; "0" for the constant zero
	Value  string // the value compared: "decay-probe gain", "Val[y]"
	Seeds
}

// check is one claim of the paper and how a sweep tests it: run returns the comparisons
// and a note (why there are none, or what they leave out).
type check struct {
	id, ref, claim, need string
	run                  func(e *evidence) ([]Comparison, string)
}

// checks lists every finding, in the paper's order: one place.
var checks = []check{
	{"obs1-decay", "Observation 1 · fig:Obs1 (right)",
		"A short AdamW decay (LR 1e-4 → 0) lowers AdamW's loss more than SF-AdamW's: SF-AdamW already follows the river.",
		"a constant-LR AdamW and a vanilla SF-AdamW configuration with decay-probe results (probes.decay), as sweeps/examples/fig-obs1.yaml",
		obs1Decay},
	{"obs1-ewa", "Observation 1 · fig:Obs1 (middle)",
		"The EWA of the iterate helps AdamW more than SF-AdamW: Val[w] − Val[ewa_w] exceeds Val[x] − Val[ewa_x].",
		"a constant-LR AdamW and a vanilla SF-AdamW configuration that track their EWA (ewa_decay), as sweeps/examples/fig-obs1.yaml",
		obs1EWA},
	{"obs1-lr-decay", "Observation 1 · fig:Obs1 (left)",
		"Decaying AdamW's LR from its last checkpoint lowers its loss: AdamW at constant LR needs a decay phase.",
		"a constant-LR AdamW configuration with LR-decay branches (probes.lr_decay), as sweeps/examples/fig-obs1.yaml",
		obs1LRDecay},
	{"obs1-interpolation", "Observation 1 · fig:river_valley_loss_profile",
		"The loss between two checkpoints is flatter for SF-AdamW than for AdamW at constant LR: its relative range (max − min)/mean along α·w(t1) + (1−α)·w(t2) is smaller.",
		"a constant-LR AdamW and a vanilla SF-AdamW configuration with checkpoint interpolations (probes.interpolate), as sweeps/examples/fig-river-profile.yaml",
		obs1Interpolation},
	{"obs2-momentum", "Observation 2 · fig:Decay_AdamW_betas",
		"SF-AdamW is sensitive to momentum: the decay probe lowers the loss more at each β1 < 0.9 than at the best β1.",
		"vanilla SF-AdamW at β1 < 0.9 and at β1 ≥ 0.9, otherwise alike, with decay-probe results, as sweeps/examples/fig-decay-adamw-betas.yaml",
		obs2Momentum},
	{"obs3-y", "Observation 3 · fig:EMA_y",
		"y stays on the river: Val[y] < Val[x] at each β1 < 0.9, and Val[ewa_y] < Val[y] at every β1.",
		"vanilla SF-AdamW at several β1, as sweeps/examples/fig-ema-y.yaml",
		obs3Y},
	{"obs4-eos", "Observation 4 · fig:eos",
		"In full-batch training, the preconditioned sharpness at y hovers at the stability threshold 2/((1−β1)γ).",
		"full-batch training and Hessian eigenvalues, which a language-model sweep does not measure: `sfsweep eos` checks it on the toy model (fig:eos, left) and `sfsweep centralflow` the central flow's oscillation",
		nil},
	{"obs5-reformulation", "Observation 5 · eq. (SF_y)",
		"Schedule-Free averages the momentum iterates y without storing an extra copy of the model.",
		"no sweep: it is an identity of the update, checked by sfadamw's TestReformulationSFy (the y-form against Algorithms 1–2) and TestStateBytesPerParam, with the averaging weights drawn by `sfsweep weights`",
		nil},
	{"refined-momentum", "Refined SF, momentum robustness · fig:modified (left)",
		"At β1 < 0.9, refined SF-AdamW (C = 50, else each C run) closes the gap Val[x] − Val[y] of vanilla SF-AdamW, and its x is not worse than its y.",
		"vanilla and refined SF-AdamW at a β1 < 0.9, otherwise alike, as sweeps/examples/fig-modified.yaml",
		refinedMomentum},
	{"refined-best", "Refined SF, best-case gain · fig:modified (middle), tab:c_sweep_05M",
		"At the best vanilla β1 (0.9, 0.95), refined SF-AdamW with C = 200 (else each C run) has a lower test perplexity than vanilla.",
		"vanilla and refined SF-AdamW at β1 0.9 or 0.95, otherwise alike, as sweeps/examples/c-sweep-05M.yaml",
		refinedBest},
	{"refined-large-batch", "Refined SF, large batch · fig:modified (right), tab:c_sweep_2M",
		"At the largest batch, vanilla SF-AdamW has a higher test perplexity than AdamW with a cosine schedule, and refined SF-AdamW (C = 200, else its best C) is not worse than it.",
		"AdamW with a cosine schedule, vanilla and refined SF-AdamW at one batch size, as sweeps/examples/hyperparameter-main-largeBS.yaml",
		refinedLargeBatch},
}

// Findings checks the paper's claims on the results res of manifest m, reading the probe
// results they need from store. The findings come in the order of the paper.
func Findings(ctx context.Context, store blob.Store, m *sweeps.Manifest, res *Results) ([]Finding, error) {
	e, err := gatherEvidence(ctx, store, m, res)
	if err != nil {
		return nil, err
	}
	out := make([]Finding, 0, len(checks))
	for _, c := range checks {
		f := Finding{ID: c.id, Ref: c.ref, Claim: c.claim}
		if c.run != nil {
			f.Rows, f.Note = c.run(e)
		}
		f.Verdict = overall(f.Rows)
		if f.Verdict == NoData {
			f.Need = c.need
		}
		out = append(out, f)
	}
	return out, nil
}

// overall is a finding's verdict from its comparisons: it does not hold if one does not;
// it holds if every comparison with data holds; no data if none has data; noise otherwise.
func overall(rows []Comparison) Verdict {
	v := NoData
	for _, r := range rows {
		switch {
		case r.Verdict == DoesNotHold:
			return DoesNotHold
		case r.Verdict == NoData:
		case v == NoData || v == Holds:
			v = r.Verdict
		}
	}
	return v
}

// judge is a comparison's verdict: whether its paired test finds the relation want.
// "≤" (not above beyond noise) needs two shared seeds to be tested at all.
func judge(p stats.Paired, want string) Verdict {
	switch {
	case p.N == 0:
		return NoData
	case want == "≤" && p.N < 2:
		return Noise
	case want == "≤" && p.Verdict == stats.Higher:
		return DoesNotHold
	case want == "≤":
		return Holds
	case p.Verdict == stats.Noise:
		return Noise
	case (p.Verdict == stats.Lower) == (want == "<"):
		return Holds
	}
	return DoesNotHold
}

// --- the evidence: configurations and probe results ---

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
	configs []*config
	decay   map[string]*training.DecayProbeResult // from the last checkpoint probed
	lrDecay map[string]*training.LRDecayResult    // from the last checkpoint branched
	interp  map[string]*training.InterpolationResult
	// decayFrom and lrDecayFrom are the last checkpoint steps probed and branched from
	decayFrom, lrDecayFrom int
}

// gatherEvidence groups res's trials into configurations and reads their probe results:
// for each trial, the decay probe and LR-decay branch from the last checkpoint the
// manifest probes, and the plain (not decayed) interpolation.
func gatherEvidence(ctx context.Context, store blob.Store, m *sweeps.Manifest, res *Results) (*evidence, error) {
	e := &evidence{decay: map[string]*training.DecayProbeResult{}, lrDecay: map[string]*training.LRDecayResult{},
		interp: map[string]*training.InterpolationResult{}}
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
		tp := m.ProbesFor(t)
		if d := tp.Decay; d != nil && len(d.At) > 0 {
			r, err := readProbe[training.DecayProbeResult](ctx, store, res.Listed, keys.DecayProbe(t.ID, slices.Max(d.At), d.Iterate))
			if err != nil {
				return nil, err
			}
			if r != nil && r.Steps == d.Steps && r.PeakLR == d.PeakLR && training.SameIterate(r.Iterate, d.Iterate) {
				e.decay[t.ID], e.decayFrom = r, max(e.decayFrom, r.FromStep)
			}
		}
		if b := tp.LRDecay; b != nil && len(b.At) > 0 {
			r, err := readProbe[training.LRDecayResult](ctx, store, res.Listed, keys.LRDecay(t.ID, slices.Max(b.At), b.Frac))
			if err != nil {
				return nil, err
			}
			if r != nil {
				e.lrDecay[t.ID], e.lrDecayFrom = r, max(e.lrDecayFrom, r.FromStep)
			}
		}
		if ip := tp.Interpolate; ip != nil {
			r, err := readProbe[training.InterpolationResult](ctx, store, res.Listed, keys.Interpolation(t.ID, ip.From, ip.To, ip.Points, false))
			if err != nil {
				return nil, err
			}
			if r != nil {
				e.interp[t.ID] = r
			}
		}
	}
	for _, c := range e.configs {
		slices.SortFunc(c.seeds, func(a, b seedTrial) int { return cmp.Compare(a.Seed, b.Seed) })
	}
	return e, nil
}

// readProbe reads the probe result under key if listed (the sorted keys under trials/)
// has it; nil if it has not, or if the object does not parse (it is recomputed).
func readProbe[R any](ctx context.Context, store blob.Store, listed []string, key string) (*R, error) {
	if _, found := slices.BinarySearch(listed, key); !found {
		return nil, nil
	}
	b, err := store.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("finding: %s: %w", key, err)
	}
	var r R
	if json.Unmarshal(b, &r) != nil {
		return nil, nil
	}
	return &r, nil
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
				o.Outcome = Outcome{} // no value: missing, like a trial not run
			}
			vals[r] = x
		}
		outs = append(outs, o)
	}
	return Gather(outs, func(r *training.Result) float64 { return vals[r] })
}

// compare compares value va of configuration a with vb of b seed by seed; b nil compares
// with the constant 0.
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
	c.Verdict = judge(c.Paired, want)
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
	interpRange = value{"relative loss range along the interpolation", func(e *evidence, id string, _ *training.Result) (float64, bool) {
		p := e.interp[id]
		if p == nil || len(p.Points) == 0 {
			return 0, false
		}
		lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
		for _, q := range p.Points {
			lo, hi, sum = min(lo, float64(q.Loss)), max(hi, float64(q.Loss)), sum+float64(q.Loss)
		}
		return (hi - lo) / (sum / float64(len(p.Points))), true // NaN if a point diverged
	}}
)

// decayGain is the decay probe's loss before − after, from the last checkpoint probed.
func (e *evidence) decayGain() value {
	return gain("decay-probe gain (before − after)", e.decayFrom, e.decay, func(r *training.DecayProbeResult) (float64, training.Loss) {
		return r.Before, r.After
	})
}

// lrDecayGain is the LR-decay branch's loss before − after, from the last checkpoint
// branched.
func (e *evidence) lrDecayGain() value {
	return gain("LR-decay branch gain (before − after)", e.lrDecayFrom, e.lrDecay, func(r *training.LRDecayResult) (float64, training.Loss) {
		return r.Before, r.After
	})
}

// gain is a probe's loss before − after, read from its results by trial ID.
func gain[R any](name string, from int, results map[string]*R, losses func(*R) (before float64, after training.Loss)) value {
	if from > 0 {
		name += fmt.Sprintf(" from step %d", from)
	}
	return value{name, func(_ *evidence, id string, _ *training.Result) (float64, bool) {
		r := results[id]
		if r == nil {
			return 0, false
		}
		before, after := losses(r)
		return before - float64(after), true
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

// --- the checks ---

// obs1Decay: per seed, the decay probe's gain (loss before − after, from the last
// checkpoint probed) of the best constant-LR AdamW configuration exceeds that of the best
// vanilla SF-AdamW configuration.
func obs1Decay(e *evidence) ([]Comparison, string) {
	aw, sf, note := e.obs1Pair()
	if aw == nil {
		return nil, note
	}
	return []Comparison{compare(e, aw, e.decayGain(), sf, e.decayGain(), ">")}, ""
}

// obs1EWA: per seed, AdamW's Val[w] − Val[ewa_w] exceeds SF-AdamW's Val[x] − Val[ewa_x]
// (the configurations of obs1Decay).
func obs1EWA(e *evidence) ([]Comparison, string) {
	aw, sf, note := e.obs1Pair()
	if aw == nil {
		return nil, note
	}
	return []Comparison{compare(e, aw, valGap(training.IterW, training.IterEWAW), sf, valGap(training.IterX, training.IterEWAX), ">")}, ""
}

// obs1LRDecay: per seed, the gain of the best constant-LR AdamW configuration's LR-decay
// branch from its last checkpoint branched exceeds 0.
func obs1LRDecay(e *evidence) ([]Comparison, string) {
	aw := e.best(e.where(adamW(sfadamw.Constant)))
	if aw == nil {
		return nil, "no constant-LR AdamW configuration completed a seed"
	}
	return []Comparison{compare(e, aw, e.lrDecayGain(), nil, value{}, ">")}, ""
}

// obs1Interpolation: per seed, the relative range (max − min)/mean of the loss along the
// plain interpolation between two checkpoints is smaller for SF-AdamW than for AdamW at
// constant LR (the configurations of obs1Decay).
func obs1Interpolation(e *evidence) ([]Comparison, string) {
	aw, sf, note := e.obs1Pair()
	if aw == nil {
		return nil, note
	}
	return []Comparison{compare(e, sf, interpRange, aw, interpRange, "<")}, ""
}

// obs2Momentum: per seed, the decay-probe gain at each β1 < 0.9 of the momentum slice
// exceeds the gain at its anchor (the best β1 ≥ 0.9).
func obs2Momentum(e *evidence) ([]Comparison, string) {
	anchor, slice := e.momentumSlice()
	if anchor == nil || beta1Below(anchor) {
		return nil, "no vanilla SF-AdamW configuration with β1 ≥ 0.9 completed a seed"
	}
	var rows []Comparison
	for _, c := range slice {
		if beta1Below(c) {
			rows = append(rows, compare(e, c, e.decayGain(), anchor, e.decayGain(), ">"))
		}
	}
	if len(rows) == 0 {
		return nil, fmt.Sprintf("no vanilla SF-AdamW configuration with β1 < 0.9 beside %s", anchor.label())
	}
	return rows, ""
}

// obs3Y: per seed, Val[y] < Val[x] at each β1 < 0.9 of the momentum slice, and
// Val[ewa_y] < Val[y] at each of its β1.
func obs3Y(e *evidence) ([]Comparison, string) {
	_, slice := e.momentumSlice()
	if len(slice) == 0 {
		return nil, "no vanilla SF-AdamW configuration completed a seed"
	}
	var rows []Comparison
	for _, c := range slice {
		if beta1Below(c) {
			rows = append(rows, compare(e, c, val(training.IterY), c, val(training.IterX), "<"))
		}
	}
	for _, c := range slice {
		rows = append(rows, compare(e, c, val(training.IterEWAY), c, val(training.IterY), "<"))
	}
	return rows, ""
}

// refinedMomentum: for each vanilla SF-AdamW configuration with β1 < 0.9 and each refined
// one that differs only in C (C = 50, the paper's, if run; else every C): per seed, the
// refined Val[x] − Val[y] is below the vanilla one, and the refined Val[x] is not above
// its Val[y] beyond noise.
func refinedMomentum(e *evidence) ([]Comparison, string) {
	var rows []Comparison
	for _, v := range e.where(vanilla, beta1Below) {
		for _, r := range e.refinedOf(v, 50) {
			gap := valGap(training.IterX, training.IterY)
			rows = append(rows, compare(e, r, gap, v, gap, "<"), compare(e, r, val(training.IterX), r, val(training.IterY), "≤"))
		}
	}
	if len(rows) == 0 {
		return nil, "no pair of vanilla and refined SF-AdamW configurations at a β1 < 0.9 that differ only in C"
	}
	return rows, ""
}

// refinedBest: for each vanilla SF-AdamW configuration at β1 0.9 or 0.95 (if none, at the
// best vanilla configuration's β1) and each refined one that differs only in C (C = 200 if
// run, else every C): per seed, the refined test perplexity is below the vanilla one. The
// note tallies every refined configuration against its vanilla one (the C-sensitivity
// tables' cells).
func refinedBest(e *evidence) ([]Comparison, string) {
	rows := e.where(vanilla, func(c *config) bool { return c.opt().Beta1 == 0.9 || c.opt().Beta1 == 0.95 })
	if len(rows) == 0 {
		if b := e.best(e.where(vanilla)); b != nil {
			rows = e.where(vanilla, func(c *config) bool { return c.opt().Beta1 == b.opt().Beta1 })
		}
	}
	var out []Comparison
	for _, v := range rows {
		for _, r := range e.refinedOf(v, 200) {
			out = append(out, compare(e, r, primaryPPL, v, primaryPPL, "<"))
		}
	}
	if len(out) == 0 {
		return nil, "no pair of vanilla and refined SF-AdamW configurations at the best vanilla β1 that differ only in C"
	}
	return out, e.cTally()
}

// cTally counts the refined configurations whose test perplexity is below, above or not
// distinguishable from that of the vanilla configuration they differ from only in C.
func (e *evidence) cTally() string {
	var n, lower, higher, noData int
	for _, v := range e.where(vanilla) {
		for _, r := range e.where(refined, func(c *config) bool { return c.butC == v.butC }) {
			p := Compare(r.gather(e, primaryPPL).Spread, v.gather(e, primaryPPL).Spread)
			n++
			switch {
			case p.N == 0:
				noData++
			case p.Verdict == stats.Lower:
				lower++
			case p.Verdict == stats.Higher:
				higher++
			}
		}
	}
	return fmt.Sprintf("Every refined configuration against its vanilla one (the C-sensitivity cells): refined is lower beyond noise in %d of %d, higher in %d, not distinguishable in %d, without a shared seed in %d.",
		lower, n, higher, n-lower-higher-noData, noData)
}

// refinedLargeBatch: at the sweep's largest batch size, with the best AdamW-cosine, the
// best vanilla SF-AdamW and a refined SF-AdamW configuration (the one that differs from
// that vanilla one only in C, with C = 200 if run, else the best of them; else the best
// refined configuration at that batch): per seed, vanilla's test perplexity is above
// AdamW's, and refined's is not above AdamW's beyond noise.
func refinedLargeBatch(e *evidence) ([]Comparison, string) {
	largest := 0
	for _, c := range e.configs {
		largest = max(largest, c.cfg.BatchTokens)
	}
	at := batch(largest)
	aw := e.best(e.where(adamW(sfadamw.Cosine), at))
	v := e.best(e.where(vanilla, at))
	if aw == nil || v == nil {
		return nil, fmt.Sprintf("the largest batch, %d tokens, lacks a completed AdamW-cosine or vanilla SF-AdamW configuration", largest)
	}
	r := e.best(e.refinedOf(v, 200))
	if r == nil {
		r = e.best(e.where(refined, at))
	}
	if r == nil {
		return nil, fmt.Sprintf("no refined SF-AdamW configuration at the largest batch, %d tokens, completed a seed", largest)
	}
	return []Comparison{compare(e, v, primaryPPL, aw, primaryPPL, ">"), compare(e, r, primaryPPL, aw, primaryPPL, "≤")}, ""
}
