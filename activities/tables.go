package activities

// A sweep's bookkeeping on the cpu queue: failures recorded, tables rebuilt.

import (
	"context"
	"errors"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"

	"github.com/sfsweep/sfsweep/report"
	"github.com/sfsweep/sfsweep/sweepclient"
	"github.com/sfsweep/sfsweep/trial"
	"github.com/sfsweep/sfsweep/workflows"
)

// RecordFailed marks a trial failed, so its table cells say so.
func (a *Activities) RecordFailed(ctx context.Context, in workflows.RecordFailedInput) error {
	return trial.WriteFailure(ctx, a.Store, in.TrialID, in.Reason)
}

// NotifyTables signals the sweep's Tables workflow that a result landed (or that the
// sweep is done), starting the workflow if it is not running.
func (a *Activities) NotifyTables(ctx context.Context, in workflows.NotifyInput) error {
	signal, arg := workflows.SignalResult, in.TrialID
	if in.Done {
		signal, arg = workflows.SignalSweepDone, ""
	}
	_, err := a.Client.SignalWithStartWorkflow(ctx, workflows.TablesWorkflowID(in.SweepID), signal, arg,
		client.StartWorkflowOptions{ID: workflows.TablesWorkflowID(in.SweepID), TaskQueue: workflows.QueueCPU},
		workflows.Tables, workflows.TablesInput{SweepID: in.SweepID, ManifestKey: in.ManifestKey})
	return err
}

// TablesOutput lists the objects BuildTables wrote.
type TablesOutput struct {
	Keys []string `json:"keys"`
}

// BuildTables rebuilds every table and plot of the sweep from the results in the store.
func (a *Activities) BuildTables(ctx context.Context, in workflows.BuildTablesInput) (TablesOutput, error) {
	defer keepAlive(ctx, func() any { return "tables" })()
	m, err := a.readManifest(ctx, in.ManifestKey)
	if err != nil {
		return TablesOutput{}, err
	}
	written, err := report.Build(ctx, a.Store, m, report.Options{Result: a.storedResult, SweepID: in.SweepID, Progress: func(n int) { activity.RecordHeartbeat(ctx, n) }})
	if errors.Is(err, report.ErrInvalid) {
		err = invalid(err)
	}
	return TablesOutput{Keys: written}, err
}

// RetireSchedule deletes the sweep's tables schedule when the sweep is no longer running.
func (a *Activities) RetireSchedule(ctx context.Context, in workflows.RetireInput) error {
	return sweepclient.RetireSchedule(ctx, a.Client, in.SweepID, in.ScheduleID)
}
