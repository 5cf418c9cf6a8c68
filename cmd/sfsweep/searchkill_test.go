package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/search"
	"github.com/sfsweep/sfsweep/workflows"
)

// promotionKillManifest is killManifest as a search of its one configuration under the
// median rule with a rung at step 50: with no configuration completed, the rule lets it go
// on, so it trains to the rung, then is promoted and resumes from its checkpoint there to
// the end, checkpointing every 50 steps on the way.
var promotionKillManifest = strings.Replace(killManifest, "tables:\n",
	"search:\n  method: grid\n  early_stopping: {rule: median, rungs: [50]}\ntables:\n", 1)

// A gpu worker process is killed (SIGKILL) while a promoted segment trains: the trial
// reached its rung at step 50, was promoted, resumed from the rung's checkpoint and is past
// its next checkpoint (step 100). A second worker takes the segment's Train activity over
// and resumes from the newest checkpoint; the trial's result.json and curves.jsonl must be
// bitwise those of the same configuration trained uninterrupted, and the search must
// record the configuration completed.
func TestWorkerKilledMidPromotion(t *testing.T) {
	ctx := serverTest(t, 3*time.Minute, "starts the embedded Temporal server, worker processes, and trains")
	lab := newGPULab(ctx, t, promotionKillManifest)
	const rung, ckEvery = 50, 50

	workerA := startProcess(ctx, t, lab.dir, "worker A", "worker", "-queue", "gpu", "-cache", lab.cache)
	sweepID := lab.submit(ctx, t, lab.manifest)
	// past the promoted segment's first checkpoint: it trains from the rung, not from 0
	lab.waitPastCheckpoint(ctx, t, rung+ckEvery, workerA)
	workerA.kill(t)
	killStep := lastCurveStep(lab.objects)

	workerB := startProcess(ctx, t, lab.dir, "worker B", "worker", "-queue", "gpu", "-cache", lab.cache)
	defer workerB.interrupt(t)
	var res workflows.SweepResult
	if err := lab.tc.GetWorkflow(ctx, sweepID, "").Get(ctx, &res); err != nil {
		t.Fatalf("sweep: %v\nworker B:\n%s\ncpu worker:\n%s", err, workerB.output(), lab.cpuLog.String())
	}
	if p := res.Progress; p.Completed != 1 || p.Configs["completed"] != 1 {
		t.Fatalf("sweep progress %+v, want its one configuration completed", p)
	}

	got := lab.sameAsUninterrupted(ctx, t)
	if got.Resumed <= rung || got.Resumed > killStep {
		t.Errorf("resumed_from = %d, want a checkpoint of the promoted segment, in (%d, %d] (the kill's step)", got.Resumed, rung, killStep)
	}
	// the promoted segment's Train activity was the one retried
	segment := workflows.SegmentWorkflowID(sweepID, lab.trial.ID, lab.want.Steps)
	if attempt, _ := trainAttempt(ctx, t, lab.tc, segment); attempt < 2 {
		t.Errorf("the promoted segment's Train activity completed on attempt %d: the kill caused no retry", attempt)
	}
	if attempt, _ := trainAttempt(ctx, t, lab.tc, workflows.SegmentWorkflowID(sweepID, lab.trial.ID, rung)); attempt != 1 {
		t.Errorf("the segment to the rung completed on attempt %d, want 1: the kill came after it", attempt)
	}
	var st search.Snapshot
	if b, err := os.ReadFile(filepath.Join(lab.gw.Root(), lab.gw.Bucket(), filepath.FromSlash(keys.SearchState(sweepID)))); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if c := st.State.Candidates; len(c) != 1 || c[0].Status != search.StatusCompleted || c[0].Values[rung] == 0 {
		t.Errorf("search state %+v: want its configuration completed, with its value at the rung", c)
	}
	t.Logf("killed at step %d of the promoted segment (from the rung at %d), resumed from step %d", killStep, rung, got.Resumed)
}
