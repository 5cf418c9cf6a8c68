package search

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/sfsweep/sfsweep/internal/status"
)

// Status of a configuration in the search.
type Status string

// The statuses. A configuration is queued once suggested, running while it trains a
// segment, paused when it reaches a rung before the end (waiting for a decision, a
// promotion or a free slot), and it ends stopped (at a rung, by the rule), completed,
// diverged or failed; the last three are spelled as internal/status spells them.
const (
	StatusQueued    Status = "queued"
	StatusRunning   Status = "running"
	StatusPaused    Status = "paused"
	StatusStopped   Status = Status(status.Stopped)
	StatusCompleted        = Status(status.Completed)
	StatusDiverged         = Status(status.Diverged)
	StatusFailed           = Status(status.Failed)
)

// Finished reports whether a configuration of status st will train no more.
func (st Status) Finished() bool {
	return st == StatusStopped || st == StatusCompleted || st == StatusDiverged || st == StatusFailed
}

// Candidate is a configuration of the search and how far it got.
type Candidate struct {
	Index  int             `json:"index"` // order of suggestion, 0, 1, ...
	Grid   int             `json:"grid"`  // which optimizer grid of the manifest (the caller's)
	Point  Point           `json:"point"`
	Status Status          `json:"status"`
	Until  int             `json:"until"`           // the step its current (or last) segment trains to
	Values map[int]float64 `json:"values"`          // the metric at each rung reached (mean over seeds); +Inf at the rung it was training to if it diverged
	Final  *float64        `json:"final,omitempty"` // the final metric, once completed
	// StoppedAt is the step it ended at before the end: its last rung if stopped, the step
	// of its event if diverged or failed.
	StoppedAt int `json:"stopped_at,omitempty"`
	// Same is the earlier candidate whose trials this one's are (the sampler suggested a
	// configuration again): it trains nothing of its own and takes that one's status,
	// values and final metric; the rules rank and count only the earlier one.
	Same *int `json:"same,omitempty"`
	// Key is the configuration's content address, as the caller gave it to AddKeyed.
	Key string `json:"key,omitempty"`
	// Bracket is the Hyperband bracket it is in: it starts at rung Bracket and is ranked
	// only among its bracket's candidates (0 under the other rules).
	Bracket int `json:"bracket,omitempty"`
}

// Duplicate reports whether c is an earlier candidate's configuration again (Same).
func (c Candidate) Duplicate() bool { return c.Same != nil }

// State is a whole search: JSON-serialisable, held by the caller between calls. Its
// methods are deterministic: the same state and calls give the same results.
type State struct {
	Config     Config      `json:"config"`
	Candidates []Candidate `json:"candidates"`
	Exhausted  bool        `json:"exhausted,omitempty"` // no new configuration can come (budget spent or a finite grid used up)
}

// Event is the end of a candidate's segment: it reached step Step (its Until) with Value,
// the validation loss there (mean over its seeds), which completes it at the end of the
// run, with Final its final metric (Value if nil); or it diverged, or failed, at Step.
// Value is not read when Diverged or Failed: JSON cannot hold the +Inf of a divergence,
// so a diverged event says so by its flag (a Value that is not finite counts as one too).
type Event struct {
	Candidate int      `json:"candidate"`
	Step      int      `json:"step"`
	Value     float64  `json:"value"`
	Final     *float64 `json:"final,omitempty"`
	Diverged  bool     `json:"diverged,omitempty"`
	Failed    bool     `json:"failed,omitempty"`
}

// Job is what Next asks the caller to run: train Candidate to step Until (from its
// checkpoint at its last rung, if it has one); or, if New, suggest a new configuration,
// Add it, and call Next again.
type Job struct {
	Candidate int  `json:"candidate"`
	Until     int  `json:"until"`
	New       bool `json:"new,omitempty"`
}

// ErrNotRunning is the error of an event for a candidate that is not running.
var ErrNotRunning = errors.New("candidate is not running")

// NewState returns the empty search of c, whose rungs are those judged after its grace.
func NewState(c Config) (*State, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c.Rungs = slices.Clone(Judged(c.Rungs, c.Grace))
	return &State{Config: c, Candidates: []Candidate{}}, nil
}

