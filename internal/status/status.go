// Package status is the one vocabulary for the outcome of a trial, shared by training,
// workflows and report.
//
//   - Completed: the trial trained to its end. training.Run sets it in Result.Status
//     (result.json); the Train activity passes it on in TrainOutput, the Trial workflow in
//     TrialResult; report reads it as a finished cell with a value.
//   - Diverged: the loss became non-finite, a result and not a failure. training.Run sets it,
//     with the step in Result.DivergedAt, and it travels like Completed.
//   - Failed: the trial failed after its retries. The Trial workflow sets it in TrialResult
//     and records why (failed.json), from which report sets it on the trial's cell.
//   - Stopped: a search's early stopping ended the trial at a rung (Until), a result of the
//     sweep, never a failure and never retried. The search records it (search state);
//     report sets it on the trial's cell, with the step.
//   - Missing: no outcome yet, not run or still running. Only report sets it, on a cell or
//     trial with neither a result nor a failure.
//
// The values are written as they are in result.json and in Temporal histories: never change
// one. The zero Status, "", is none of them.
package status

// Status is the outcome of a trial, or of a table cell made of trials.
type Status string

// The statuses; see the package documentation for which layer sets each.
const (
	// Completed is a trial trained to its end.
	Completed Status = "completed"
	// Diverged is a trial whose loss became non-finite: a result, not a failure.
	Diverged Status = "diverged"
	// Failed is a trial that failed after its retries.
	Failed Status = "failed"
	// Stopped is a trial that a search's early stopping ended at a rung: a result.
	Stopped Status = "stopped"
	// Missing is a trial or cell with no outcome yet: not run, or still running.
	Missing Status = "missing"
)
