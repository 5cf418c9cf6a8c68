package sweepclient

import (
	"cmp"
	"context"
	"errors"
	"slices"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/sfsweep/sfsweep/workflows"
)

// TrialState is what a trial in flight is doing, read from its workflow's pending
// activity.
type TrialState struct {
	ID    string `json:"id"`
	State string `json:"state"` // one of the Trial* states
	// Queue is the task queue of its pending activity, Device the device it trains on,
	// and Trainer its program trainer's name, if it has one (the queue is the trainer's).
	Queue   string `json:"queue,omitempty"`
	Device  string `json:"device,omitempty"`
	Trainer string `json:"trainer,omitempty"`
	// Refused counts a program's refused metrics lines this attempt, RefusedFirst the
	// first of them, with why.
	Refused      int    `json:"refused,omitempty"`
	RefusedFirst string `json:"refused_first,omitempty"`
	// Attempt of the pending activity, and the error of the last one that failed.
	Attempt     int    `json:"attempt,omitempty"`
	LastFailure string `json:"last_failure,omitempty"`
	// Step and Loss of its training as last heartbeated (0: none yet). Heartbeats reach
	// the server at most every so often, so the step may lag the worker's.
	Step int     `json:"step,omitempty"`
	Loss float64 `json:"loss,omitempty"`
	// Waiting says why a trial admitting is not training yet: "waiting for GPU memory:
	// needs 9.50 GiB, 3.20 GiB free on GPU 2".
	Waiting string `json:"waiting,omitempty"`
	// Worker is the identity of the worker that last ran its pending activity, and GPU
	// the memory of the GPU it trains on there, as last heartbeated (nil off a GPU).
	Worker string               `json:"worker,omitempty"`
	GPU    *workflows.GPUMemory `json:"gpu,omitempty"`
}

// The states of a trial in flight.
const (
	TrialStarting  = "starting"  // no activity scheduled yet
	TrialWaiting   = "waiting"   // no worker polls the queue of its device
	TrialQueued    = "queued"    // workers of its device exist, all busy
	TrialTraining  = "training"  // its Train activity runs
	TrialAdmitting = "admitting" // its Train activity waits for its GPU's memory (Waiting says)
	TrialProbing   = "probing"   // a probe runs
	TrialRetrying  = "retrying"  // an attempt failed; the next starts after the backoff
)

// Progress asks a sweep's workflow for its progress.
func Progress(ctx context.Context, c client.Client, sweepID string) (workflows.SweepProgress, error) {
	var p workflows.SweepProgress
	v, err := c.QueryWorkflow(ctx, sweepID, "", workflows.QueryProgress)
	if err != nil {
		return p, err
	}
	err = v.Get(&p)
	return p, err
}

// TrialStates describes each trial in flight from its workflow's pending activity; a trial
// whose activity waits on a task queue that no worker polls is waiting, not failed.
func TrialStates(ctx context.Context, c client.Client, sweepID string, running []string) ([]TrialState, error) {
	polled := map[string]bool{} // by task queue: a worker polls it
	out := make([]TrialState, 0, len(running))
	for _, id := range running {
		t := TrialState{ID: id, State: TrialStarting}
		d, err := c.DescribeWorkflowExecution(ctx, workflows.TrialWorkflowID(sweepID, id), "")
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) { // the sweep counts it running before its workflow starts
			out = append(out, t)
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, pa := range d.GetPendingActivities() {
			t.Queue = pa.GetActivityOptions().GetTaskQueue().GetName()
			t.Device, t.Trainer = workflows.QueueParts(t.Queue)
			t.Attempt = int(pa.GetAttempt())
			t.LastFailure = ""
			if f := pa.GetLastFailure(); f != nil {
				t.LastFailure = f.GetMessage()
			}
			if pa.GetActivityType().GetName() == workflows.ActivityTrain && pa.GetHeartbeatDetails() != nil {
				var hb workflows.TrainHeartbeat
				if converter.GetDefaultDataConverter().FromPayloads(pa.GetHeartbeatDetails(), &hb) == nil {
					t.Step, t.Loss, t.Waiting, t.GPU = hb.Step, hb.Loss, hb.Waiting, hb.GPU
					t.Refused, t.RefusedFirst = hb.Refused, hb.RefusedFirst
					t.Worker = pa.GetLastWorkerIdentity()
				}
			}
			switch {
			case pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED && t.Waiting != "":
				t.State = TrialAdmitting
			case pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED && pa.GetActivityType().GetName() == workflows.ActivityTrain:
				t.State = TrialTraining
			case pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED:
				t.State = TrialProbing
			case t.LastFailure != "":
				t.State = TrialRetrying
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
				t.State = TrialWaiting
				if has {
					t.State = TrialQueued
				}
			}
			if t.State != TrialQueued {
				break // the most telling state of the trial's activities
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// GPUUse is a GPU that trials in flight train on or wait for: its worker process, its
// memory as one of their last heartbeats saw it (they are a second apart at most), and the
// trials.
type GPUUse struct {
	Worker   string // the identity of its worker process (a GPU's index is its machine's)
	Memory   workflows.GPUMemory
	Training []string // trials admitted
	Waiting  []string // trials waiting for its memory
}

// GPUs groups the trials in flight by the GPU they heartbeat from, by GPU name then
// worker; trials off a GPU are in none.
func GPUs(trials []TrialState) []GPUUse {
	var out []GPUUse
	for _, t := range trials {
		if t.GPU == nil {
			continue
		}
		i := slices.IndexFunc(out, func(g GPUUse) bool { return g.Worker == t.Worker && g.Memory.Name == t.GPU.Name })
		if i < 0 {
			out = append(out, GPUUse{Worker: t.Worker, Memory: *t.GPU})
			i = len(out) - 1
		}
		if t.State == TrialAdmitting {
			out[i].Waiting = append(out[i].Waiting, t.ID)
		} else {
			out[i].Training = append(out[i].Training, t.ID)
		}
	}
	slices.SortFunc(out, func(a, b GPUUse) int {
		return cmp.Or(cmp.Compare(a.Memory.Name, b.Memory.Name), cmp.Compare(a.Worker, b.Worker))
	})
	return out
}
