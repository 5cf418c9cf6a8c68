package activities

// Plan: a sweep's trials, their configs in the store and which results exist.

import (
	"context"
	"encoding/json"
	"fmt"

	"go.temporal.io/sdk/activity"

	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/trial"
	"github.com/sfsweep/sfsweep/workflows"
)

// Plan expands the manifest, writes each trial's config.json where missing, and reports
// which trials already have a result (those are never recomputed).
func (a *Activities) Plan(ctx context.Context, in workflows.PlanInput) (workflows.PlanOutput, error) {
	defer keepAlive(ctx, func() any { return "plan" })()
	m, err := a.readManifest(ctx, in.ManifestKey)
	if err != nil {
		return workflows.PlanOutput{}, err
	}
	if m.Searched() {
		return workflows.PlanOutput{Search: true}, nil // the Decide activity decides as it goes
	}
	trials, err := m.Expand()
	if err != nil {
		return workflows.PlanOutput{}, invalid(err)
	}
	out := workflows.PlanOutput{Trials: make([]workflows.TrialRef, 0, len(trials))}
	listed, err := trial.List(ctx, a.Store)
	if err != nil {
		return out, err
	}
	for i, t := range trials {
		ref := workflows.TrialRef{ID: t.ID, Queue: trainQueue(t.Config)}
		tp := m.ProbesFor(t)
		ref.Probes = tp
		if ref.Done = listed.HasResult(t.ID); ref.Done && len(listed.MissingProbes(t.ID, tp)) > 0 {
			// probes asked for and missing: the trial runs again (Train finds its result)
			// to add them, unless it did not complete, which has no probes
			r, err := a.storedResult(ctx, t.ID)
			if err != nil {
				return out, err
			}
			ref.Done = r != nil && r.Status != status.Completed
		}
		if !listed.HasConfig(t.ID) {
			if err := trial.WriteConfig(ctx, a.Store, t.ID, t.Config); err != nil {
				return out, err
			}
		}
		out.Trials = append(out.Trials, ref)
		if i%64 == 0 {
			activity.RecordHeartbeat(ctx, i)
		}
	}
	if in.Paged {
		return a.storePlan(ctx, in.SweepID, out.Trials)
	}
	return out, nil
}

// trainQueue is the task queue of a trial's training and probes: that of its backend's
// route (its device's, or its own for an arithmetic older builds lack), or for a program
// trainer's trial, that of its trainer at its identity on the device, or on gpus: N of it
// (workflows.TrainerQueue, workflows.GPUsDevice), which only workers that run it poll.
func trainQueue(cfg training.Config) string {
	b, _ := backend.Lookup(cfg.WithDefaults().Backend) // the config was validated
	if t := cfg.Trainer; t != nil {
		return workflows.TrainerQueue(workflows.GPUsDevice(b.Device, cfg.WithDefaults().GPUs), t.Name, t.Identity)
	}
	return workflows.TrainQueue(backend.RouteOf(b))
}

// storePlan writes a plan to the store in pages of workflows.PlanPageSize trials, under a
// prefix of the Sweep workflow's run (a sweep submitted again plans anew and never
// rewrites the pages a running sweep reads).
func (a *Activities) storePlan(ctx context.Context, sweepID string, trials []workflows.TrialRef) (workflows.PlanOutput, error) {
	out := workflows.PlanOutput{
		Prefix:   keys.PlanPrefix(sweepID, activity.GetInfo(ctx).WorkflowExecution.RunID),
		PageSize: workflows.PlanPageSize, Total: len(trials),
	}
	for _, t := range trials {
		if t.Done {
			out.Skipped++
		}
	}
	for n := 0; n*out.PageSize < len(trials); n++ {
		b, err := json.Marshal(trials[n*out.PageSize : min((n+1)*out.PageSize, len(trials))])
		if err != nil {
			return workflows.PlanOutput{}, err
		}
		if err := a.Store.Put(ctx, keys.PlanPage(out.Prefix, n), b); err != nil {
			return workflows.PlanOutput{}, err
		}
	}
	return out, nil
}

// ReadPlan returns a page of a stored plan.
func (a *Activities) ReadPlan(ctx context.Context, in workflows.ReadPlanInput) ([]workflows.TrialRef, error) {
	b, err := a.Store.Get(ctx, keys.PlanPage(in.Prefix, in.Page))
	if err != nil {
		return nil, err
	}
	var page []workflows.TrialRef
	if err := json.Unmarshal(b, &page); err != nil {
		return nil, fmt.Errorf("plan page %s: %w", keys.PlanPage(in.Prefix, in.Page), err)
	}
	return page, nil
}
