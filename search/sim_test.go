package search

import (
	"math"
	"slices"
	"testing"
)

// curve is candidate i's validation loss at step: +Inf if it diverges there, NaN if it
// fails.
type curve func(i, step int) float64

// table is a curve given per candidate at each rung of rungs.
func table(rungs []int, rows [][]float64) curve {
	return func(i, step int) float64 { return rows[i][slices.Index(rungs, step)] }
}

// driver plays a search's caller: it fills every free slot (adding the point {"i": index}
// for a new configuration), then lets one running candidate report, chosen by pick from
// the running ones (n: events applied so far).
type driver struct {
	t      *testing.T
	s      *State
	f      curve
	pick   func(running []int, n int) int
	apply  func(Event) error // s.Apply if nil
	jobs   []Job
	events int
}

// step fills the slots and applies one event; false once nothing runs (and then the
// search must be done).
func (d *driver) step() bool {
	d.t.Helper()
	for {
		before := make([]Status, len(d.s.Candidates))
		for i, c := range d.s.Candidates {
			before[i] = c.Status
		}
		j, ok := d.s.Next()
		if !ok {
			break
		}
		if j.New {
			if len(d.s.Candidates) >= d.s.Config.Budget {
				d.t.Fatalf("new configuration asked beyond the budget %d", d.s.Config.Budget)
			}
			d.s.Add(0, Point{"i": float64(len(d.s.Candidates))})
			continue
		}
		if st := before[j.Candidate]; st != StatusQueued && st != StatusPaused {
			d.t.Fatalf("job %+v for a candidate that was %s", j, st)
		}
		if !slices.Contains(d.s.Config.Rungs, j.Until) {
			d.t.Fatalf("job %+v: until is not a rung of %v", j, d.s.Config.Rungs)
		}
		if n := d.s.Running(); n > d.s.Config.Parallel {
			d.t.Fatalf("%d running, parallel %d", n, d.s.Config.Parallel)
		}
		d.jobs = append(d.jobs, j)
	}
	var running []int
	for i, c := range d.s.Candidates {
		if c.Status == StatusRunning {
			running = append(running, i)
		}
	}
	if len(running) == 0 {
		if !d.s.Done() {
			d.t.Fatalf("nothing runs, yet the search is not done: %+v", d.s.Candidates)
		}
		return false
	}
	i := running[d.pick(running, d.events)]
	until := d.s.Candidates[i].Until
	e := Event{Candidate: i, Step: until}
	switch v := d.f(i, until); {
	case math.IsNaN(v):
		e.Failed = true
	case math.IsInf(v, 1):
		e.Diverged = true
	default:
		e.Value = v
	}
	apply := d.s.Apply
	if d.apply != nil {
		apply = d.apply
	}
	if err := apply(e); err != nil {
		d.t.Fatal(err)
	}
	d.events++
	return true
}

func (d *driver) run() []Job {
	d.t.Helper()
	for d.step() {
		if d.events > 10000 {
			d.t.Fatal("the search does not end")
		}
	}
	return d.jobs
}

func first(running []int, n int) int { return 0 }

// outcome is how a candidate ended: its status and the step it ended at.
type outcome struct {
	Status Status
	At     int
}

func outcomes(s *State) []outcome {
	os := make([]outcome, len(s.Candidates))
	for i, c := range s.Candidates {
		os[i] = outcome{c.Status, c.StoppedAt}
		if c.Status == StatusCompleted {
			os[i].At = c.Until
		}
	}
	return os
}

func newState(t *testing.T, c Config) *State {
	t.Helper()
	s, err := NewState(c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
