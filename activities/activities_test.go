package activities

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/training"
	_ "github.com/sfsweep/sfsweep/training/native"
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
	if err := v.Get(&out); err != nil || out.Status != training.StatusCompleted || len(out.Checkpoints) != 1 || out.Checkpoints[0] != 2 {
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
	if _, err := env.ExecuteActivity(workflows.ActivityDecayProbe, workflows.DecayProbeInput{TrialID: id, Step: 2, Steps: 2}); err != nil {
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