// Add appends a new candidate (status queued) of grid g at point p; returns its index.
// The candidate that spends the budget marks the state Exhausted.
func (s *State) Add(grid int, p Point) int {
	i := len(s.Candidates)
	s.Candidates = append(s.Candidates, Candidate{Index: i, Grid: grid, Point: p, Status: StatusQueued, Values: map[int]float64{}, Bracket: s.bracket(i)})
	if len(s.Candidates) >= s.Config.Budget {
		s.Exhausted = true
	}
	return i
}

// AddKeyed is Add of a configuration whose content address is key (the caller's: the ID
// of its trials). If an earlier candidate has the same key, the new one is that
// configuration suggested again: its Same, sharing that one's outcome whatever it is
// (running, paused, stopped or completed), and it never trains. It counts in the budget,
// as the suggestion it is. An empty key matches none.
func (s *State) AddKeyed(grid int, p Point, key string) int {
	i := s.Add(grid, p)
	s.Candidates[i].Key = key
	for j, c := range s.Candidates[:i] {
		if key != "" && c.Key == key && !c.Duplicate() {
			s.Candidates[i].Same = &j
			s.mirror()
			break
		}
	}
	return i
}

// mirror gives each duplicate its original's status, steps and values.
func (s *State) mirror() {
	for i := range s.Candidates {
		d := &s.Candidates[i]
		if !d.Duplicate() {
			continue
		}
		o := s.Candidates[*d.Same]
		d.Status, d.Until, d.StoppedAt, d.Values = o.Status, o.Until, o.StoppedAt, maps.Clone(o.Values)
		d.Final = nil
		if o.Final != nil {
			f := *o.Final
			d.Final = &f
		}
	}
}

// Apply records e: the candidate pauses at a rung (where the median rule decides at
// once whether it goes on), completes at the end, diverges or fails. An event for a
// candidate that is not running is an error wrapping ErrNotRunning.
func (s *State) Apply(e Event) error {
	if e.Candidate < 0 || e.Candidate >= len(s.Candidates) {
		return fmt.Errorf("event for candidate %d: the search has %d", e.Candidate, len(s.Candidates))
	}
	c := &s.Candidates[e.Candidate]
	if c.Duplicate() {
		return fmt.Errorf("event for candidate %d: it is candidate %d again and trains nothing", e.Candidate, *c.Same)
	}
	defer s.mirror()
	if c.Status != StatusRunning {
		return fmt.Errorf("event for candidate %d (%s): %w", e.Candidate, c.Status, ErrNotRunning)
	}
	if c.Values == nil {
		c.Values = map[int]float64{}
	}
	diverged := e.Diverged || !finite(e.Value) || (e.Final != nil && !finite(*e.Final))
	switch {
	case e.Step < 0 || e.Step > c.Until:
		return fmt.Errorf("event for candidate %d at step %d: it trains to step %d", e.Candidate, e.Step, c.Until)
	case e.Failed:
		c.Status, c.StoppedAt = StatusFailed, e.Step
	case diverged:
		c.Status, c.StoppedAt = StatusDiverged, e.Step
		c.Values[c.Until] = math.Inf(1)
	case e.Step != c.Until:
		return fmt.Errorf("event for candidate %d at step %d: it trains to step %d, and neither diverged nor failed", e.Candidate, e.Step, c.Until)
	case e.Step == s.Config.end():
		c.Status, c.Values[e.Step] = StatusCompleted, e.Value
		final := e.Value
		if e.Final != nil {
			final = *e.Final
		}
		c.Final = &final
	default:
		c.Status, c.Values[e.Step] = StatusPaused, e.Value
		s.Config.rule().reached(s, e.Candidate)
	}
	return nil
}

// Next returns the next job to run, if any, and marks its candidate running: a paused
// candidate the rule lets go on (ASHA's promotion, the halving of a complete rung, a
// median survivor), else a queued one, from its first rung, else a new configuration
// (Job.New) while the budget allows. ok is false when nothing can run now: wait for
// events while something runs. Once nothing runs and nothing more can, Next stops the
// paused candidates at their last rung, and Done is true.
func (s *State) Next() (job Job, ok bool) {
	defer s.mirror()
	if s.Running() >= max(s.Config.Parallel, 1) {
		return Job{}, false
	}
	if i, until, ok := s.Config.rule().next(s); ok {
		return s.start(i, until), true
	}
	for i := range s.Candidates {
		if c := s.Candidates[i]; c.Status == StatusQueued && !c.Duplicate() {
			return s.start(i, s.first(c)), true
		}
	}
	if s.more() {
		return Job{New: true}, true
	}
	if s.Running() == 0 {
		if i, until, ok := s.leader(); ok {
			return s.start(i, until), true
		}
		for i, c := range s.Candidates {
			if c.Status == StatusPaused {
				s.stop(i)
			}
		}
	}
	return Job{}, false
}

