package main

import (
	"context"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/search"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/trial"
)

// hyperbandManifest is ashaManifest's 3 × 3 grid under Hyperband (η = 3, rungs 2, 6 and
// the end 18, all three brackets), its rungs judged by y.
var hyperbandManifest = strings.NewReplacer("name: asha\n", "name: hyperband\n",
	"{rule: asha, min_steps: 2, eta: 3}", "{rule: hyperband, min_steps: 2, eta: 3, iterate: y}").Replace(ashaManifest)

// Hyperband over a grid end to end: the 9 configurations fall in brackets of 5, 2 and 2
// (weights 9, 5, 3). Bracket 2 trains to the end unjudged, with no resume; bracket 1's
// two reach step 6, too few to promote either (⌊2/3⌋ = 0); bracket 0 is ASHA from step 2,
// whose top ⌊n/3⌋ of at most five goes on to 6 (one, or more where it promoted early)
// and none further. Every rung value is the trial's validation loss at y.
func TestRunHyperbandEndToEnd(t *testing.T) {
	r := runSearch(t, "hyperband", hyperbandManifest, 9)
	ctx := context.Background()
	bracket := map[int]int{}
	steps, promoted := 0, 0
	for _, c := range r.st.Candidates {
		bracket[c.Bracket]++
		id := candidateTrials(t, r.manifest, c)[0]
		res, err := trial.ReadResult(ctx, r.store, id)
		if err != nil {
			t.Fatal(err)
		}
		if c.Bracket == 0 && c.StoppedAt == 6 {
			promoted++
		}
		switch {
		case c.Bracket == 2:
			if c.Status != search.StatusCompleted || res == nil || res.Resumed != 0 || res.Steps != 18 {
				t.Errorf("configuration %d of bracket 2: %s, result %+v; want it trained to the end in one go", c.Index, c.Status, res)
			}
			steps += 18
		case c.Status == search.StatusStopped:
			if c.StoppedAt < r.st.Config.Rungs[c.Bracket] || c.StoppedAt == 18 || res != nil {
				t.Errorf("configuration %d of bracket %d stopped at %d (result %v), want at a rung of its bracket with none", c.Index, c.Bracket, c.StoppedAt, res)
			}
			if _, err := r.store.Get(ctx, keys.Checkpoint(keys.Checkpoints(keys.Trial(id)), int64(c.StoppedAt))); err != nil {
				t.Errorf("configuration %d: no checkpoint at its rung %d: %v", c.Index, c.StoppedAt, err)
			}
			steps += c.StoppedAt
		default:
			t.Errorf("configuration %d of bracket %d ended %s at %d", c.Index, c.Bracket, c.Status, c.StoppedAt)
		}
		if _, ok := c.Values[2]; ok != (c.Bracket == 0) {
			t.Errorf("configuration %d of bracket %d: a value at step 2 %v, want one only in bracket 0", c.Index, c.Bracket, ok)
		}
		// each rung value is y's validation loss there, from the trial's curves
		points, err := trial.ReadCurves(ctx, r.store, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range points {
			if v, ok := c.Values[p.Step]; ok && p.Step < 18 && v != p.Val[training.IterY] {
				t.Errorf("configuration %d at step %d: value %v, y's loss %v (x's %v)", c.Index, p.Step, v, p.Val[training.IterY], p.Val[training.IterX])
			}
		}
	}
	if bracket[0] != 5 || bracket[1] != 2 || bracket[2] != 2 {
		t.Errorf("brackets %v, want 5, 2, 2", bracket)
	}
	// bracket 0: 5·2 steps and 4 more for each promoted; bracket 1: 2·6; bracket 2: 2·18
	if want := 5*2 + 4*promoted + 2*6 + 2*18; promoted < 1 || steps != want || steps > 162/2 {
		t.Errorf("%d steps trained, %d promoted in bracket 0: want %d, under half the grid's 162", steps, promoted, want)
	}
}
