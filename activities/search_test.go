package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/workflows"
)

// Decide hands out at most MaxJobs jobs a decision and drops none: of six configurations
// at the first rung ASHA (η = 3) may promote two; asked for one job at a time it promotes
// the best, then the second best, then nothing. The rung's losses are written as the
// trials' curves would be. A decision asked for again is the one logged.
func TestDecideMaxJobs(t *testing.T) {
	a, env, store := setup(t)
	env.RegisterActivity(a.Decide)
	ctx := context.Background()
	src := strings.Replace(manifest, "{name: sfadamw, lr: 3e-3, betas: [[0.9, 0.99]], c: [vanilla, 50]}",
		"{name: sfadamw, lr: [1e-3, 3e-3], betas: [[0.9, 0.99]], c: [vanilla, 50, 200]}\nsearch: {method: grid, seed: 2, early_stopping: {rule: asha, min_steps: 2}}", 1)
	if err := store.Put(ctx, "sweeps/s/manifest.yaml", []byte(src)); err != nil {
		t.Fatal(err)
	}
	decide := func(seq, max int, events []workflows.SegmentEvent) workflows.DecideOutput {
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
