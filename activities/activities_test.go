package activities

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/internal/probe"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/checkpoint"
	_ "github.com/sfsweep/sfsweep/training/native"
	"github.com/sfsweep/sfsweep/trial"
	"github.com/sfsweep/sfsweep/workflows"
)

const manifest = `name: act
model_config: {arch: llama, vocab: 257, dim: 16, layers: 1, heads: 2, context: 16, hidden: 16, batch: 2}
data: {default: byte, max_bytes: 200000}
batch_tokens: 32
steps: 4
eval_every: 2
eval_seqs: 4
test_seqs: 4
checkpoint_every: 2
seeds: [1]
optimizers:
  - {name: sfadamw, lr: 3e-3, betas: [[0.9, 0.99]], c: [vanilla, 50]}
tables:
  - {kind: c_sensitivity, name: act}
`

func setup(t *testing.T) (*Activities, *testsuite.TestActivityEnvironment, blob.Store) {
	store, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(context.Background(), "sweeps/s/manifest.yaml", []byte(manifest)); err != nil {
		t.Fatal(err)
	}
	a := &Activities{Store: store, CacheDir: t.TempDir()}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(a.Plan)
	env.RegisterActivity(a.Train)
	env.RegisterActivity(a.DecayProbe)
	env.RegisterActivityWithOptions(a.LRDecay, activity.RegisterOptions{Name: workflows.ActivityLRDecay})
	env.RegisterActivity(a.Interpolate)
	env.RegisterActivity(a.BuildTables)
	return a, env, store
}

