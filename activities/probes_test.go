package activities

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/internal/probe"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/training/checkpoint"
	"github.com/sfsweep/sfsweep/trial"
	"github.com/sfsweep/sfsweep/workflows"
)

// failingStore fails every Get of keys containing a substring, as an object store that is
// down for them.
type failingStore struct {
	blob.Store
	substr string
}

func (f failingStore) Get(ctx context.Context, key string) ([]byte, error) {
	if strings.Contains(key, f.substr) {
		return nil, errors.New("s3: 503 SlowDown")
	}
	return f.Store.Get(ctx, key)
}

// A decay probe whose checkpoint cannot be read because the store fails is retried; one
// whose checkpoint is corrupt is not.
func TestDecayProbeCheckpointErrors(t *testing.T) {
	a, env, store := setup(t)
	ctx := context.Background()
	plan := execPlan(t, env, workflows.PlanInput{SweepID: "s", ManifestKey: "sweeps/s/manifest.yaml"})
	id := plan.Trials[0].ID
	if _, err := env.ExecuteActivity(workflows.ActivityTrain, workflows.TrainInput{TrialID: id}); err != nil {
		t.Fatal(err)
	}
	probe := func() error {
		_, err := env.ExecuteActivity(workflows.ActivityDecayProbe, workflows.DecayProbeInput{TrialID: id, Step: 2, Decay: probe.Decay{Steps: 2}})
		return err
	}
	a.Store = failingStore{store, "/checkpoints/"}
	var ae *temporal.ApplicationError
	if err := probe(); err == nil || !strings.Contains(err.Error(), "503 SlowDown") || (errors.As(err, &ae) && ae.NonRetryable()) {
		t.Errorf("probe with the store down: %v, want a retryable error", err)
	}
	a.Store = store
	key := "trials/" + id + "/checkpoints/step-00000002.safetensors"
	b, err := store.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := store.Put(ctx, key, b); err != nil {
		t.Fatal(err)
	}
	if err := probe(); !errors.As(err, &ae) || !ae.NonRetryable() || ae.Type() != workflows.ErrorInvalidConfig {
		t.Errorf("probe of a corrupt checkpoint: %v, want a non-retryable %s", err, workflows.ErrorInvalidConfig)
	}
}

