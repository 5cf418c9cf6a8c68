package workflows

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/sfsweep/sfsweep/internal/probe"
	"github.com/sfsweep/sfsweep/internal/status"
)

// Trial trains one trial on the training queue of its device, runs its probes (decay
// probes, LR-decay branches, checkpoint interpolation), and tells the Tables workflow
// that its result landed. A trial that fails after its retries is recorded as failed
// (and the workflow still completes, so the sweep goes on); a diverged one is a result.
func Trial(ctx workflow.Context, in TrialInput) (TrialResult, error) {
	return newTrial(ctx, in).run()
}

// trial is a run of the Trial workflow.
type trial struct {
	ctx workflow.Context
	in  TrialInput
	// gpu runs the training and the probes, on the trial's training queue; cpu the
	// bookkeeping.
	gpu, cpu    workflow.Context
	checkpoints []int // the steps of the checkpoints training kept
	res         TrialResult
}

// newTrial begins a run of Trial with in.
func newTrial(ctx workflow.Context, in TrialInput) *trial {
	hb := in.HeartbeatTimeout
	if hb <= 0 {
		hb = DefaultHeartbeatTimeout
	}
	queue := in.Trial.Queue
	if queue == "" {
		queue = QueueGPU
	}
	return &trial{
		ctx: ctx,
		in:  in,
		// no schedule-to-start limit: a trial whose device no worker serves waits for one
		gpu: workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			TaskQueue: queue, StartToCloseTimeout: trainStartToClose, HeartbeatTimeout: hb, RetryPolicy: in.Retry.Policy(),
		}),
		cpu: workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			TaskQueue: QueueCPU, StartToCloseTimeout: quickStartToClose, RetryPolicy: RetryQuick,
		}),
		res: TrialResult{TrialID: in.Trial.ID},
	}
}

// run is the workflow: train (to the end, or to a search's rung), probe a completed
// trial, notify the tables.
func (t *trial) run() (TrialResult, error) {
	if err := t.train(); err != nil {
		return t.res, err
	}
	if t.res.Status == status.Completed {
		if err := t.probe(); err != nil {
			return t.res, err
		}
	}
	if err := workflow.ExecuteActivity(t.cpu, ActivityNotifyTables, NotifyInput{SweepID: t.in.SweepID, ManifestKey: t.in.ManifestKey, TrialID: t.in.Trial.ID}).Get(t.ctx, nil); err != nil {
		return t.res, fmt.Errorf("notify tables: %w", err)
	}
	return t.res, nil
}

// train runs the Train activity. A training that fails after its retries is recorded
// failed, and is no error of the workflow's unless it was canceled.
func (t *trial) train() error {
	var out TrainOutput
	err := workflow.ExecuteActivity(t.gpu, ActivityTrain, TrainInput{TrialID: t.in.Trial.ID, Until: t.in.Until, StallTimeout: t.in.StallTimeout}).Get(t.ctx, &out)
	if err == nil {
		t.res.Status, t.res.DivergedAt, t.res.Arithmetic, t.res.Step = out.Status, out.DivergedAt, out.Arithmetic, out.Step
		t.checkpoints = out.Checkpoints
		return nil
	}
	if temporal.IsCanceledError(err) || errors.Is(t.ctx.Err(), workflow.ErrCanceled) {
		return err
	}
	t.res.Status, t.res.Error = status.Failed, failureMessage(err)
	return workflow.ExecuteActivity(t.cpu, ActivityRecordFailed, RecordFailedInput{TrialID: t.in.Trial.ID, Reason: t.res.Error}).Get(t.ctx, nil)
}

// failureMessage is why a training failed, once: the message of the activity's own error,
// without the chain of wrappers Temporal's errors print (each repeats its cause's text),
// or the whole error where it carries none (a timeout).
func failureMessage(err error) string {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) && ae.Message() != "" {
		return ae.Message()
	}
	return err.Error()
}

// probe runs the probes of a completed trial, each kind once the one before has ended:
// decay probes, LR-decay branches, interpolations.
func (t *trial) probe() error {
	tr := t.in.Trial
	if d := tr.Probes.Decay; d != nil {
		err := t.fromCheckpoints(ActivityDecayProbe, d.At, func(step int) any {
			in := DecayProbeInput{TrialID: tr.ID, Step: step, Decay: *d, StallTimeout: t.in.StallTimeout}
			in.At = nil
			return in
		})
		if err != nil {
			return fmt.Errorf("decay probe: %w", err)
		}
	}
	if b := tr.Probes.LRDecay; b != nil {
		err := t.fromCheckpoints(ActivityLRDecay, b.At, func(step int) any {
			return LRDecayInput{TrialID: tr.ID, Step: step, LRDecay: probe.LRDecay{Frac: b.Frac}, StallTimeout: t.in.StallTimeout}
		})
		if err != nil {
			return fmt.Errorf("LR-decay branch: %w", err)
		}
	}
	if ip := tr.Probes.Interpolate; ip != nil && ip.Points > 0 {
		if err := t.interpolate(*ip); err != nil {
			return fmt.Errorf("interpolation: %w", err)
		}
	}
	return nil
}

// fromCheckpoints runs the activity name from each checkpoint step of at (probe.At: every
// checkpoint the trial kept if empty), all at once, with the input input(step).
func (t *trial) fromCheckpoints(name string, at []int, input func(step int) any) error {
	at = probe.At(at, t.checkpoints)
	futures := make([]workflow.Future, 0, len(at))
	for _, step := range at {
		futures = append(futures, workflow.ExecuteActivity(t.gpu, name, input(step)))
	}
	return t.await(futures)
}

// interpolate runs the checkpoint interpolation ip: plain and, if ip.Decayed, to the end
// of an LR-decay branch, at once.
func (t *trial) interpolate(ip probe.Interpolation) error {
	kinds := []bool{false}
	if ip.Decayed {
		kinds = append(kinds, true)
	}
	futures := make([]workflow.Future, len(kinds))
	for i, decayed := range kinds {
		seg := ip
		seg.Decayed = decayed
		futures[i] = workflow.ExecuteActivity(t.gpu, ActivityInterpolate, InterpolateInput{TrialID: t.in.Trial.ID, Interpolation: seg, StallTimeout: t.in.StallTimeout})
	}
	return t.await(futures)
}

// await waits for the probes futures in order, counting each that succeeds, and stops at
// the first that fails.
func (t *trial) await(futures []workflow.Future) error {
	for _, f := range futures {
		if err := f.Get(t.ctx, nil); err != nil {
			return err
		}
		t.res.Probes++
	}
	return nil
}
