package training

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/checkpoint"
	"github.com/sfsweep/sfsweep/training/model"
)

// Batches is the data of a run: training batches by (step, micro-batch), a pure function
// of its arguments so that a resumed run reads the batches it would have read, and the
// fixed evaluation windows of the validation and test splits.
type Batches interface {
	// Fill writes the tokens and targets of micro-batch micro of step step.
	Fill(step, micro int, tokens, targets []int32)
	// EvalBatches returns how many micro-batches of the split ("val" or "test") hold at
	// most maxSeqs whole windows, and fills batch i of them.
	EvalBatches(split string, maxSeqs int) (n int, fill func(i int, tokens, targets []int32))
}

// Options are how a run is carried out, as opposed to what it computes (Config).
type Options struct {
	// Store holds the run's checkpoints under Prefix, and the run resumes from the
	// newest; nil keeps none and cannot resume.
	Store  blob.Store
	Prefix string
	// Record receives the run's config, curves, final model and result; nil records
	// none. Callers keep a run's record beside its checkpoints, under Prefix
	// (trial.Recorder).
	Record Record
	// Data is the run's data; the caller opens it (OpenData) so runs can share it.
	Data Batches
	// Progress, if set, is called after every step and at each evaluation.
	Progress func(Progress)
	// Log receives structured events (evaluations, checkpoints, resume); nil discards.
	Log *slog.Logger
	// WrapEngine, if set, receives the engine made for the run and returns the one the run
	// uses (tests inject compute faults through it).
	WrapEngine func(backend.Engine) backend.Engine
	// AfterStep, if set, is called after each step's optimizer update and checkpoint;
	// returning an error stops the run with it (tests use it to interrupt runs).
	AfterStep func(step int) error
	// Until, if in (0, Steps), stops the run after that step (a search's rung: an
	// evaluation and checkpoint step) without recording a result; a later Run with a larger
	// Until, or none, resumes from the checkpoint there. The Result then has an empty
	// Status, Steps = Until and the curves so far. A run whose checkpoints are already
	// past Until returns at once.
	Until int
	// HostOptimizer steps the optimizer on the host even where the engine could step it
	// on its device (backend.DeviceLoop); the results are bitwise the same, and the tests
	// compare the two.
	HostOptimizer bool
}

// Run trains cfg (defaults applied and valid) to the end, or to opt.Until, resuming from
// the newest valid checkpoint under opt.Prefix when there is one. A loss that is not
// finite ends the run as a result with Status "diverged", not as an error.
func Run(ctx context.Context, cfg Config, opt Options) (*Result, error) {
	start := time.Now()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	if opt.Data == nil {
		return nil, errors.New("train: Options.Data is nil")
	}
	log := opt.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r, err := newRunner(ctx, cfg, opt)
	if err != nil {
		return nil, err
	}
	defer r.engine.eng.Close()
	if opt.Record != nil {
		if err := opt.Record.WriteConfig(ctx, cfg.Canonical()); err != nil {
			return nil, fmt.Errorf("train: %w", err)
		}
	}
	if opt.Store != nil {
		if err := r.resume(ctx, log); err != nil {
			return nil, err
		}
	}
	res := &Result{ConfigHash: r.hash, Primary: Iterates(cfg.Optimizer.Name)[0], Resumed: r.step, Engine: backend.ProvenanceOf(cfg.Backend)}
	tokensPerStep := int64(cfg.BatchTokens)
	speed := newThroughput(tokensPerStep, cfg.Steps, time.Now())
	end := cfg.Steps
	if opt.Until > 0 && opt.Until < end {
		end = opt.Until
	}
	for r.step < end {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		step := r.step + 1
		loss, err := r.engine.step(step, r.optim)
		if err != nil {
			return nil, fmt.Errorf("train: step %d: %w", step, err)
		}
		r.step = step
		if !finite(loss) {
			log.Warn("diverged", "step", step, "loss", loss)
			res.Status, res.DivergedAt = status.Diverged, step
			break
		}
		p := Progress{Step: step, Steps: cfg.Steps, TrainLoss: loss}
		p.TokensPerSec, p.ETA = speed.step(step, time.Now())
		if (cfg.EvalEvery > 0 && step%cfg.EvalEvery == 0) || step == cfg.Steps {
			pt, err := r.evaluate(step, loss)
			if err != nil {
				return nil, err
			}
			r.curves = append(r.curves, pt)
			p.Eval = &pt
			log.Info("eval", "step", step, "val", pt.Val)
			if err := r.writeCurves(ctx); err != nil {
				return nil, err
			}
		}
		if opt.Progress != nil {
			opt.Progress(p)
		}
		if opt.Store != nil && cfg.CheckpointEvery > 0 && step%cfg.CheckpointEvery == 0 && step < cfg.Steps {
			if err := r.checkpoint(ctx); err != nil {
				return nil, err
			}
			log.Info("checkpoint", "step", step)
		}
		if opt.AfterStep != nil {
			if err := opt.AfterStep(step); err != nil {
				return nil, err
			}
		}
	}
	if res.Status == "" && r.step < cfg.Steps {
		// stopped at opt.Until: the curves so far, no result recorded
		res.Steps, res.Tokens, res.EvalSeqs, res.Curves = r.step, int64(r.step)*tokensPerStep, r.evalSeqs, r.curves
		res.Seconds = time.Since(start).Seconds()
		log.Info("paused", "step", r.step, "until", opt.Until)
		return res, nil
	}
	if res.Status == "" {
		res.Status = status.Completed
		last := r.curves[len(r.curves)-1]
		res.Val = last.Val
		test, n, err := r.evalSplit("test", cfg.TestSeqs)
		if err != nil {
			return nil, err
		}
		res.Test, res.TestSeqs = test, n
		res.TestPPL = map[string]float64{}
		for k, v := range test {
			res.TestPPL[k] = math.Exp(v)
		}
	}
	res.Steps, res.Tokens = r.step, int64(r.step)*tokensPerStep
	res.EvalSeqs = r.evalSeqs
	res.Curves = r.curves
	if err := r.optim.pull(r.engine); err != nil {
		return nil, err
	}
	res.ParamsHash = hashFloats(r.engine.w)
	res.Seconds = time.Since(start).Seconds()
	if opt.Record != nil {
		if err := r.writeCurves(ctx); err != nil {
			return nil, err
		}
		if res.Status == status.Completed {
			if err := r.writeModel(ctx, res); err != nil {
				return nil, err
			}
		}
		if err := opt.Record.WriteResult(ctx, res); err != nil {
			return nil, fmt.Errorf("train: %w", err)
		}
	}
	log.Info("finished", "status", res.Status, "step", r.step, "seconds", res.Seconds)
	return res, nil
}

