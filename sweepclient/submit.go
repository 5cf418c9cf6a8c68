package sweepclient

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/workflows"
)

// Submit starts a sweep: it stores the manifest src under in.ManifestKey, starts the Sweep
// workflow with in on the cpu queue, under the ID in.SweepID, and creates the sweep's
// tables schedule. A sweep whose workflow already runs is joined, not started twice, so
// submitting the same manifest again resumes it. The returned run is the sweep's workflow.
func Submit(ctx context.Context, c client.Client, store blob.Store, src []byte, in workflows.SweepInput) (client.WorkflowRun, error) {
	if err := store.Put(ctx, in.ManifestKey, src); err != nil {
		return nil, fmt.Errorf("store the manifest: %w", err)
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: in.SweepID, TaskQueue: workflows.QueueCPU,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, workflows.Sweep, in)
	if err != nil {
		return nil, fmt.Errorf("start sweep: %w", err)
	}
	// after the workflow, so that the schedule never rebuilds the tables of a sweep that
	// did not start
	if err := EnsureTablesSchedule(ctx, c, in.SweepID, in.ManifestKey); err != nil {
		return run, fmt.Errorf("tables schedule: %w", err)
	}
	return run, nil
}

// Wait waits for a sweep's run to end and returns its result, passing the sweep's progress
// to show every interval meanwhile (a failed query is skipped: the next one may answer).
// It returns ctx's error once ctx is done.
func Wait(ctx context.Context, c client.Client, run client.WorkflowRun, every time.Duration, show func(workflows.SweepProgress)) (workflows.SweepResult, error) {
	var res workflows.SweepResult
	done := make(chan error, 1)
	go func() { done <- run.Get(ctx, &res) }()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			return res, err
		case <-tick.C:
			if p, err := Progress(ctx, c, run.GetID()); err == nil {
				show(p)
			}
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
}
