package activities

import (
	"context"
	"strings"
	"testing"

	"go.temporal.io/sdk/testsuite"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/workflows"
)

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
