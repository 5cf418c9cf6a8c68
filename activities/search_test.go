package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"go.temporal.io/sdk/testsuite"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/report"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/workflows"
)

// Decide hands out at most MaxJobs jobs a decision and drops none: of six configurations
// at the first rung ASHA (η = 3) may promote two; asked for one job at a time it promotes
// the best, then the second best, then nothing. The rung's losses are written as the
// trials' curves would be. A decision asked for again is the one logged.
func TestDecideMaxJobs(t *testing.T) {
	a, env, store := searchSetup(t, "lr: [1e-3, 3e-3], betas: [[0.9, 0.99]], c: [vanilla, 50, 200]}\nsearch: {method: grid, seed: 2, early_stopping: {rule: asha, min_steps: 2}}")
	ctx := context.Background()
	decide := decider(t, a, env)
	first := decide(0, 8, nil)
	if len(first.Jobs) != 6 {
		t.Fatalf("first decision: %d jobs, want the 6 configurations to the first rung", len(first.Jobs))
	}
	// configuration i reaches step 2 with validation loss 3 + i/10 (the lowest is the best)
	var events []workflows.SegmentEvent
	for _, j := range first.Jobs {
		pt := training.CurvePoint{Step: 2, Val: map[string]float64{training.IterX: 3 + float64(j.Candidate)/10}}
		b, _ := json.Marshal(pt)
		if err := store.Put(ctx, keys.RunCurves(keys.Trial(j.Trials[0].ID)), append(b, '\n')); err != nil {
			t.Fatal(err)
		}
		events = append(events, workflows.SegmentEvent{Candidate: j.Candidate, Until: 2})
	}
	var got []string
	for seq, evs := range [][]workflows.SegmentEvent{events, nil, nil} {
		out := decide(seq+1, 1, evs)
		for _, j := range out.Jobs {
			got = append(got, fmt.Sprintf("%d→%d", j.Candidate, j.Until))
		}
	}
	if want := "0→4 1→4"; strings.Join(got, " ") != want {
		t.Errorf("promotions %v, want %s: the best two of six, one a decision", got, want)
	}
	// decision 2 again: the logged one
	if again := decide(2, 1, nil); len(again.Jobs) != 1 || again.Jobs[0].Candidate != 1 || !again.Replay {
		t.Errorf("decision 2 again: %+v", again)
	}
}

// searchSetup is setup with the manifest's optimizer grid and search block given by
// search (from after its name), and Decide registered.
func searchSetup(t *testing.T, search string) (*Activities, *testsuite.TestActivityEnvironment, blob.Store) {
	t.Helper()
	a, env, store := setup(t)
	env.RegisterActivity(a.Decide)
	src := strings.Replace(manifest, "lr: 3e-3, betas: [[0.9, 0.99]], c: [vanilla, 50]}", search, 1)
	if src == manifest {
		t.Fatal("the test manifest has no optimizer line to replace")
	}
	if err := store.Put(context.Background(), "sweeps/s/manifest.yaml", []byte(src)); err != nil {
		t.Fatal(err)
	}
	return a, env, store
}

// decider runs decisions of sweep "s" by Decide in env.
func decider(t *testing.T, a *Activities, env *testsuite.TestActivityEnvironment) func(seq, max int, events []workflows.SegmentEvent) workflows.DecideOutput {
	return func(seq, max int, events []workflows.SegmentEvent) workflows.DecideOutput {
		t.Helper()
		v, err := env.ExecuteActivity(a.Decide, workflows.DecideInput{SweepID: "s", ManifestKey: "sweeps/s/manifest.yaml", Seq: seq, Events: events, MaxJobs: max})
		if err != nil {
			t.Fatal(err)
		}
		var out workflows.DecideOutput
		if err := v.Get(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
}

// A random search of 8 configurations over a space of 4 (lr × C as choices) suggests
// some again: a configuration suggested again while the first is running trains nothing
// of its own (no trial is in two jobs), and once the first completes it has its final
// metric. Without the content address each would train its trials a second time at once.
func TestDecideReusesDuplicates(t *testing.T) {
	a, env, store := searchSetup(t, "lr: [1e-3, 3e-3], betas: [[0.9, 0.99]], c: [vanilla, 50]}\nsearch: {method: random, trials: 8, seed: 1}")
	ctx := context.Background()
	decide := decider(t, a, env)
	first := decide(0, 8, nil)
	jobOf := map[string]int{} // trial → the configuration whose job trains it
	var events []workflows.SegmentEvent
	for _, j := range first.Jobs {
		for _, tr := range j.Trials {
			if c, ok := jobOf[tr.ID]; ok {
				t.Errorf("trial %s is trained by the jobs of configurations %d and %d at once", tr.ID, c, j.Candidate)
			}
			jobOf[tr.ID] = j.Candidate
			// its final validation loss: a function of the trial, so the same configuration has the same
			v := 3 + float64(len(jobOf))/10
			r := training.Result{Status: status.Completed, Steps: 4, Val: map[string]float64{training.IterX: v}}
			b, _ := json.Marshal(r)
			if err := store.Put(ctx, keys.RunResult(keys.Trial(tr.ID)), b); err != nil {
				t.Fatal(err)
			}
		}
		events = append(events, workflows.SegmentEvent{Candidate: j.Candidate, Until: j.Until})
	}
	if len(first.Jobs) == 0 || len(first.Jobs) > 4 {
		t.Fatalf("first decision: %d jobs, want one for each distinct configuration of the 4", len(first.Jobs))
	}
	last := decide(1, 8, events)
	if !last.Done || len(last.Jobs) != 0 {
		t.Fatalf("after the first configurations completed: %+v, want the search done", last)
	}
	st, err := report.ReadSearch(ctx, store, "s")
	if err != nil || st == nil || len(st.Candidates) != 8 {
		t.Fatalf("search state %+v, %v: want 8 configurations", st, err)
	}
	m, err := a.readManifest(ctx, "sweeps/s/manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dups := 0
	for _, c := range st.Candidates {
		ts, err := m.PointTrials(c.Grid, c.Point)
		if err != nil {
			t.Fatal(err)
		}
		trainer, ok := jobOf[ts[0].ID]
		if !ok {
			t.Fatalf("configuration %d (%v): no job trained its trial %s", c.Index, c.Point, ts[0].ID)
		}
		var res training.Result
		b, _ := store.Get(ctx, keys.RunResult(keys.Trial(ts[0].ID)))
		_ = json.Unmarshal(b, &res)
		if c.Status != "completed" || c.Final == nil || *c.Final != res.Val[training.IterX] {
			t.Errorf("configuration %d: %s, final %v, want completed with its trial's %g", c.Index, c.Status, c.Final, res.Val[training.IterX])
		}
		if trainer != c.Index {
			dups++
			if c.Same == nil || *c.Same != trainer {
				t.Errorf("configuration %d shares the trials of %d, recorded as the same as %v", c.Index, trainer, c.Same)
			}
		}
	}
	if dups != 8-len(first.Jobs) {
		t.Errorf("%d duplicates, want %d: the configurations that trained nothing of their own", dups, 8-len(first.Jobs))
	}
}
