package training

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/sfadamw"
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
	// Store receives config.json, curves.jsonl, the checkpoints and result.json under
	// Prefix; nil writes nothing and cannot resume.
	Store  blob.Store
	Prefix string
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
	// evaluation and checkpoint step) without a result.json; a later Run with a larger
	// Until, or none, resumes from the checkpoint there. The Result then has an empty
	// Status, Steps = Until and the curves so far. A run whose checkpoints are already
	// past Until returns at once.
	Until int
	// HostOptimizer steps the optimizer on the host even where the engine could step it
	// on its device (backend.DeviceLoop); the results are bitwise the same, and the tests
	// compare the two.
	HostOptimizer bool
}

// Progress is a snapshot of a running run.
type Progress struct {
	Step, Steps  int
	TrainLoss    float64
	TokensPerSec float64
	ETA          time.Duration
	Eval         *CurvePoint // set on an evaluation
}

// CurvePoint is one evaluation: validation loss at each iterate.
type CurvePoint struct {
	Step      int                `json:"step"`
	Tokens    int64              `json:"tokens"`
	LR        float64            `json:"lr"`
	TrainLoss float64            `json:"train_loss"`
	Val       map[string]float64 `json:"val"`
}

// The iterates a run evaluates. SF-AdamW: x (its output), y (the gradient point) and their
// EWAs; AdamW: its weights w and their EWA.
const (
	IterX    = "x"
	IterY    = "y"
	IterEWAX = "ewa_x"
	IterEWAY = "ewa_y"
	IterW    = "w"
	IterEWAW = "ewa_w"
)

// Iterates returns the iterates evaluated for an optimizer, the primary one first: those a
// probe can start from (IterateWeights).
func Iterates(optimizer string) []string {
	if optimizer == AdamW {
		return []string{IterW, IterEWAW}
	}
	return []string{IterX, IterY, IterEWAX, IterEWAY}
}

