package search

import (
	"fmt"
	"slices"
)

// Rule names.
const (
	ASHA        = "asha"         // asynchronous successive halving (Li et al. 2020, Algorithm 2), with promotions
	SyncHalving = "sync_halving" // synchronous successive halving (Jamieson & Talwalkar 2016): a rung's decisions wait for all of it
	Median      = "median"       // the median stopping rule (Golovin et al. 2017, Google Vizier), as Optuna's MedianPruner
	Hyperband   = "hyperband"    // asynchronous Hyperband (Li et al. 2018; 2020, §3.2): ASHA in brackets that start at later rungs
	NoStopping  = ""             // every configuration trains to the end
)

// Config of a search's scheduling.
type Config struct {
	Rule      string `json:"rule"`
	Rungs     []int  `json:"rungs"`               // increasing decision steps; the last is the run's steps (the end)
	Eta       int    `json:"eta"`                 // halving: keep the best 1/Eta of a rung (≥ 2)
	MinTrials int    `json:"min_trials"`          // median: configurations complete before it stops any (Optuna n_startup_trials)
	Brackets  int    `json:"brackets,omitempty"`  // hyperband: brackets s = 0..Brackets−1, bracket s starting at rung s; 0: all, one a rung
	Grace     int    `json:"grace,omitempty"`     // no rule judges before this step: NewState drops the rungs before it
	Finalists int    `json:"finalists,omitempty"` // sync_halving: a rung keeps max(⌊n/Eta⌋, Finalists) of its n, so as many reach the end
	Budget    int    `json:"budget"`              // configurations to start in all
	Parallel  int    `json:"parallel"`            // configurations training at once at most (≥ 1)
}

// Validate checks c: a known rule; rungs positive and increasing, at least the end;
// Eta ≥ 2 for the halving rules; MinTrials ≥ 0; Finalists ≥ 0, and 0 but under
// sync_halving; Brackets within [0, len(Rungs)] of the rungs after Grace ≥ 0; Budget and
// Parallel ≥ 1.
func (c Config) Validate() error {
	switch c.Rule {
	case ASHA, SyncHalving, Median, Hyperband, NoStopping:
	default:
		return fmt.Errorf("search config: rule %q is none of %q, %q, %q, %q or %q (no stopping)", c.Rule, ASHA, SyncHalving, Median, Hyperband, NoStopping)
	}
	if len(c.Rungs) == 0 {
		return fmt.Errorf("search config: no rungs: the last rung is the end of the run")
	}
	for i, r := range c.Rungs {
		if r < 1 || (i > 0 && r <= c.Rungs[i-1]) {
			return fmt.Errorf("search config: rungs %v: rung %d is %d; rungs must be positive and increase", c.Rungs, i, r)
		}
	}
	if c.Grace < 0 {
		return fmt.Errorf("search config: grace %d is negative", c.Grace)
	}
	if n := len(Judged(c.Rungs, c.Grace)); c.Brackets < 0 || c.Brackets > n {
		return fmt.Errorf("search config: brackets %d: %d rung(s) from grace %d on start at most %d brackets", c.Brackets, n, c.Grace, n)
	}
	if (c.Rule == ASHA || c.Rule == SyncHalving || c.Rule == Hyperband) && c.Eta < 2 {
		return fmt.Errorf("search config: eta %d: %s keeps 1/eta of a rung, eta must be ≥ 2", c.Eta, c.Rule)
	}
	if c.MinTrials < 0 {
		return fmt.Errorf("search config: min_trials %d is negative", c.MinTrials)
	}
	if c.Finalists < 0 || (c.Finalists > 0 && c.Rule != SyncHalving) {
		return fmt.Errorf("search config: finalists %d: must be ≥ 0, and only %s keeps finalists (rule %q)", c.Finalists, SyncHalving, c.Rule)
	}
	if c.Budget < 1 {
		return fmt.Errorf("search config: budget %d: at least one configuration must start", c.Budget)
	}
	if c.Parallel < 1 {
		return fmt.Errorf("search config: parallel %d: at least one configuration must train at a time", c.Parallel)
	}
	return nil
}

// Judged are the rungs a search with grace period grace decides at: those of rungs at or
// after step grace, and the last (the end) in any case. Nothing is stopped before grace,
// so a rung there would only cost a pause.
func Judged(rungs []int, grace int) []int {
	var out []int
	for i, r := range rungs {
		if r >= grace || i == len(rungs)-1 {
			out = append(out, r)
		}
	}
	return out
}

// end is the last rung: the run's steps.
func (c Config) end() int { return c.Rungs[len(c.Rungs)-1] }

// after is the rung after step, which is a rung before the end.
func (c Config) after(step int) int {
	k, _ := slices.BinarySearch(c.Rungs, step)
	return c.Rungs[k+1]
}

// rule is what an early-stopping rule decides: at a rung, and when a slot is free.
type rule interface {
	// reached is told that candidate i paused at a rung before the end.
	reached(s *State, i int)
	// next returns a paused candidate to train on, and the step to train it to.
	next(s *State) (i, until int, ok bool)
}

func (c Config) rule() rule {
	switch c.Rule {
	case ASHA:
		return asha{}
	case SyncHalving:
		return syncHalving{}
	case Median:
		return median{}
	case Hyperband:
		return hyperband{}
	}
	return noStopping{}
}

// noStopping trains every configuration to the end in one segment: none ever pauses.
type noStopping struct{}

func (noStopping) reached(*State, int)          {}
func (noStopping) next(*State) (int, int, bool) { return 0, 0, false }