// leader is the configuration a search that can go no further takes on when none has
// completed: the best paused one at the highest rung that has one, to its next rung. A
// rule that keeps ⌊n/η⌋ of a rung of n < η, or whose promoted configurations failed
// later, would otherwise stop them all and end with no configuration trained to the end.
func (s *State) leader() (i, until int, ok bool) {
	for _, c := range s.Candidates {
		if c.Status == StatusCompleted {
			return 0, 0, false
		}
	}
	rungs := s.Config.Rungs
	for k := len(rungs) - 2; k >= 0; k-- {
		for _, i := range s.ranked(rungs[k]) {
			if c := s.Candidates[i]; c.Status == StatusPaused && c.Until == rungs[k] {
				return i, rungs[k+1], true
			}
		}
	}
	return 0, 0, false
}

// Done reports whether nothing runs and nothing more will: every candidate is completed,
// stopped, diverged or failed, and no new one can come. Paused candidates become stopped
// in the call to Next that finds nothing to run, so ask Next first.
func (s *State) Done() bool {
	if s.more() {
		return false
	}
	for _, c := range s.Candidates {
		if !c.Status.Finished() {
			return false
		}
	}
	return true
}

// Running counts the candidates running; Next never starts one beyond Config.Parallel.
func (s *State) Running() int {
	n := 0
	for _, c := range s.Candidates {
		if c.Status == StatusRunning && !c.Duplicate() {
			n++
		}
	}
	return n
}

// more reports whether a new configuration may still be added.
func (s *State) more() bool {
	return !s.Exhausted && len(s.Candidates) < s.Config.Budget
}

// first is the step a new candidate c trains to: the first rung of its bracket, or the end
// without early stopping.
func (s *State) first(c Candidate) int {
	if s.Config.Rule == NoStopping {
		return s.Config.end()
	}
	return s.Config.Rungs[c.Bracket]
}

func (s *State) start(i, until int) Job {
	c := &s.Candidates[i]
	c.Status, c.Until = StatusRunning, until
	return Job{Candidate: i, Until: until}
}

// stop ends paused candidate i at its rung.
func (s *State) stop(i int) {
	c := &s.Candidates[i]
	c.Status, c.StoppedAt = StatusStopped, c.Until
}

// ranked are the candidates with a value at step (diverged ones, +Inf, included; failed
// ones and duplicates have none of their own), best first: by value, then by index.
func (s *State) ranked(step int) []int { return s.rankedIn(step, -1) }

// rankedIn is ranked of the candidates of bracket b, or of all if b < 0.
func (s *State) rankedIn(step, b int) []int {
	var is []int
	for i, c := range s.Candidates {
		if _, ok := c.Values[step]; ok && !c.Duplicate() && (b < 0 || c.Bracket == b) {
			is = append(is, i)
		}
	}
	slices.SortStableFunc(is, func(a, b int) int {
		return cmp.Compare(s.Candidates[a].Values[step], s.Candidates[b].Values[step])
	})
	return is
}

// Snapshot is a search's state as the store keeps it: the state after decision Seq−1.
type Snapshot struct {
	Seq   int    `json:"seq"`
	State *State `json:"state"`
}

// Observation is the candidate as a sampler sees it: a paused or stopped one by its
// values at rungs, a completed one by its final metric too.
func (c Candidate) Observation() Observation {
	o := Observation{Point: c.Point, Intermediate: c.Values}
	switch c.Status {
	case StatusCompleted:
		o.Outcome, o.Value = Complete, *c.Final
	case StatusStopped, StatusPaused:
		o.Outcome = Stopped
	case StatusDiverged, StatusFailed:
		o.Outcome = Failed
	}
	return o
}
