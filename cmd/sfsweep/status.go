package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/sfsweep/sfsweep/workflows"
)

// sweepStatus is what status prints: the sweep's progress and the state of each trial in
// flight.
type sweepStatus struct {
	workflows.SweepProgress
	Trials []trialStatus `json:"trials,omitempty"`
}

// trialStatus is the state of a trial in flight, from its workflow's pending activity.
type trialStatus struct {
	ID    string `json:"id"`
	State string `json:"state"` // starting, waiting (no worker serves its device), queued, training, probing, retrying
	// Queue is the task queue of its pending activity and Device the device it trains on.
	Queue  string `json:"queue,omitempty"`
	Device string `json:"device,omitempty"`
	// Attempt of the pending activity, and the error of the last one that failed.
	Attempt     int    `json:"attempt,omitempty"`
	LastFailure string `json:"last_failure,omitempty"`
}

// Trial states.
const (
	trialStarting = "starting" // no activity scheduled yet
	trialWaiting  = "waiting"  // no worker polls the queue of its device
	trialQueued   = "queued"   // workers of its device exist, all busy
	trialTraining = "training" // its Train activity runs
	trialProbing  = "probing"  // a probe runs
	trialRetrying = "retrying" // an attempt failed; the next starts after the backoff
)

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("status", stderr)
	var r remote
	r.flags(fs)
	asJSON := fs.Bool("json", false, "print the progress as JSON")
	follow := fs.Bool("follow", false, "print the progress every few seconds until the sweep ends")
	id, c, err := r.sweepClient(ctx, fs, args, "status")
	if err != nil {
		return err
	}
	defer c.Close()
	for {
		v, err := c.QueryWorkflow(ctx, id, "", workflows.QueryProgress)
		if err != nil {
			return fmt.Errorf("status %s: %w", id, err)
		}
		var st sweepStatus
		if err := v.Get(&st.SweepProgress); err != nil {
			return err
		}
		if st.Trials, err = trialStates(ctx, c, id, st.Running); err != nil {
			return fmt.Errorf("status %s: %w", id, err)
		}
		if *asJSON {
			b, _ := json.Marshal(st)
			fmt.Fprintln(stdout, string(b))
		} else {
			printStatus(stdout, id, st)
		}
		if !*follow || st.Done() {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(5 * time.Second):
		}
	}
}

func printStatus(w io.Writer, id string, st sweepStatus) {
	p := st.SweepProgress
	if p.Configs != nil {
		fmt.Fprintf(w, "%s: a search of %d configurations so far (%s); %d trials completed, %d diverged, %d failed, %d running\n",
			id, sum(p.Configs), countsText(p.Configs), p.Completed, p.Diverged, p.Failed, len(p.Running))
	} else {
		fmt.Fprintf(w, "%s: %d/%d trials done (%d completed, %d diverged, %d failed, %d had results), %d running\n",
			id, p.Completed+p.Diverged+p.Failed+p.Skipped, p.Total, p.Completed, p.Diverged, p.Failed, p.Skipped, len(p.Running))
	}
	if len(p.Engines) > 1 {
		var parts []string
		for _, a := range slices.Sorted(maps.Keys(p.Engines)) {
			parts = append(parts, fmt.Sprintf("%s (%d)", a, p.Engines[a]))
		}
		fmt.Fprintf(w, "  results from engines of different arithmetic: %s; cells may differ in their last digits\n", strings.Join(parts, ", "))
	}
	for _, t := range st.Trials {
		line := fmt.Sprintf("  trial %s: %s", t.ID, t.State)
		switch t.State {
		case trialWaiting:
			line += fmt.Sprintf(" for a worker of device %s: none polls task queue %s (start sfsweep worker -queue gpu from a build that has a %s backend)", t.Device, t.Queue, t.Device)
		case trialQueued:
			line += fmt.Sprintf(" on task queue %s: its workers are busy", t.Queue)
		}
		if t.Attempt > 1 {
			line += fmt.Sprintf(" (attempt %d)", t.Attempt)
		}
		if t.LastFailure != "" {
			line += "; last failure: " + t.LastFailure
		}
		fmt.Fprintln(w, line)
	}
}

// trialStates describes each trial in flight from its workflow's pending activity; a trial
// whose activity waits on a task queue that no worker polls is waiting, not failed.
func trialStates(ctx context.Context, c client.Client, sweepID string, running []string) ([]trialStatus, error) {
	polled := map[string]bool{} // by task queue: a worker polls it
	var out []trialStatus
	for _, id := range running {
		d, err := c.DescribeWorkflowExecution(ctx, workflows.TrialWorkflowID(sweepID, id), "")
		if err != nil {
			return nil, err
		}
		t := trialStatus{ID: id, State: trialStarting}
		for _, pa := range d.GetPendingActivities() {
			t.Queue = pa.GetActivityOptions().GetTaskQueue().GetName()
			t.Device, _ = strings.CutPrefix(t.Queue, "train-")
			t.Attempt = int(pa.GetAttempt())
			if f := pa.GetLastFailure(); f != nil {
				t.LastFailure = f.GetMessage()
			}
			switch {
			case pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED && pa.GetActivityType().GetName() == workflows.ActivityTrain:
				t.State = trialTraining
			case pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED:
				t.State = trialProbing
			case t.LastFailure != "":
				t.State = trialRetrying
			default:
				has, ok := polled[t.Queue]
				if !ok {
					q, err := c.DescribeTaskQueue(ctx, t.Queue, enumspb.TASK_QUEUE_TYPE_ACTIVITY)
					if err != nil {
						return nil, err
					}
					has = len(q.GetPollers()) > 0
					polled[t.Queue] = has
				}
				t.State = trialWaiting
				if has {
					t.State = trialQueued
				}
			}
			if t.State != trialQueued {
				break // the most telling state of the trial's activities
			}
		}
		out = append(out, t)
	}
	return out, nil
}
