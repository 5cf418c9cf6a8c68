package sweeps

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/training"
)

// Trial is one training run of a sweep. Its ID is content-addressed: the first 16 hex
// digits of the sha256 of its canonical config, so equal runs share an ID across
// manifests and a result that exists is never recomputed.
type Trial struct {
	ID     string          `json:"id"`
	Config training.Config `json:"config"`
	// Points are the grid points the trial stands for: more than one where refined
	// SF-AdamW with C = 1/(1−β1) coincides with the vanilla point.
	Points []Point `json:"points"`
}

// Point is one grid point: where a trial's result goes in the tables.
type Point struct {
	Grid      int     `json:"grid"` // index in the manifest's optimizers
	Optimizer string  `json:"optimizer"`
	Label     string  `json:"label,omitempty"`
	LR        float64 `json:"lr"`
	Beta1     float64 `json:"beta1"`
	Beta2     float64 `json:"beta2"`
	C         float64 `json:"c"` // 0: vanilla
	// WeightDecay and WarmupFrac are nil where the manifest leaves them to the default.
	WeightDecay *float64 `json:"weight_decay,omitempty"`
	WarmupFrac  *float64 `json:"warmup_frac,omitempty"`
	BatchTokens int      `json:"batch_tokens"`
	Seed        int      `json:"seed"`
	// Params are a program trainer's own parameters at this point (parameters:).
	Params map[string]any `json:"params,omitempty"`
}

// CLabel is the column key of the point's C: "vanilla" or the number.
func (p Point) CLabel() string {
	if p.C == 0 {
		return "vanilla"
	}
	return strconv.FormatFloat(p.C, 'g', -1, 64)
}

// IDLen is the length of a trial ID in hex digits.
const IDLen = 16

// Expand returns the manifest's trials in grid order (optimizers, then lr, betas, c,
// weight_decay, warmup_frac, batch_tokens, seeds), each once. A search that samples its
// configurations (Sampled) has no grid to expand.
func (m *Manifest) Expand() ([]Trial, error) {
	trials, errs := m.expand(false)
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return trials, nil
}

// maxConfigErrors bounds the errors expand(true) gathers: a grid whose every point is
// invalid names each field once, however many points it has.
const maxConfigErrors = 50