// Result is what a finished run reports (result.json).
type Result struct {
	ConfigHash string             `json:"config_hash"`
	Status     status.Status      `json:"status"`                // status.Completed or status.Diverged
	DivergedAt int                `json:"diverged_at,omitempty"` // the step whose loss was not finite
	Steps      int                `json:"steps"`                 // steps taken
	Tokens     int64              `json:"tokens"`                // training tokens consumed
	Primary    string             `json:"primary"`               // the iterate tables report: x for SF-AdamW, w for AdamW
	Val        map[string]float64 `json:"val_loss,omitempty"`    // final validation loss per iterate
	Test       map[string]float64 `json:"test_loss,omitempty"`   // test loss per iterate
	TestPPL    map[string]float64 `json:"test_ppl,omitempty"`    // exp(test loss) per iterate
	EvalSeqs   int                `json:"eval_seqs"`
	TestSeqs   int                `json:"test_seqs"`
	Curves     []CurvePoint       `json:"curves"`
	ParamsHash string             `json:"params_sha256"` // sha256 of the final parameters (y for SF-AdamW)
	Resumed    int                `json:"resumed_from,omitempty"`
	Seconds    float64            `json:"seconds"`
	// Engine is the engine that trained the run (the last attempt's; an attempt that
	// resumed had the same arithmetic as the one before it).
	Engine backend.Provenance `json:"engine"`
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
	defer r.eng.Close()
	if opt.Store != nil {
		b, _ := json.MarshalIndent(cfg.Canonical(), "", "  ")
		if err := opt.Store.Put(ctx, keys.RunConfig(opt.Prefix), b); err != nil {
			return nil, fmt.Errorf("train: %w", err)
		}
		if err := r.resume(ctx, log); err != nil {
			return nil, err
		}
	}
	res := &Result{ConfigHash: r.hash, Primary: Iterates(cfg.Optimizer.Name)[0], Resumed: r.step, Engine: backend.ProvenanceOf(cfg.Backend)}
	tokensPerStep := int64(cfg.BatchTokens)
	stepStart, stepsTimed := time.Now(), 0
	end := cfg.Steps
	if opt.Until > 0 && opt.Until < end {
		end = opt.Until
	}
	for r.step < end {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		step := r.step + 1
		loss, err := r.trainStep(step)
		if err != nil {
			return nil, fmt.Errorf("train: step %d: %w", step, err)
		}
		r.step = step
		if !finite(loss) {
			log.Warn("diverged", "step", step, "loss", loss)
			res.Status, res.DivergedAt = status.Diverged, step
			break
		}
		stepsTimed++
		el := time.Since(stepStart)
		p := Progress{Step: step, Steps: cfg.Steps, TrainLoss: loss,
			TokensPerSec: float64(int64(stepsTimed)*tokensPerStep) / el.Seconds(),
			ETA:          time.Duration(float64(el) / float64(stepsTimed) * float64(cfg.Steps-step))}
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
		// stopped at opt.Until: the curves so far, no result.json
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
	if err := r.pull(); err != nil {
		return nil, err
	}
	res.ParamsHash = hashFloats(r.y())
	res.Seconds = time.Since(start).Seconds()
	if opt.Store != nil {
		if err := r.writeCurves(ctx); err != nil {
			return nil, err
		}
		if res.Status == status.Completed {
			if err := r.writeModel(ctx, res); err != nil {
				return nil, err
			}
		}
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := opt.Store.Put(ctx, keys.RunResult(opt.Prefix), b); err != nil {
			return nil, fmt.Errorf("train: %w", err)
		}
	}
	log.Info("finished", "status", res.Status, "step", r.step, "seconds", res.Seconds)
	return res, nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// hashFloats is the hex sha256 of the little-endian bytes of w.
func hashFloats(w []float32) string {
	h := sha256.New()
	var buf [4096]byte
	for len(w) > 0 {
		n := min(len(w), len(buf)/4)
		for i, v := range w[:n] {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
		}
		h.Write(buf[:4*n])
		w = w[n:]
	}
	return hex.EncodeToString(h.Sum(nil))
}

// runner is the state of one run.
type runner struct {
	cfg  Config
	mc   model.Config
	opt  Options
	hash string
	eng  backend.Engine
	host backend.HostEngine // nil for engines with their own memory

	yHost, gHost []float32 // the parameters (y) and gradients on the host, for non-host engines
	// dev is the optimizer stepped on the engine's device (with its averages), when the
	// engine is a backend.DeviceLoop; sf, adamw and the EWAs are then the host's copy of its
	// state, brought up to date by pull before they are read, and stale marks a copy
	// behind the device.
	dev        backend.Optimizer
	loop       backend.DeviceLoop
	stale      bool
	sf         *sfadamw.SFAdamW[float32]
	adamw      *sfadamw.AdamW[float32]
	ewa1, ewa2 *sfadamw.EWA[float32] // EWA(x) and EWA(y) for SF-AdamW; EWA(w) (ewa1) for AdamW
	scratch    []float32             // an iterate being evaluated, and y saved meanwhile

	tokens, targets []int32
	step            int
	curves          []CurvePoint
	evalSeqs        int
}

func newRunner(ctx context.Context, cfg Config, opt Options) (*runner, error) {
	mc, err := cfg.ResolveModel()
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	eng, err := backend.New(cfg.Backend, mc, cfg.MicroBatch, cfg.SeqLen)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	if opt.WrapEngine != nil {
		eng = opt.WrapEngine(eng)
	}
	r := &runner{cfg: cfg, mc: mc, opt: opt, hash: cfg.Hash(), eng: eng}
	n := eng.NumParams()
	r.host, _ = eng.(backend.HostEngine)
	r.eng = observe(ctx, eng)
	var y []float32
	if r.host != nil {
		y = r.host.Params()
	} else {
		r.yHost, r.gHost = make([]float32, n), make([]float32, n)
		y = r.yHost
	}
	model.Init(mc, cfg.Seed, y)
	if r.host == nil {
		if err := eng.WriteParams(y); err != nil {
			eng.Close()
			return nil, fmt.Errorf("train: %w", err)
		}
	}
	switch cfg.Optimizer.Name {
	case SFAdamW:
		r.sf, err = sfadamw.New(cfg.SFAdamWConfig(), y)
		if err == nil {
			r.ewa1, err = sfadamw.NewEWA[float32](n, cfg.EWADecay)
		}
		if err == nil {
			r.ewa2, err = sfadamw.NewEWA[float32](n, cfg.EWADecay)
		}
	case AdamW:
		r.adamw, err = sfadamw.NewAdamW(cfg.AdamWConfig(), y)
		if err == nil {
			r.ewa1, err = sfadamw.NewEWA[float32](n, cfg.EWADecay)
		}
	}
	if err != nil {
		eng.Close()
		return nil, fmt.Errorf("train: %w", err)
	}
	// The device optimizer stores no x, so SF-AdamW with β1 = 0 steps on the host.
	if dl, ok := eng.(backend.DeviceLoop); ok && !opt.HostOptimizer && r.host == nil && (r.sf == nil || cfg.Optimizer.Beta1 > 0) {
		if err := r.startDevice(dl); err != nil {
			eng.Close()
			return nil, fmt.Errorf("train: %w", err)
		}
	}
	r.scratch = make([]float32, 2*n)
	r.tokens = make([]int32, cfg.MicroBatch*cfg.SeqLen)
	r.targets = make([]int32, cfg.MicroBatch*cfg.SeqLen)
	return r, nil
}

// y returns the host copy of the parameters (y for SF-AdamW, w for AdamW).
func (r *runner) y() []float32 {
	if r.host != nil {
		return r.host.Params()
	}
	return r.yHost
}

// trainStep runs the micro-batches of step, averages their gradients, steps the optimizer
// and the EWAs, and returns the mean training loss.
func (r *runner) trainStep(step int) (float64, error) {
	accum := r.cfg.Accum()
	r.eng.ZeroGrad()
	var sum float64
	for micro := range accum {
		r.opt.Data.Fill(step, micro, r.tokens, r.targets)
		l, err := r.eng.Forward(r.tokens, r.targets)
		if err != nil {
			return 0, err
		}
		sum += l
		if !finite(l) {
			return l, nil
		}
		if err := r.eng.Backward(); err != nil {
			return 0, err
		}
	}
	if r.dev != nil {
		return sum / float64(accum), r.deviceStep(accum)
	}
	g := r.gHost
	if r.host != nil {
		g = r.host.Grads()
	} else if err := r.eng.ReadGrads(g); err != nil {
		return 0, err
	}
	scaleGrads(g, accum)
	y := r.y()
	if r.sf != nil {
		r.sf.Step(g)
		r.sf.UpdateEWAX(r.ewa1)
		r.ewa2.Update(y)
	} else {
		r.adamw.Step(g)
		r.ewa1.Update(y)
	}
	if r.host == nil {
		if err := r.eng.WriteParams(y); err != nil {
			return 0, err
		}
	}
	return sum / float64(accum), nil
}

// lr returns the learning rate of the last step.
func (r *runner) lr() float64 {
	if r.sf != nil {
		return r.sf.LastLR()
	}
	return r.adamw.LastLR()
}

func (r *runner) evaluate(step int, trainLoss float64) (CurvePoint, error) {
	val, n, err := r.evalSplit("val", r.cfg.EvalSeqs)
	if err != nil {
		return CurvePoint{}, err
	}
	r.evalSeqs = n
	return CurvePoint{Step: step, Tokens: int64(step) * int64(r.cfg.BatchTokens), LR: r.lr(), TrainLoss: trainLoss, Val: val}, nil
}

// evalSplit returns the mean loss of every iterate on the split's evaluation windows and
// the number of sequences evaluated. The engine's parameters are y again afterwards.
func (r *runner) evalSplit(split string, maxSeqs int) (map[string]float64, int, error) {
	nb, _ := r.opt.Data.EvalBatches(split, maxSeqs)
	if nb == 0 {
		return nil, 0, fmt.Errorf("train: the %s split holds no whole window of seq_len = %d tokens", split, r.cfg.SeqLen)
	}
	if err := r.pull(); err != nil {
		return nil, 0, err
	}
	y := r.y()
	n := len(y)
	saved, iter := r.scratch[:n], r.scratch[n:]
	copy(saved, y)
	out := map[string]float64{}
	for _, name := range Iterates(r.cfg.Optimizer.Name) {
		switch name {
		case IterX:
			r.sf.X(iter)
		case IterY, IterW:
			copy(iter, saved)
		case IterEWAX, IterEWAW:
			copy(iter, r.ewa1.Values())
		case IterEWAY:
			copy(iter, r.ewa2.Values())
		}
		if err := r.setParams(iter); err != nil {
			return nil, 0, err
		}
		l, _, err := meanLoss(r.eng, r.opt.Data, split, maxSeqs, r.tokens, r.targets)
		if err != nil {
			return nil, 0, fmt.Errorf("train: at %s: %w", name, err)
		}
		out[name] = l
	}
	if err := r.setParams(saved); err != nil {
		return nil, 0, err
	}
	return out, nb * r.cfg.MicroBatch, nil
}

// ModelCard describes a run's final model file (model.safetensors): what a reader needs
// to build the module it loads into (bench/torch/torch_llama.py's names).
type ModelCard struct {
	Model      model.Config       `json:"model"`
	Iterate    string             `json:"iterate"` // the weights: x for SF-AdamW, w for AdamW
	Step       int                `json:"step"`
	ConfigHash string             `json:"config_hash"`
	Engine     backend.Provenance `json:"engine"`
}

// writeModel stores the final model at the iterate the run reports (res.Primary: x for
// SF-AdamW, w for AdamW) as safetensors under the layout's PyTorch names, and its card.
func (r *runner) writeModel(ctx context.Context, res *Result) error {
	w := r.y()
	if res.Primary == IterX {
		w = r.scratch[len(w) : 2*len(w)]
		r.sf.X(w)
	}
	b, err := (&checkpoint.Checkpoint{Step: int64(r.step), Model: r.mc, Params: w}).Encode()
	if err != nil {
		return fmt.Errorf("train: model: %w", err)
	}
	if err := r.opt.Store.Put(ctx, keys.RunModel(r.opt.Prefix), b); err != nil {
		return fmt.Errorf("train: model: %w", err)
	}
	card, _ := json.MarshalIndent(ModelCard{Model: r.mc, Iterate: res.Primary, Step: r.step, ConfigHash: r.hash, Engine: res.Engine}, "", "  ")
	if err := r.opt.Store.Put(ctx, keys.RunModelCard(r.opt.Prefix), card); err != nil {
		return fmt.Errorf("train: model: %w", err)
	}
	return nil
}

func (r *runner) setParams(w []float32) error {
	if r.host != nil {
		copy(r.host.Params(), w)
		return nil
	}
	return r.eng.WriteParams(w)
}

func (r *runner) writeCurves(ctx context.Context) error {
	if r.opt.Store == nil {
		return nil
	}
	var b []byte
	for _, c := range r.curves {
		line, _ := json.Marshal(c)
		b = append(append(b, line...), '\n')
	}
	if err := r.opt.Store.Put(ctx, keys.RunCurves(r.opt.Prefix), b); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	return nil
}

// startDevice makes the run's optimizer and its averages on the engine's device. The
// engine's parameters hold the initial y.
func (r *runner) startDevice(dl backend.DeviceLoop) error {
	var o backend.Optimizer
	var err error
	if r.sf != nil {
		o, err = dl.NewSFAdamW(r.cfg.SFAdamWConfig())
	} else {
		o, err = dl.NewAdamW(r.cfg.AdamWConfig())
	}
	if err != nil {
		return err
	}
	av, ok := o.(backend.Averager)
	if !ok {
		return fmt.Errorf("the %s backend's device optimizer keeps no averages", r.cfg.Backend)
	}
	if err := av.StartAverages(r.cfg.EWADecay); err != nil {
		return err
	}
	r.dev, r.loop = o, dl
	return nil
}

// deviceStep is trainStep's update on the device: the mean of the accum micro-batches'
// gradients, the optimizer's step and the averages, as the host computes them.
func (r *runner) deviceStep(accum int) error {
	if accum > 1 {
		if err := r.loop.ScaleGrads(float32(1 / float64(accum))); err != nil {
			return err
		}
	}
	if err := r.dev.Step(); err != nil {
		return err
	}
	r.stale = true
	return r.dev.(backend.Averager).UpdateAverages()
}

// pull brings the host's copy of the parameters, the optimizer's state and the averages
// up to date with the device optimizer's; it does nothing on the host path.
func (r *runner) pull() error {
	if r.dev == nil || !r.stale {
		return nil
	}
	if err := r.eng.ReadParams(r.yHost); err != nil {
		return err
	}
	var err error
	if r.sf != nil {
		err = r.sf.Restore(r.dev.State())
	} else {
		err = r.adamw.Restore(r.dev.State())
	}
	if err != nil {
		return fmt.Errorf("train: the device optimizer's state: %w", err)
	}
	avgs, err := r.dev.(backend.Averager).Averages()
	if err != nil {
		return err
	}
	for i, e := range r.ewas() {
		if err := e.Restore(avgs[i]); err != nil {
			return fmt.Errorf("train: the device's averages: %w", err)
		}
	}
	r.stale = false
	return nil
}

// push hands the host's optimizer state and averages (restored from a checkpoint) to the
// device optimizer; the caller has written the parameters.
func (r *runner) push() error {
	if r.dev == nil {
		return nil
	}
	st := r.adamw.State
	if r.sf != nil {
		st = r.sf.State
	}
	if err := r.dev.Restore(st()); err != nil {
		return err
	}
	var avgs []sfadamw.State[float32]
	for _, e := range r.ewas() {
		avgs = append(avgs, e.State())
	}
	r.stale = false
	return r.dev.(backend.Averager).RestoreAverages(avgs)
}

// ewas lists the run's averages in backend.Averager's order.
func (r *runner) ewas() []*sfadamw.EWA[float32] {
	if r.sf != nil {
		return []*sfadamw.EWA[float32]{r.ewa1, r.ewa2}
	}
	return []*sfadamw.EWA[float32]{r.ewa1}
}
