package report

// The LR-decay finding at matched compute: a branch from checkpoint s that decays over n
// steps ends at step s + n, so it is compared with the run at constant LR at that same
// step, from the run's curve, never with the run at s (which trained n steps less).

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training"
)

// obs1LRDecay: for the best constant-LR AdamW configuration, per seed, the loss at the end
// of each LR-decay branch is below the run's own loss at the same step; for the best
// vanilla SF-AdamW configuration, each branch shows no improvement: the run at constant LR
// is not above it by the margin or more (a branch that ends higher is no improvement
// either, so this is a non-inferiority test, not one of equality). The run's loss at the
// branch's end is from its curve where it evaluated that step, else the branch's control
// (training.LRDecayResult.Constant), so every branch is compared at matched compute. A
// configuration without a branch is a part without data.
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
		froms := e.branchesOf(c)
		if len(froms) == 0 {
			notes = append(notes, c.label()+": no LR-decay branch (probes.lr_decay)")
			want := "≤"
			if c == aw {
				want = "<"
			}
			rows = append(rows, missing(c.label(), "LR-decay branch", want))
			continue
		}
		for _, from := range froms {
			if c == aw {
				rows = append(rows, compare(e, c, e.lrDecayEnd(from), c, e.constantEnd(from), "<"))
			} else {
				rows = append(rows, compare(e, c, e.constantEnd(from), c, e.lrDecayEnd(from), "≤"))
			}
		}
	}
	if aw == nil { // then sf is not
		notes = append(notes, fmt.Sprintf("no constant-LR AdamW configuration at batch %d completed a seed", sf.cfg.BatchTokens))
		rows = append(rows, missing("constant-LR AdamW", "LR-decay branch", "<"))
	}
	if sf == nil {
		notes = append(notes, "no vanilla SF-AdamW configuration completed a seed")
		rows = append(rows, missing("vanilla SF-AdamW", "LR-decay branch", "≤"))
	}
	if !slices.ContainsFunc(rows, func(r Comparison) bool { return r.A.N+r.B.N > 0 }) {
		return nil, strings.Join(notes, ". ") + "."
	}
	if len(notes) == 0 {
		return rows, ""
	}
	return rows, strings.Join(notes, ". ") + "."
}

// branchesOf are the checkpoint steps of configuration c's LR-decay branches, in any of
// its completed seeds, in order.
func (e *evidence) branchesOf(c *config) []int {
	var froms []int
	for _, s := range c.seeds {
		if s.Result == nil || s.Result.Status != status.Completed {
			continue
		}
		for _, b := range e.lrDecays[s.id] {
			if !slices.Contains(froms, b.FromStep) {
				froms = append(froms, b.FromStep)
			}
		}
	}
	slices.Sort(froms)
	return froms
}

// branch is the seed's LR-decay branch from checkpoint step from.
func (e *evidence) branch(id string, from int) *training.LRDecayResult {
	for _, b := range e.lrDecays[id] {
		if b.FromStep == from {
			return b
		}
	}
	return nil
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

// constantEnd is the run's own validation loss at its primary iterate at the end of its
// LR-decay branch from checkpoint step from: from its curve, else the branch's control.
func (e *evidence) constantEnd(from int) value {
	return value{fmt.Sprintf("Val (primary) at the end of the branch from step %d, constant LR", from), func(e *evidence, id string, r *training.Result) (float64, bool) {
		b := e.branch(id, from)
		if b == nil {
			return 0, false
		}
		if v, ok := curveVal(r, b.FromStep+b.Steps); ok {
			return v, true
		}
		if b.Constant == nil {
			return 0, false
		}
		return float64(*b.Constant), true
	}}
}

// lrDecayEnd is the validation loss at the end of the LR-decay branch from checkpoint
// step from: NaN, a diverged seed, if the branch diverged.
func (e *evidence) lrDecayEnd(from int) value {
	return value{fmt.Sprintf("Val (primary) at the end of the branch from step %d, LR decayed", from), func(e *evidence, id string, _ *training.Result) (float64, bool) {
		if b := e.branch(id, from); b != nil {
			return float64(b.After), true
		}
		return 0, false
	}}
}
