// Package sweepclient is the client side of sfsweep's Temporal workflows: what a command
// or an activity does to a sweep through a Temporal client rather than from inside a
// workflow. It submits a sweep (its manifest stored, its workflow started, its tables
// schedule created: Submit), waits for it (Wait), asks its progress (Progress) and the state
// of its trials in flight (TrialStates), and retires its tables schedule once it has ended.
package sweepclient

import (
	"context"
	"errors"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/sfsweep/sfsweep/workflows"
)

// TablesEvery is how often a sweep's tables schedule rebuilds its tables.
const TablesEvery = 15 * time.Minute

// EnsureTablesSchedule creates the sweep's tables schedule if it does not exist: every
// TablesEvery it runs RegenerateTables, so the tables catch up even if a result's signal
// was lost. The schedule retires itself once the sweep has ended.
func EnsureTablesSchedule(ctx context.Context, c client.Client, sweepID, manifestKey string) error {
	id := workflows.TablesScheduleID(sweepID)
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:      id,
		Spec:    client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: TablesEvery}}},
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		Action: &client.ScheduleWorkflowAction{
			ID: id + "/run", Workflow: workflows.RegenerateTables, TaskQueue: workflows.QueueCPU,
			Args: []any{workflows.BuildTablesInput{SweepID: sweepID, ManifestKey: manifestKey}},
		},
	})
	if errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return nil
	}
	return err
}

// RetireSchedule deletes the schedule of a sweep once the sweep's workflow no longer runs;
// while it runs, it does nothing.
func RetireSchedule(ctx context.Context, c client.Client, sweepID, scheduleID string) error {
	d, err := c.DescribeWorkflowExecution(ctx, sweepID, "")
	if err != nil {
		return err
	}
	if d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return nil
	}
	err = c.ScheduleClient().GetHandle(ctx, scheduleID).Delete(ctx)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil
	}
	return err
}
