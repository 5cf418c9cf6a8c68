package workflows

import (
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/worker"
)

// The histories under testdata/histories were recorded from a real sweep on the embedded
// server (sfsweep run -record-histories DIR, the manifest of cmd/sfsweep's end-to-end
// test): a change to a workflow that would break running sweeps fails to replay them.
// sweep.json predates the stored plan (its runs carry the plan inline), sweep-paged.json
// reads it from the store; tables.json predates the bound on the debounce,
// tables-max-wait.json has it; trial-probes.json is an AdamW trial with a decay probe, two
// LR-decay branches and both interpolations (sfsweep run of a manifest with every probe).
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob("testdata/histories/*.json")
	if err != nil || len(files) < 3 {
		t.Fatalf("%d recorded histories (%v)", len(files), err)
	}
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflow(Sweep)
	r.RegisterWorkflow(Trial)
	r.RegisterWorkflow(Tables)
	for _, f := range files {
		if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
