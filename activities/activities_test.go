package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/sfsweep/sfsweep/internal/probe"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/workflows"
)

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