// Plan, Train, DecayProbe and BuildTables on a local store: configs written, a result
// trained once and then found, the probe and the table written; an invalid trial is a
// non-retryable error.
func TestActivities(t *testing.T) {
	_, env, store := setup(t)
	ctx := context.Background()
	v, err := env.ExecuteActivity(workflows.ActivityPlan, workflows.PlanInput{SweepID: "s", ManifestKey: "sweeps/s/manifest.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	var plan workflows.PlanOutput
	if err := v.Get(&plan); err != nil || len(plan.Trials) != 2 || plan.Trials[0].Done {
		t.Fatalf("plan %+v, %v", plan, err)
	}
	id := plan.Trials[0].ID
	if _, err := store.Get(ctx, "trials/"+id+"/config.json"); err != nil {
		t.Fatal("Plan wrote no config:", err)
	}
	v, err = env.ExecuteActivity(workflows.ActivityTrain, workflows.TrainInput{TrialID: id})
	if err != nil {
		t.Fatal(err)
	}
	var out workflows.TrainOutput
	if err := v.Get(&out); err != nil || out.Status != status.Completed || len(out.Checkpoints) != 1 || out.Checkpoints[0] != 2 {
		t.Fatalf("train %+v, %v", out, err)
	}
	first, _ := store.Get(ctx, "trials/"+id+"/result.json")
	// a second attempt finds the result and trains nothing
	if _, err := env.ExecuteActivity(workflows.ActivityTrain, workflows.TrainInput{TrialID: id}); err != nil {
		t.Fatal(err)
	}
	again, _ := store.Get(ctx, "trials/"+id+"/result.json")
	if string(first) != string(again) {
		t.Error("a second Train rewrote the result")
	}
	v, err = env.ExecuteActivity(workflows.ActivityPlan, workflows.PlanInput{SweepID: "s", ManifestKey: "sweeps/s/manifest.yaml"})
	if err == nil {
		err = v.Get(&plan)
	}
	if err != nil || !plan.Trials[0].Done || plan.Trials[1].Done {
		t.Errorf("replanned %+v, %v: the trained trial must be done", plan, err)
	}
	if _, err := env.ExecuteActivity(workflows.ActivityDecayProbe, workflows.DecayProbeInput{TrialID: id, Step: 2, Decay: probe.Decay{Steps: 2}}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Get(ctx, "trials/"+id+"/probes/decay-step-00000002.json"); err != nil {
		t.Error(err)
	}
	v, err = env.ExecuteActivity(workflows.ActivityBuildTables, workflows.BuildTablesInput{SweepID: "s", ManifestKey: "sweeps/s/manifest.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	var tables TablesOutput
	if err := v.Get(&tables); err != nil {
		t.Fatal(err)
	}
	md, err := store.Get(ctx, "sweeps/act/tables/act.md")
	if err != nil || !strings.Contains(string(md), "| 0.9 | ") || !strings.Contains(string(md), "--") {
		t.Errorf("table (%v):\n%s", err, md)
	}

	// a trial whose config is not in the store cannot succeed on retry
	_, err = env.ExecuteActivity(workflows.ActivityTrain, workflows.TrainInput{TrialID: "0123456789abcdef"})
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || !ae.NonRetryable() || ae.Type() != workflows.ErrorInvalidConfig {
		t.Errorf("Train of a missing trial: %v, want a non-retryable %s", err, workflows.ErrorInvalidConfig)
	}
}

// A paged plan is the inline plan cut into pages in the store: 2,002 trials (two C values
// by 1,001 seeds) make three pages, which ReadPlan returns in order.
func TestPlanPaged(t *testing.T) {
	a, env, store := setup(t)
	env.RegisterActivity(a.ReadPlan)
	ctx := context.Background()
	seeds := make([]string, 1001)
	for i := range seeds {
		seeds[i] = strconv.Itoa(i + 1)
	}
	big := strings.Replace(manifest, "seeds: [1]", "seeds: ["+strings.Join(seeds, ", ")+"]", 1)
	if err := store.Put(ctx, "sweeps/big/manifest.yaml", []byte(big)); err != nil {
		t.Fatal(err)
	}
	in := workflows.PlanInput{SweepID: "big", ManifestKey: "sweeps/big/manifest.yaml"}
	inline := execPlan(t, env, in)
	in.Paged = true
	paged := execPlan(t, env, in)
	if len(inline.Trials) != 2002 || paged.Total != 2002 || paged.Skipped != 0 || len(paged.Trials) != 0 ||
		paged.PageSize != workflows.PlanPageSize || !strings.HasPrefix(paged.Prefix, "sweeps/big/plans/") {
		t.Fatalf("inline plan of %d trials; paged plan %+v", len(inline.Trials), paged)
	}
	var read []workflows.TrialRef
	for n := 0; n*paged.PageSize < paged.Total; n++ {
		v, err := env.ExecuteActivity(workflows.ActivityReadPlan, workflows.ReadPlanInput{Prefix: paged.Prefix, Page: n})
		var page []workflows.TrialRef
		if err == nil {
			err = v.Get(&page)
		}
		if err != nil {
			t.Fatal(err)
		}
		if want := min(paged.PageSize, paged.Total-n*paged.PageSize); len(page) != want {
			t.Errorf("page %d holds %d trials, want %d", n, len(page), want)
		}
		read = append(read, page...)
	}
	if !reflect.DeepEqual(read, inline.Trials) {
		t.Error("the pages read back differ from the inline plan")
	}
	if _, err := env.ExecuteActivity(workflows.ActivityReadPlan, workflows.ReadPlanInput{Prefix: paged.Prefix, Page: 3}); !errors.Is(err, blob.ErrNotFound) && (err == nil || !strings.Contains(err.Error(), "not found")) {
		t.Errorf("a page past the end: %v", err)
	}
}

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
		if isAdamW := cfg.Optimizer.Name == training.AdamW; isAdamW != (r.Probes.LRDecay != nil && r.Probes.LRDecay.Frac == 0.5) || r.Probes.Decay == nil || r.Probes.Decay.Steps != 2 {
			t.Fatalf("trial %s (%s): %+v; the branch is for adamw trials only, the decay probe for all", r.ID, cfg.Optimizer.Name, r)
		} else if isAdamW {
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
	if len(seen) != 2*6 { // a branch, 3 interpolations, 2 decay probes
		t.Errorf("%d probe progress calls, want 12: %q", len(seen), seen)
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

// countingStore counts the Gets of keys ending in a suffix.
type countingStore struct {
	blob.Store
	suffix string
	gets   *int
}

func (c countingStore) Get(ctx context.Context, key string) ([]byte, error) {
	if strings.HasSuffix(key, c.suffix) {
		*c.gets++
	}
	return c.Store.Get(ctx, key)
}

// A worker reads each result once: later table builds take it from memory, and the
// tables they write are the same.
func TestBuildTablesReadsResultsOnce(t *testing.T) {
	_, env, store := setup(t)
	ctx := context.Background()
	plan := execPlan(t, env, workflows.PlanInput{SweepID: "s", ManifestKey: "sweeps/s/manifest.yaml"})
	for _, tr := range plan.Trials {
		if _, err := env.ExecuteActivity(workflows.ActivityTrain, workflows.TrainInput{TrialID: tr.ID}); err != nil {
			t.Fatal(err)
		}
	}
	var gets int
	fresh := &Activities{Store: countingStore{store, "/result.json", &gets}}
	var suite testsuite.WorkflowTestSuite
	freshEnv := suite.NewTestActivityEnvironment()
	freshEnv.RegisterActivity(fresh.BuildTables)
	in := workflows.BuildTablesInput{SweepID: "s", ManifestKey: "sweeps/s/manifest.yaml"}
	if _, err := freshEnv.ExecuteActivity(workflows.ActivityBuildTables, in); err != nil {
		t.Fatal(err)
	}
	first, _ := store.Get(ctx, "sweeps/act/tables/act.md")
	if gets != len(plan.Trials) {
		t.Errorf("the first build read %d results, want %d", gets, len(plan.Trials))
	}
	gets = 0
	if _, err := freshEnv.ExecuteActivity(workflows.ActivityBuildTables, in); err != nil {
		t.Fatal(err)
	}
	second, _ := store.Get(ctx, "sweeps/act/tables/act.md")
	if gets != 0 || string(first) != string(second) || len(first) == 0 {
		t.Errorf("the second build read %d results; tables equal %v", gets, string(first) == string(second))
	}
}

// execPlan runs the Plan activity.
func execPlan(t *testing.T, env *testsuite.TestActivityEnvironment, in workflows.PlanInput) workflows.PlanOutput {
	t.Helper()
	v, err := env.ExecuteActivity(workflows.ActivityPlan, in)
	var out workflows.PlanOutput
	if err == nil {
		err = v.Get(&out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Plan routes each trial to the training queue of its backend's device; a trial whose
// backend this build lacks (reached through the queue of older plans) is one attempt, not
// retried, with an error that names the backend and how to build it in.
func TestBackendRouting(t *testing.T) {
	_, env, store := setup(t)
	ctx := context.Background()
	cuda := strings.Replace(manifest, "name: act\n", "name: act\nbackend: cuda-tf32\n", 1)
	if cuda == manifest {
		t.Fatal("the test manifest has no name line")
	}
	if err := store.Put(ctx, "sweeps/cuda/manifest.yaml", []byte(cuda)); err != nil {
		t.Fatal(err)
	}
	for key, queue := range map[string]string{"sweeps/s/manifest.yaml": "train-cpu", "sweeps/cuda/manifest.yaml": "train-cuda"} {
		plan := execPlan(t, env, workflows.PlanInput{SweepID: "s", ManifestKey: key})
		for _, tr := range plan.Trials {
			if tr.Queue != queue {
				t.Errorf("%s: trial %s planned on queue %q, want %q", key, tr.ID, tr.Queue, queue)
			}
		}
		if key != "sweeps/cuda/manifest.yaml" {
			continue
		}
		_, err := env.ExecuteActivity(workflows.ActivityTrain, workflows.TrainInput{TrialID: plan.Trials[0].ID})
		var ae *temporal.ApplicationError
		if !errors.As(err, &ae) || !ae.NonRetryable() || ae.Type() != workflows.ErrorInvalidConfig ||
			!strings.Contains(err.Error(), `backend = "cuda-tf32": not in this build`) || !strings.Contains(err.Error(), "-tags cuda") {
			t.Errorf("Train of a cuda trial on a cpu build: %v, want a non-retryable error naming the backend and the build", err)
		}
		if keys, err := store.List(ctx, "trials/"+plan.Trials[0].ID+"/checkpoints/"); err != nil || len(keys) > 0 {
			t.Errorf("the refused trial wrote checkpoints %v (%v)", keys, err)
		}
	}
}

// Out of device memory: a trial larger than the device is never retried; one that fits
// but found the memory taken is retried after OutOfMemoryRetryDelay. Both keep the error.
func TestClassifyOutOfMemory(t *testing.T) {
	for _, fits := range []bool{false, true} {
		oom := &backend.OutOfMemoryError{Backend: "cuda", Need: 10 << 30, Total: 8 << 30, Free: 7 << 30, What: "llama", Err: errors.New("CUDA_ERROR_OUT_OF_MEMORY")}
		if fits {
			oom.Total = 80 << 30
		}
		err := classify(fmt.Errorf("engine: %w", oom))
		var ae *temporal.ApplicationError
		if !errors.As(err, &ae) || ae.Type() != ErrorOutOfMemory || ae.NonRetryable() == fits || ae.NextRetryDelay() != OutOfMemoryRetryDelay {
			t.Errorf("fits %v: %v (%+v)", fits, err, ae)
		}
		if !strings.Contains(err.Error(), "needs 10.00 GiB") {
			t.Errorf("fits %v: %v does not say what the trial needs", fits, err)
		}
	}
	plain := errors.New("connection reset")
	if classify(plain) != plain {
		t.Error("classify changed a transient error")
	}
}
