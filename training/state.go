package training

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/checkpoint"
)

// loopState is the training loop's part of a checkpoint, besides the parameters and the
// optimizer and EWA states: the config it belongs to (whole, so that a reader of the
// checkpoint has every hyperparameter, β1 to recover x among them), the engine that wrote
// it, the curves so far and the evaluation size. The data position is the step itself
// (batches are a function of the step).
type loopState struct {
	ConfigHash string              `json:"config_hash"`
	Config     *Config             `json:"config,omitempty"`
	Engine     *backend.Provenance `json:"engine,omitempty"`
	Step       int                 `json:"step"`
	Curves     []CurvePoint        `json:"curves"`
	EvalSeqs   int                 `json:"eval_seqs"`
}

// The names of the optimizer states in a run's checkpoints (checkpoint.Checkpoint's
// Optimizer and PutOptimizer). They are part of the stored format: renamed, they would
// leave the checkpoints already stored unreadable.
const (
	// StateOptimizer holds the optimizer's state: SF-AdamW's (the checkpoint's parameters
	// are its y; x is recovered from both, see IterateX) or AdamW's.
	StateOptimizer = "optimizer"
	// StateEWA1 holds the EWA of the evaluated iterate: EWA(x) for SF-AdamW (ewa_x),
	// EWA(w) for AdamW (ewa_w).
	StateEWA1 = "ewa1"
	// StateEWA2 holds EWA(y) (ewa_y) for SF-AdamW; an AdamW checkpoint has none.
	StateEWA2 = "ewa2"
)

func (r *runner) ckPrefix() string { return keys.Checkpoints(r.opt.Prefix) }

// checkpoint saves the run's state after r.step steps and prunes old checkpoints.
func (r *runner) checkpoint(ctx context.Context) error {
	if err := r.optim.pull(r.engine); err != nil {
		return fmt.Errorf("train: checkpoint at step %d: %w", r.step, err)
	}
	cfg, eng := r.cfg.Canonical(), backend.ProvenanceOf(r.cfg.Backend)
	st, err := json.Marshal(loopState{ConfigHash: r.hash, Config: &cfg, Engine: &eng, Step: r.step, Curves: r.curves, EvalSeqs: r.evalSeqs})
	if err != nil {
		return err
	}
	ck := &checkpoint.Checkpoint{Step: int64(r.step), Model: r.mc, Params: r.engine.w, State: st}
	err = ck.PutOptimizer(StateOptimizer, r.optim.state())
	if err == nil && len(r.optim.ewas) > 1 {
		err = ck.PutOptimizer(StateEWA2, r.optim.ewas[1].State())
	}
	if err == nil {
		err = ck.PutOptimizer(StateEWA1, r.optim.ewas[0].State())
	}
	if err == nil {
		err = checkpoint.Save(ctx, r.opt.Store, r.ckPrefix(), ck)
	}
	if err == nil && r.cfg.KeepCheckpoints > 0 {
		err = checkpoint.Prune(ctx, r.opt.Store, r.ckPrefix(), r.cfg.KeepCheckpoints)
	}
	if err != nil {
		return fmt.Errorf("train: checkpoint at step %d: %w", r.step, err)
	}
	return nil
}

// resume restores the newest valid checkpoint of the run, if any; corrupt newer ones are
// logged and skipped.
func (r *runner) resume(ctx context.Context, log *slog.Logger) error {
	ck, skipped, err := checkpoint.Latest(ctx, r.opt.Store, r.ckPrefix())
	for _, s := range skipped {
		log.Warn("checkpoint skipped", "step", s.Step, "reason", s.Reason)
	}
	if err != nil {
		return fmt.Errorf("train: resume: %w", err)
	}
	if ck == nil {
		return nil
	}
	var ls loopState
	if err := json.Unmarshal(ck.State, &ls); err != nil {
		return fmt.Errorf("train: resume from step %d: loop state: %w", ck.Step, err)
	}
	if ls.ConfigHash != r.hash {
		return fmt.Errorf("train: resume from step %d: the checkpoint belongs to config %.12s, this run is %.12s", ck.Step, ls.ConfigHash, r.hash)
	}
	if eng := backend.ProvenanceOf(r.cfg.Backend); ls.Engine != nil && !backend.SameArithmetic(ls.Engine.Arithmetic, eng.Arithmetic) {
		return &fielderr.Error{Field: "backend", Value: r.cfg.Backend, Reason: fmt.Sprintf(
			"the checkpoint at step %d was written by an engine of arithmetic %s (code %s), this one computes %s: "+
				"resumed, the run would not be the run of either; delete the trial's checkpoints to train it again with this engine, "+
				"or declare the two arithmetics the same (training/backend, sameArithmetic) if they are", ck.Step, ls.Engine.Arithmetic, ls.Engine.Code, eng.Arithmetic)}
	}
	if len(ck.Params) != len(r.engine.w) {
		return fmt.Errorf("train: resume from step %d: %d parameters, the model has %d", ck.Step, len(ck.Params), len(r.engine.w))
	}
	copy(r.engine.w, ck.Params)
	if err := r.engine.upload(); err != nil {
		return err
	}
	opt, err := ck.Optimizer(StateOptimizer)
	if err == nil {
		err = r.optim.restore(opt)
	}
	for i, name := range []string{StateEWA1, StateEWA2}[:len(r.optim.ewas)] {
		if err == nil {
			err = restoreEWA(ck, name, r.optim.ewas[i].Restore)
		}
	}
	if err != nil {
		return fmt.Errorf("train: resume from step %d: %w", ck.Step, err)
	}
	if err := r.optim.push(); err != nil {
		return fmt.Errorf("train: resume from step %d: %w", ck.Step, err)
	}
	r.step, r.curves, r.evalSeqs = int(ck.Step), ls.Curves, ls.EvalSeqs
	log.Info("resumed", "step", r.step)
	return nil
}

func restoreEWA(ck *checkpoint.Checkpoint, name string, restore func(sfadamw.State[float32]) error) error {
	st, err := ck.Optimizer(name)
	if err != nil {
		return err
	}
	return restore(st)
}
