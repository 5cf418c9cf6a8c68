package activities

import (
	"context"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/sfsweep/sfsweep/internal/blob"
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
	env.RegisterActivityWithOptions(a.LRDecay, activity.RegisterOptions{Name: workflows.ActivityLRDecay})
	env.RegisterActivity(a.Interpolate)
	env.RegisterActivity(a.BuildTables)
	return a, env, store
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
