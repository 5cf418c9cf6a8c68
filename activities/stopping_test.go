package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/report"
	"github.com/sfsweep/sfsweep/search"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/workflows"
)

// A rung ranks by early_stopping's iterate where one is given: the six configurations
// reach step 2 with x's loss rising with their index and y's falling, so ASHA (η = 3)
// promotes the first two by x, the default (the metric's iterate), and the last two by y.
func TestDecideRungIterate(t *testing.T) {
	for _, c := range []struct{ iterate, want string }{{"", "0→4 1→4"}, {", iterate: y", "5→4 4→4"}} {
		a, env, store := searchSetup(t, "lr: [1e-3, 3e-3], betas: [[0.9, 0.99]], c: [vanilla, 50, 200]}\nsearch: {method: grid, seed: 2, early_stopping: {rule: asha, min_steps: 2"+c.iterate+"}}")
		decide := decider(t, a, env)
		first := decide(0, 8, nil)
		var events []workflows.SegmentEvent
		for _, j := range first.Jobs {
			d := float64(j.Candidate) / 10
			pt := training.CurvePoint{Step: 2, Val: map[string]float64{training.IterX: 3 + d, training.IterY: 3 - d}}
			b, _ := json.Marshal(pt)
			if err := store.Put(context.Background(), keys.RunCurves(keys.Trial(j.Trials[0].ID)), append(b, '\n')); err != nil {
				t.Fatal(err)
			}
			events = append(events, workflows.SegmentEvent{Candidate: j.Candidate, Until: 2})
		}
		var got []string
		for seq, evs := range [][]workflows.SegmentEvent{events, nil, nil} {
			for _, j := range decide(seq+1, 1, evs).Jobs {
				got = append(got, fmt.Sprintf("%d→%d", j.Candidate, j.Until))
			}
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("iterate %q: promotions %v, want %s", c.iterate, got, c.want)
		}
	}
}

// Under hyperband the first jobs train each configuration to its bracket's first rung:
// of six, with rungs 2 and the end 4, brackets of weights 3 and 2 send 4 to step 2 and 2
// to the end at once, as the plan allots them, and the state records each bracket.
func TestDecideHyperband(t *testing.T) {
	a, env, store := searchSetup(t, "lr: [1e-3, 3e-3], betas: [[0.9, 0.99]], c: [vanilla, 50, 200]}\nsearch: {method: grid, seed: 2, early_stopping: {rule: hyperband, min_steps: 2}}")
	first := decider(t, a, env)(0, 8, nil)
	st, err := report.ReadSearch(context.Background(), store, "s")
	if err != nil || st == nil {
		t.Fatalf("search state %v, %v", st, err)
	}
	if st.Config.Rule != search.Hyperband || len(st.Candidates) != 6 {
		t.Fatalf("state %+v: want hyperband with 6 configurations", st.Config)
	}
	until := map[int]int{}
	for _, j := range first.Jobs {
		until[j.Until]++
		if want := st.Config.Rungs[st.Candidates[j.Candidate].Bracket]; j.Until != want {
			t.Errorf("job %d→%d: its bracket %d starts at %d", j.Candidate, j.Until, st.Candidates[j.Candidate].Bracket, want)
		}
	}
	if len(first.Jobs) != 6 || until[2] != 4 || until[4] != 2 {
		t.Errorf("first jobs to steps %v, want 4 to step 2 and 2 to the end, 4", until)
	}
}
