package training

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/training/checkpoint"
)

// IterateWeights gives, for every name a run of SF-AdamW or AdamW has ("" and IterEWA
// included), the weights whose validation loss is, to the bit, the loss the training loop
// measured at that iterate at the checkpoint's step; a name the run lacks is an error, as
// is a checkpoint without the state an iterate needs.
func TestIterateWeights(t *testing.T) {
	for _, opt := range []string{SFAdamW, AdamW} {
		t.Run(opt, func(t *testing.T) {
			cfg := testConfig(opt)
			cfg.Steps = 20
			store := newStore(t)
			res, err := run(t, cfg, store, 0)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			ck, err := checkpoint.Load(ctx, store, "trials/t/checkpoints", 10)
			if err != nil {
				t.Fatal(err)
			}
			at := res.Curves[slices.IndexFunc(res.Curves, func(c CurvePoint) bool { return c.Step == 10 })].Val
			b, err := NewBatches(cfg, testCorpus(t))
			if err != nil {
				t.Fatal(err)
			}
			its := Iterates(opt)
			resolved := map[string]string{"": its[0], IterEWA: "ewa_" + its[0]}
			for _, it := range its {
				resolved[it] = it
			}
			for name, want := range resolved {
				w, got, err := IterateWeights(cfg, ck, name)
				if err != nil {
					t.Fatalf("iterate %q: %v", name, err)
				}
				if got != want {
					t.Errorf("iterate %q resolved to %q, want %q", name, got, want)
				}
				p, err := newProbe(ctx, cfg, w, b)
				if err != nil {
					t.Fatalf("iterate %q: %v", name, err)
				}
				l, _, err := p.valLoss(cfg.EvalSeqs)
				p.eng.Close()
				if err != nil || l != at[got] {
					t.Errorf("iterate %q: validation loss %v (%v), the run measured %v at %s", name, l, err, at[got], got)
				}
			}
			if opt == SFAdamW {
				x, err := IterateX(cfg, ck)
				w, _, _ := IterateWeights(cfg, ck, IterX)
				if err != nil || !slices.Equal(x, w) {
					t.Errorf("IterateX differs from iterate x (%v)", err)
				}
				if y, _, _ := IterateWeights(cfg, ck, IterY); slices.Equal(x, y) {
					t.Error("x equals y")
				}
			}
			lacks := []string{IterW, IterEWAW, "z"}
			if opt == AdamW {
				lacks = []string{IterX, IterY, IterEWAX, IterEWAY, "z"}
			}
			for _, name := range lacks {
				_, _, err := IterateWeights(cfg, ck, name)
				if err == nil || !strings.Contains(err.Error(), "a "+opt+" run has ["+strings.Join(its, " ")+"]") {
					t.Errorf("iterate %q of a %s run: %v", name, opt, err)
				}
			}
			bare := &checkpoint.Checkpoint{Step: ck.Step, Model: ck.Model, Params: ck.Params}
			if _, _, err := IterateWeights(cfg, bare, IterEWA); err == nil || !strings.Contains(err.Error(), "ewa_decay") {
				t.Errorf("EWA iterate of a checkpoint without EWA state: %v", err)
			}
		})
	}
}

func TestSameIterate(t *testing.T) {
	for _, tc := range []struct {
		got, asked string
		want       bool
	}{
		{IterX, "", true}, {IterEWAW, IterEWA, true}, {IterY, IterY, true}, {IterX, IterY, false}, {IterEWAX, IterEWAY, false},
	} {
		if SameIterate(tc.got, tc.asked) != tc.want {
			t.Errorf("SameIterate(%q, %q) = %v", tc.got, tc.asked, !tc.want)
		}
	}
}
