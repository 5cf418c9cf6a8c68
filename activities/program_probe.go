package activities

// The LR-decay branch of a trial whose trainer is a program that implements it
// (docs/trainer.md, "Probes"): the program run in probe mode from its checkpoint.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"

	"go.temporal.io/sdk/activity"

	"github.com/sfsweep/sfsweep/internal/probe"
	"github.com/sfsweep/sfsweep/program"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/trial"
	"github.com/sfsweep/sfsweep/workflows"
)

// programLRDecay runs the LR-decay branch of program trial in.TrialID from its checkpoint
// of in.Step: the program in probe mode, over the branch's steps, with the checkpoints
// restored and none kept. Its result is read from the program's metrics lines: the
// validation loss before is the trial's curve at the step, after the last line's.
func (a *Activities) programLRDecay(ctx context.Context, in workflows.LRDecayInput, cfg training.Config) (*training.LRDecayResult, error) {
	spec, err := a.Trainers.spec(cfg.Trainer)
	if err != nil {
		return nil, invalid(fmt.Errorf("trial %s: %w", in.TrialID, err))
	}
	if !slices.Contains(spec.Probes, "lr_decay") {
		return nil, invalid(fmt.Errorf("trial %s: trainer %q does not implement the lr_decay probe (its probes: %v)", in.TrialID, spec.Name, spec.Probes))
	}
	steps := probe.LRDecay{Frac: in.Frac}.BranchSteps(in.Step)
	res := &training.LRDecayResult{FromStep: in.Step, Steps: steps, EvalSeqs: cfg.EvalSeqs, After: training.Loss(math.NaN())}
	curves, err := trial.ReadCurves(ctx, a.Store, in.TrialID)
	if err != nil {
		return nil, err
	}
	it := training.ResolveIterate(cfg.Optimizer.Name, "")
	for _, p := range curves {
		if p.Step == in.Step {
			res.Before, res.StartLR = p.Val[it], p.LR
		}
	}
	at, err := a.prepareAttempt(ctx, workflows.TrainInput{TrialID: in.TrialID}, cfg, spec, int(activity.GetInfo(ctx).Attempt), in.Step)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(at.root)
	b, _ := json.Marshal(map[string]any{"kind": "lr_decay", "step": in.Step, "steps": steps, "shape": "linear"})
	at.env["SFSWEEP_MODE"], at.env["SFSWEEP_PROBE"] = "probe", string(b)
	stall := in.StallTimeout
	if stall <= 0 {
		stall = ProgramStall
	}
	release, devices, err := a.admitProgram(ctx, in.TrialID, cfg, spec, func(string) {}) // its waiting shows in the worker's log
	if err != nil {
		return nil, err
	}
	defer release()
	at.visible(devices)
	var last *float64
	out, runErr := program.Run(ctx, program.Attempt{
		Argv: at.argv, Env: at.env, Pass: spec.EnvPass, Dir: at.run, Metrics: at.env["SFSWEEP_METRICS"], LogDir: at.logs, Stall: stall, Grace: programGrace,
		OnMetric: func(m program.Metric) {
			if m.Finite() {
				res.Curve = append(res.Curve, training.ProbeStep{Step: m.Step, LR: deref(m.LR), TrainLoss: deref(m.TrainLoss)})
			}
			if m.ValLoss != nil {
				last = m.ValLoss
			}
		},
	})
	if runErr != nil && out.Status != program.Canceled {
		return nil, runErr
	}
	switch out.Status {
	case program.Completed:
		if last == nil {
			return nil, fmt.Errorf("trial %s: the lr_decay probe from step %d wrote no validation loss", in.TrialID, in.Step)
		}
		res.After = training.Loss(*last)
		return res, nil
	case program.Diverged:
		res.DivergedAt = out.DivergedAt
		return res, nil
	}
	if _, err = a.programResult(workflows.TrainInput{TrialID: in.TrialID}, cfg, out, nil, 0); err == nil {
		err = fmt.Errorf("trial %s: the lr_decay probe from step %d ended %s", in.TrialID, in.Step, out.Status)
	}
	return nil, err
}

// deref is *p, or 0 for nil.
func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}
