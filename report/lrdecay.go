package report

// The LR-decay finding at matched compute: a branch from checkpoint s that decays over n
// steps ends at step s + n, so it is compared with the run at constant LR at that same
// step, from the run's curve, never with the run at s (which trained n steps less).

import (
	"fmt"
	"strings"

	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training"
)

// obs1LRDecay: for the best constant-LR AdamW configuration, per seed, the loss at the end
// of its LR-decay branch is below the run's own loss at the same step; for the best
// vanilla SF-AdamW configuration, the branch shows no improvement: the run at constant LR
// is not above it by the margin or more (a branch that ends higher is no improvement
// either, so this is a non-inferiority test, not one of equality). Each compares the
// latest branch that ends on a step its run evaluated (matchedBranch); a configuration
// none of whose branches does is left out, and the note says why.
func obs1LRDecay(e *evidence) ([]Comparison, string) {
	sf := e.best(e.where(vanilla))
	var aw *config
	if sf != nil {
		aw = e.best(e.where(adamW(sfadamw.Constant), batch(sf.cfg.BatchTokens)))
	} else {
		aw = e.best(e.where(adamW(sfadamw.Constant)))
	}
	if aw == nil && sf == nil {
		return nil, "no constant-LR AdamW or vanilla SF-AdamW configuration completed a seed"
	}
	var rows []Comparison
	var notes []string
	for _, c := range []*config{aw, sf} {
		if c == nil {
			continue
		}
		from, end, why := e.matchedBranch(c)
		switch {
		case from == 0:
			notes = append(notes, c.label()+": "+why)
		case c == aw:
			rows = append(rows, compare(e, c, e.lrDecayEnd(from, end), c, curveAt(end), "<"))
		default: // no improvement: the run at constant LR is not above the branch by the margin
			rows = append(rows, compare(e, c, curveAt(end), c, e.lrDecayEnd(from, end), "≤"))
		}
	}
	if aw == nil { // then sf is not
		notes = append(notes, fmt.Sprintf("no constant-LR AdamW configuration at batch %d completed a seed", sf.cfg.BatchTokens))
	}
	if sf == nil {
		notes = append(notes, "no vanilla SF-AdamW configuration completed a seed")
	}
	if len(notes) == 0 {
		return rows, ""
	}
	return rows, strings.Join(notes, ". ") + "."
}

// matchedBranch is the LR-decay branch of configuration c that its finding compares: the
// latest checkpoint step from whose branch (in any completed seed) the end step is one
// where the run evaluated its validation loss, and that end step. Where none is, from is
// 0 and why says so.
func (e *evidence) matchedBranch(c *config) (from, end int, why string) {
	var latest *training.LRDecayResult
	for _, s := range c.seeds {
		r := s.Result
		if r == nil || r.Status != status.Completed {
			continue
		}
		for _, b := range e.lrDecays[s.id] {
			stop := b.FromStep + b.Steps
			if _, ok := curveVal(r, stop); ok && b.FromStep > from {
				from, end = b.FromStep, stop
			}
			if latest == nil || b.FromStep > latest.FromStep {
				latest = b
			}
		}
	}
	switch {
	case from > 0:
		return from, end, ""
	case latest == nil:
		return 0, 0, "no LR-decay branch (probes.lr_decay)"
	}
	return 0, 0, fmt.Sprintf("no LR-decay branch ends on a step the run evaluated (the latest, from step %d, ends at step %d; the run evaluates every %d steps and at its last, %d), and a branch is compared only with the run at the same step: no verdict",
		latest.FromStep, latest.FromStep+latest.Steps, c.cfg.EvalEvery, c.cfg.Steps)
}

// curveVal is the run's validation loss at its primary iterate at step, from its curve.
func curveVal(r *training.Result, step int) (float64, bool) {
	for _, p := range r.Curves {
		if p.Step == step {
			v, ok := p.Val[r.Primary]
			return v, ok
		}
	}
	return 0, false
}

// curveAt is the run's validation loss at its primary iterate at step.
func curveAt(step int) value {
	return value{fmt.Sprintf("Val (primary) at step %d, constant LR", step), func(_ *evidence, _ string, r *training.Result) (float64, bool) {
		return curveVal(r, step)
	}}
}

// lrDecayEnd is the validation loss at the end of the LR-decay branch from checkpoint
// step from, which ends at step end: NaN, a diverged seed, if the branch diverged.
func (e *evidence) lrDecayEnd(from, end int) value {
	return value{fmt.Sprintf("Val (primary) at step %d, LR decayed from step %d", end, from), func(e *evidence, id string, _ *training.Result) (float64, bool) {
		for _, b := range e.lrDecays[id] {
			if b.FromStep == from {
				return float64(b.After), true
			}
		}
		return 0, false
	}}
}