// The LR-decay branch and the interpolation end to end on the activities: Plan gives the
// branch to the AdamW trial only and keeps a trained trial without its probes not done;
// LRDecay writes the result that training.LRDecay gives from the same checkpoint,
// read back once stored; the interpolations agree with the branch and the decay probe at
// their shared points; then Plan finds the trials done and BuildTables draws the probes.
func TestProbeActivities(t *testing.T) {
	a, env, store := setup(t)
	ctx := context.Background()
	src := strings.Replace(manifest, "  - {name: sfadamw, lr: 3e-3, betas: [[0.9, 0.99]], c: [vanilla, 50]}",
		"  - {name: sfadamw, lr: 3e-3, betas: [[0.9, 0.99]]}\n  - {name: adamw, lr: 3e-3, betas: [[0.9, 0.95]], schedule: constant}", 1)
	src = strings.Replace(src, "tables:", "probes:\n  decay: {at: [2], steps: 2}\n  lr_decay: {frac: 0.5, at: [2]}\n  interpolate: {from: 2, to: 4, points: 3, decayed: true}\ntables:", 1)
	src = strings.Replace(src, "steps: 4", "steps: 6", 1)
	if err := store.Put(ctx, "sweeps/b/manifest.yaml", []byte(src)); err != nil {
		t.Fatal(err)
	}
	in := workflows.PlanInput{SweepID: "b", ManifestKey: "sweeps/b/manifest.yaml"}
	plan := execPlan(t, env, in)
	var adamw workflows.TrialRef
	for _, r := range plan.Trials {
		cfg, err := a.trialConfig(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Probes.LRDecay == nil || r.Probes.LRDecay.Frac != 0.5 || r.Probes.Decay == nil || r.Probes.Decay.Steps != 2 {
			t.Fatalf("trial %s (%s): %+v; the branch and the decay probe are for every trial", r.ID, cfg.Optimizer.Name, r)
		} else if cfg.Optimizer.Name == training.AdamW {
			adamw = r
		}
		if _, err := env.ExecuteActivity(workflows.ActivityTrain, workflows.TrainInput{TrialID: r.ID}); err != nil {
			t.Fatal(err)
		}
	}
	if p := execPlan(t, env, in); p.Trials[0].Done || p.Trials[1].Done {
		t.Fatalf("trained trials without their probes planned as done: %+v", p.Trials)
	}
	var seen []string // the probes computed, as the progress display sees them
	a.Probe = func(trialID, what string, done bool, err error) {
		seen = append(seen, fmt.Sprintf("%s %s done=%v err=%v", trialID, what, done, err))
	}
	v, err := env.ExecuteActivity(workflows.ActivityLRDecay, workflows.LRDecayInput{TrialID: adamw.ID, Step: 2, LRDecay: probe.LRDecay{Frac: 0.5}})
	var got training.LRDecayResult
	if err == nil {
		err = v.Get(&got)
	}
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := a.trialConfig(ctx, adamw.ID)
	ck, err := checkpoint.Load(ctx, store, "trials/"+adamw.ID+"/checkpoints", 2)
	if err != nil {
		t.Fatal(err)
	}
	st, err := ck.Optimizer(training.StateOptimizer)
	if err != nil {
		t.Fatal(err)
	}
	b, err := a.batches(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want, err := training.LRDecay(ctx, cfg, ck.Params, st, 2, 0.5, b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, *want) || want.Steps != 1 || !(want.After > 0) {
		t.Fatalf("branch %+v, want %+v", got, *want)
	}
	stored, err := store.Get(ctx, "trials/"+adamw.ID+"/probes/lr-decay-0.5-step-00000002.json")
	var back training.LRDecayResult
	if err == nil {
		err = json.Unmarshal(stored, &back)
	}
	if err != nil || !reflect.DeepEqual(back, *want) {
		t.Fatalf("stored branch %+v (%v), want %+v", back, err, *want)
	}
	// interpolation: α = 0 of the AdamW segment to the end of a branch over the 2 steps
	// from 2 to 4 is the loss that branch ends with; α = 1 of the SF-AdamW segment is the
	// loss at x of the checkpoint at 2, which its decay probe measured before decaying
	interpolate := func(id string, decayed bool) training.InterpolationResult {
		t.Helper()
		v, err := env.ExecuteActivity(workflows.ActivityInterpolate, workflows.InterpolateInput{TrialID: id, Interpolation: probe.Interpolation{From: 2, To: 4, Points: 3, Decayed: decayed}})
		var r training.InterpolationResult
		if err == nil {
			err = v.Get(&r)
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Points) != 3 || r.Points[0].Alpha != 0 || r.Points[1].Alpha != 0.5 || r.Points[2].Alpha != 1 {
			t.Fatalf("interpolation %+v: want α = 0, 0.5, 1", r)
		}
		return r
	}
	whole, err := training.LRDecay(ctx, cfg, ck.Params, st, 2, 1, b)
	if err != nil {
		t.Fatal(err)
	}
	if r := interpolate(adamw.ID, true); r.Points[0].Loss != whole.After || r.Iterate != training.IterW {
		t.Errorf("decayed interpolation %+v: at α = 0 want the branch's final loss %v", r, whole.After)
	}
	for _, r := range plan.Trials { // SF-AdamW's branch, by the same activity
		if r.ID != adamw.ID {
			if _, err := env.ExecuteActivity(workflows.ActivityLRDecay, workflows.LRDecayInput{TrialID: r.ID, Step: 2, LRDecay: probe.LRDecay{Frac: 0.5}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, r := range plan.Trials {
		v, err := env.ExecuteActivity(workflows.ActivityDecayProbe, workflows.DecayProbeInput{TrialID: r.ID, Step: 2, Decay: probe.Decay{Steps: 2}})
		var probe training.DecayProbeResult
		if err == nil {
			err = v.Get(&probe)
		}
		if err != nil {
			t.Fatal(err)
		}
		ip := interpolate(r.ID, false)
		if float64(ip.Points[2].Loss) != probe.Before || ip.Iterate != probe.Iterate {
			t.Errorf("trial %s: interpolation at α = 1 %v (%s), want the decay probe's loss before %v (%s)", r.ID, ip.Points[2].Loss, ip.Iterate, probe.Before, probe.Iterate)
		}
	}
	if p := execPlan(t, env, in); !p.Trials[0].Done || !p.Trials[1].Done {
		t.Fatalf("trials with every probe stored planned as not done: %+v", p.Trials)
	}
	for _, want := range []string{
		adamw.ID + " LR-decay branch from step 2 done=false err=<nil>", adamw.ID + " LR-decay branch from step 2 done=true err=<nil>",
		adamw.ID + " interpolation from step 2 to 4 (decayed) done=true err=<nil>", adamw.ID + " decay probe from step 2 done=true err=<nil>",
	} {
		if !slices.Contains(seen, want) {
			t.Errorf("probe progress lacks %q: %q", want, seen)
		}
	}
	if len(seen) != 2*7 { // 2 branches, 3 interpolations, 2 decay probes
		t.Errorf("%d probe progress calls, want 14: %q", len(seen), seen)
	}
	if _, err := env.ExecuteActivity(workflows.ActivityBuildTables, workflows.BuildTablesInput{SweepID: "b", ManifestKey: in.ManifestKey}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"sweeps/act/plots/lr-decay.png", "sweeps/act/plots/decay-probe.svg", "sweeps/act/plots/interpolation.png"} {
		if _, err := store.Get(ctx, k); err != nil {
			t.Errorf("BuildTables wrote no %s: %v", k, err)
		}
	}
}

// The decay probe starts from the iterate asked for: its loss before decaying is, to the
// bit, the loss the training loop measured at that iterate at the checkpoint's step, for
// every iterate of SF-AdamW and AdamW; each iterate's result has a key of its own; an
// iterate the trial does not have fails for good.
func TestDecayProbeIterates(t *testing.T) {
	a, env, store := setup(t)
	ctx := context.Background()
	src := strings.Replace(manifest, "  - {name: sfadamw, lr: 3e-3, betas: [[0.9, 0.99]], c: [vanilla, 50]}",
		"  - {name: sfadamw, lr: 3e-3, betas: [[0.9, 0.99]]}\n  - {name: adamw, lr: 3e-3, betas: [[0.9, 0.95]], schedule: constant}", 1)
	if err := store.Put(ctx, "sweeps/i/manifest.yaml", []byte(src)); err != nil {
		t.Fatal(err)
	}
	plan := execPlan(t, env, workflows.PlanInput{SweepID: "i", ManifestKey: "sweeps/i/manifest.yaml"})
	for _, ref := range plan.Trials {
		if _, err := env.ExecuteActivity(workflows.ActivityTrain, workflows.TrainInput{TrialID: ref.ID}); err != nil {
			t.Fatal(err)
		}
		res, err := trial.ReadResult(ctx, store, ref.ID)
		if err != nil || res == nil {
			t.Fatal(res, err)
		}
		at2 := res.Curves[slices.IndexFunc(res.Curves, func(c training.CurvePoint) bool { return c.Step == 2 })].Val
		cfg, _ := a.trialConfig(ctx, ref.ID)
		for _, it := range append([]string{"", sweeps.IterEWA}, training.Iterates(cfg.Optimizer.Name)...) {
			v, err := env.ExecuteActivity(workflows.ActivityDecayProbe, workflows.DecayProbeInput{TrialID: ref.ID, Step: 2, Decay: probe.Decay{Steps: 1, Iterate: it}})
			var r training.DecayProbeResult
			if err == nil {
				err = v.Get(&r)
			}
			if err != nil {
				t.Fatalf("%s iterate %q: %v", cfg.Optimizer.Name, it, err)
			}
			resolved := map[string]string{"": training.Iterates(cfg.Optimizer.Name)[0], sweeps.IterEWA: "ewa_" + training.Iterates(cfg.Optimizer.Name)[0]}[it]
			want, ok := at2[r.Iterate]
			if !ok || r.Before != want || r.Iterate != cmp.Or(resolved, it) {
				t.Errorf("%s iterate %q: probe from %s before %v, the run's evaluation %v", cfg.Optimizer.Name, it, r.Iterate, r.Before, want)
			}
			if _, err := store.Get(ctx, keys.DecayProbe(ref.ID, 2, it)); err != nil {
				t.Errorf("%s iterate %q: %v", cfg.Optimizer.Name, it, err)
			}
		}
		wrong := training.IterW
		if cfg.Optimizer.Name == training.AdamW {
			wrong = training.IterY
		}
		_, err = env.ExecuteActivity(workflows.ActivityDecayProbe, workflows.DecayProbeInput{TrialID: ref.ID, Step: 2, Decay: probe.Decay{Steps: 1, Iterate: wrong}})
		var ae *temporal.ApplicationError
		if !errors.As(err, &ae) || !ae.NonRetryable() {
			t.Errorf("%s iterate %q: %v, want a non-retryable error", cfg.Optimizer.Name, wrong, err)
		}
	}
}