// expand is Expand; with all, it goes on past an invalid trial config, to give the error
// of every field that makes one invalid, each once.
func (m *Manifest) expand(all bool) ([]Trial, Errors) {
	if m.Sampled() {
		return nil, Errors{&fielderr.Error{Field: "search.method", Value: m.Method(), Reason: "a sampled search has no grid to expand: its configurations come as it runs"}}
	}
	if n := m.Count(); n > m.maxTrials() {
		return nil, Errors{&fielderr.Error{Field: "optimizers", Value: fmt.Sprintf("%d trials", n), Reason: fmt.Sprintf("more than max_trials = %d", m.maxTrials())}}
	}
	var errs Errors
	seen := map[string]bool{} // the errors gathered, by their text
	var trials []Trial
	index := map[string]int{}
	for gi, g := range m.Optimizers {
		// a parameter not given is one value: the default
		axis := func(p Param) []*float64 {
			if len(p.Values) == 0 {
				return []*float64{nil}
			}
			vs := make([]*float64, len(p.Values))
			for i := range p.Values {
				vs[i] = &p.Values[i]
			}
			return vs
		}
		cs, wds, wfs := axis(g.C.Param), axis(g.WeightDecay), axis(m.WarmupFrac)
		lrs, pairs, bts := g.LR.Values, g.betaPairs(), g.batchTokens(m).Values
		if g.program() { // one point, which leaves them to the program
			lrs, pairs = []float64{0}, []BetaPair{{}}
			if len(bts) == 0 {
				bts = []float64{0}
			}
		}
		params := m.Parameters.grid()
		for li, lr := range lrs {
			for bi, b := range pairs {
				for ci, c := range cs {
					for wi, wd := range wds {
						for fi, wf := range wfs {
							for ti, bt := range bts {
								for _, pv := range params {
									for _, seed := range m.Seeds {
										p := Point{Grid: gi, Optimizer: g.Name, Label: g.Label, LR: lr, Beta1: b[0], Beta2: b[1],
											WeightDecay: wd, WarmupFrac: wf, BatchTokens: int(bt), Seed: seed, Params: pv}
										if c != nil {
											p.C = *c
										}
										cfg := m.trialConfig(g, p)
										if err := cfg.Validate(); err != nil {
											at := axes{lr: li, betas: bi, c: ci, weightDecay: wi, warmupFrac: fi, batchTokens: ti}
											if !all {
												return nil, Errors{m.fieldError(err, gi, at)}
											}
											// the optimizer's own fields, whatever else is wrong
											found := []error{err}
											if oerr := cfg.ValidateOptimizer(); oerr != nil {
												found = append(found, oerr)
											}
											for _, err := range found {
												err = m.fieldError(err, gi, at)
												if !seen[err.Error()] {
													seen[err.Error()] = true
													if errs = append(errs, err); len(errs) == maxConfigErrors {
														return nil, errs
													}
												}
											}
											continue
										}
										id := cfg.Hash()[:IDLen]
										if i, ok := index[id]; ok {
											trials[i].Points = append(trials[i].Points, p)
											continue
										}
										index[id] = len(trials)
										trials = append(trials, Trial{ID: id, Config: cfg.Canonical(), Points: []Point{p}})
									}
								}
							}
						}
					}
				}
			}
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return trials, nil
}

// trialConfig is the training config of one grid point, defaults applied: the manifest's
// run settings with the point's optimizer, batch and seed.
func (m *Manifest) trialConfig(g Grid, p Point) training.Config {
	o := training.OptimizerConfig{
		Name: g.Name, LR: p.LR, Beta1: p.Beta1, Beta2: p.Beta2, Eps: g.Eps, WeightDecay: p.WeightDecay,
		C: p.C, GradClip: g.GradClip, WarmupFrac: p.WarmupFrac, Schedule: g.Schedule, FinalFrac: g.FinalFrac, DecayFrac: g.DecayFrac,
		DecayParams: g.DecayParams,
	}
	if g.program() {
		o = training.OptimizerConfig{}
	}
	c := training.Config{Setup: m.Setup, Optimizer: o, BatchTokens: p.BatchTokens, Loop: m.Loop, Seed: uint64(p.Seed)}
	if m.Trainer != nil {
		c.Trainer = m.Trainer.Config(p.Params)
	}
	return c.WithDefaults()
}

// axes are where a grid point stands on each of its grid's lists.
type axes struct{ lr, betas, c, weightDecay, warmupFrac, batchTokens int }

// fieldError is a trial config's error as the manifest's: the run settings' fields are
// spelled as in the manifest already, the optimizer's are those of grid gi, and a listed
// value is named by its place in its list.
func (m *Manifest) fieldError(err error, gi int, at axes) error {
	var ce *fielderr.Error
	if !errors.As(err, &ce) {
		return err
	}
	g := m.Optimizers[gi]
	grid := func(s string) string { return fmt.Sprintf("optimizers[%d].%s", gi, s) }
	// listed names the i-th value of the list at path, or the field itself where the
	// manifest gives it one value
	listed := func(path string, p Param, i int) string {
		if len(p.Values) > 1 {
			return fmt.Sprintf("%s[%d]", path, i)
		}
		return path
	}
	field := ce.Field
	switch ce.Field {
	case "optimizer.lr":
		field = grid(fmt.Sprintf("lr[%d]", at.lr))
	case "optimizer.beta1", "optimizer.beta2":
		field = grid(fmt.Sprintf("betas[%d][0]", at.betas)) // the pair's β1
		if ce.Field == "optimizer.beta2" {
			field = grid(fmt.Sprintf("betas[%d][1]", at.betas))
		}
		if len(g.Betas) == 0 {
			field = grid(fmt.Sprintf("beta1[%d]", at.betas/len(g.Beta2.Values)))
			if ce.Field == "optimizer.beta2" {
				field = grid(fmt.Sprintf("beta2[%d]", at.betas%len(g.Beta2.Values)))
			}
		}
	case "optimizer.c":
		field = grid(fmt.Sprintf("c[%d]", at.c))
	case "optimizer.weight_decay":
		field = listed(grid("weight_decay"), g.WeightDecay, at.weightDecay)
	case "optimizer.warmup_frac": // the manifest's, not the grid's
		field = listed("warmup_frac", m.WarmupFrac, at.warmupFrac)
	case "batch_tokens":
		if g.BatchTokens.Set() {
			field = grid(fmt.Sprintf("batch_tokens[%d]", at.batchTokens))
		} else {
			field = listed("batch_tokens", m.BatchTokens, at.batchTokens)
		}
	default:
		if rest, ok := strings.CutPrefix(field, "optimizer."); ok {
			field = grid(rest)
		}
	}
	return &fielderr.Error{Field: field, Value: ce.Value, Reason: ce.Reason}
}

// DefaultMaxTrials bounds a manifest's expansion unless it sets max_trials.
const DefaultMaxTrials = 10000

// maxTrials is the bound on the grid's trials: max_trials, or DefaultMaxTrials.
func (m *Manifest) maxTrials() int {
	if m.MaxTrials > 0 {
		return m.MaxTrials
	}
	return DefaultMaxTrials
}

// Count returns the number of grid points before deduplication, computed without
// expanding (so a grid of millions is refused in constant memory). It saturates at
// math.MaxInt.
func (m *Manifest) Count() int {
	total := 0
	for _, g := range m.Optimizers {
		n := 1
		for _, k := range []int{len(g.LR.Values), g.nBetaPairs(), len(g.C.Values), len(g.WeightDecay.Values), len(m.WarmupFrac.Values), len(g.batchTokens(m).Values), m.Parameters.count(), len(m.Seeds)} {
			if k > 0 && n > math.MaxInt/k {
				return math.MaxInt
			}
			n *= max(k, 1)
		}
		if total > math.MaxInt-n {
			return math.MaxInt
		}
		total += n
	}
	return total
}

// nBetaPairs is len(g.betaPairs()), computed without them.
func (g Grid) nBetaPairs() int {
	if len(g.Betas) > 0 {
		return len(g.Betas)
	}
	if n, k := len(g.Beta1.Values), len(g.Beta2.Values); k == 0 || n <= math.MaxInt/k {
		return n * k
	}
	return math.MaxInt
}

// betaPairs are the grid's (β1, β2) pairs: its betas, or every beta1 with every beta2.
func (g Grid) betaPairs() []BetaPair {
	if len(g.Betas) > 0 {
		return g.Betas
	}
	ps := make([]BetaPair, 0, len(g.Beta1.Values)*len(g.Beta2.Values))
	for _, b1 := range g.Beta1.Values {
		for _, b2 := range g.Beta2.Values {
			ps = append(ps, BetaPair{b1, b2})
		}
	}
	return ps
}

// batchTokens is the grid's batch_tokens, or the manifest's where it gives none.
func (g Grid) batchTokens(m *Manifest) Param {
	if g.BatchTokens.Set() {
		return g.BatchTokens
	}
	return m.BatchTokens
}

// Cost is the compute of a list of trials.
type Cost struct {
	Trials int     `json:"trials"`
	Steps  int64   `json:"steps"`
	Tokens int64   `json:"tokens"` // training tokens, steps × batch
	FLOPs  float64 `json:"flops"`  // model FLOPs of the training steps (6·N·D plus attention)
}

// TotalCost sums the cost of the trials' training steps.
func TotalCost(trials []Trial) Cost {
	return sumCost(trials, func(t Trial) int64 { return int64(t.Config.Steps) })
}

func sumCost(trials []Trial, steps func(Trial) int64) Cost {
	var c Cost
	for _, t := range trials {
		cfg := t.Config
		n := steps(t)
		mc, err := cfg.ResolveModel()
		if err != nil {
			// a program's trial without a model of sfsweep's: its steps count, its
			// tokens and FLOPs are the program's own
			if cfg.Trainer != nil {
				c.Trials++
				c.Steps += n
				c.Tokens += n * int64(cfg.BatchTokens)
			}
			continue
		}
		c.Trials++
		c.Steps += n
		c.Tokens += n * int64(cfg.BatchTokens)
		c.FLOPs += mc.FLOPsPerStep(cfg.MicroBatch, cfg.SeqLen) * float64(cfg.Accum()) * float64(n)
	}
	if math.IsInf(c.FLOPs, 0) {
		c.FLOPs = math.MaxFloat64
	}
	return c
}