// runner is the state of one run: its engine, whose w is the parameters (y for SF-AdamW,
// w for AdamW), and its optimizer with the averages.
type runner struct {
	cfg     Config
	mc      model.Config
	opt     Options
	hash    string
	engine  *engine
	optim   *optimizer
	scratch []float32 // an iterate being evaluated, and y saved meanwhile

	step     int
	curves   []CurvePoint
	evalSeqs int
}

func newRunner(ctx context.Context, cfg Config, opt Options) (*runner, error) {
	mc, err := cfg.ResolveModel()
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	e, err := openEngine(ctx, cfg, mc, opt.Data, opt.WrapEngine)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	r := &runner{cfg: cfg, mc: mc, opt: opt, hash: cfg.Hash(), engine: e}
	model.Init(mc, cfg.Seed, e.w)
	err = e.upload()
	if err == nil {
		r.optim, err = runOptimizer(cfg, e.w)
	}
	if err == nil && !opt.HostOptimizer {
		err = r.optim.startMirror(e, cfg)
	}
	if err != nil {
		e.eng.Close()
		return nil, fmt.Errorf("train: %w", err)
	}
	r.scratch = make([]float32, 2*len(e.w))
	return r, nil
}

func (r *runner) evaluate(step int, trainLoss float64) (CurvePoint, error) {
	val, n, err := r.evalSplit("val", r.cfg.EvalSeqs)
	if err != nil {
		return CurvePoint{}, err
	}
	r.evalSeqs = n
	return CurvePoint{Step: step, Tokens: int64(step) * int64(r.cfg.BatchTokens), LR: r.optim.lastLR(), TrainLoss: trainLoss, Val: val}, nil
}

// evalSplit returns the mean loss of every iterate on the split's evaluation windows and
// the number of sequences evaluated. The engine's parameters are y again afterwards.
func (r *runner) evalSplit(split string, maxSeqs int) (map[string]float64, int, error) {
	nb, _ := r.opt.Data.EvalBatches(split, maxSeqs)
	if nb == 0 {
		return nil, 0, fmt.Errorf("train: the %s split holds no whole window of seq_len = %d tokens", split, r.cfg.SeqLen)
	}
	if err := r.optim.pull(r.engine); err != nil {
		return nil, 0, err
	}
	n := len(r.engine.w)
	saved, iter := r.scratch[:n], r.scratch[n:]
	copy(saved, r.engine.w)
	out := map[string]float64{}
	for _, name := range Iterates(r.cfg.Optimizer.Name) {
		switch name {
		case IterX:
			r.optim.sf.X(iter)
		case IterY, IterW:
			copy(iter, saved)
		case IterEWAX, IterEWAW:
			copy(iter, r.optim.ewas[0].Values())
		case IterEWAY:
			copy(iter, r.optim.ewas[1].Values())
		}
		if err := r.engine.setParams(iter); err != nil {
			return nil, 0, err
		}
		l, _, err := meanLoss(r.engine.eng, r.opt.Data, split, maxSeqs, r.engine.tokens, r.engine.targets)
		if err != nil {
			return nil, 0, fmt.Errorf("train: at %s: %w", name, err)
		}
		out[name] = l
	}
	if err := r.engine.setParams(saved); err != nil {
		return nil, 0, err
	}
	return out, nb * r.cfg.MicroBatch, nil
}

// writeModel records the final model at the iterate the run reports (res.Primary: x for
// SF-AdamW, w for AdamW) and its card.
func (r *runner) writeModel(ctx context.Context, res *Result) error {
	w := r.engine.w
	if res.Primary == IterX {
		w = r.scratch[len(w) : 2*len(w)]
		r.optim.sf.X(w)
	}
	ck := &checkpoint.Checkpoint{Step: int64(r.step), Model: r.mc, Params: w}
	card := ModelCard{Model: r.mc, Iterate: res.Primary, Step: r.step, ConfigHash: r.hash, Engine: res.Engine, PyTorch: PyTorchOf(r.mc)}
	if err := r.opt.Record.WriteModel(ctx, ck, card); err != nil {
		return fmt.Errorf("train: model: %w", err)
	}
	return nil
}

func (r *runner) writeCurves(ctx context.Context) error {
	if r.opt.Record == nil {
		return nil
	}
	if err := r.opt.Record.WriteCurves(ctx, r.curves); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	return nil
}
