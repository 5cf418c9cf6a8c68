package activities

// Train for a trial whose trainer is a program (docs/trainer.md): the program started in
// a fresh directory with its checkpoints restored, its metrics lines turned into the
// trial's curves, heartbeats and result, its checkpoints and logs kept in the store.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/program"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/data"
	"github.com/sfsweep/sfsweep/trial"
	"github.com/sfsweep/sfsweep/workflows"
)

// Trainers are the program trainers a worker runs (sfsweep worker -trainers FILE): the
// registry, and the directory its relative paths are relative to. A worker runs no
// program that is not in it.
type Trainers struct {
	Registry program.Registry
	Dir      string
	// Manifest marks the trainers of sfsweep run, defined by the manifest: their env is
	// part of their identity (program.WithEnv), as the manifest's trials carry it.
	Manifest bool

	mu         sync.Mutex
	identities map[string]string
}

// spec returns the registered trainer t names, after checking that its identity is the
// trial's: a trial is trained only by the code its ID covers.
func (ts *Trainers) spec(t *training.Trainer) (program.Spec, error) {
	if ts == nil {
		return program.Spec{}, fmt.Errorf("trainer %q: this worker runs no program trainers (sfsweep worker -trainers FILE registers them)", t.Name)
	}
	s, ok := ts.Registry[t.Name]
	if !ok {
		return s, fmt.Errorf("trainer %q: not registered on this worker (it has %s)", t.Name, strings.Join(ts.names(), ", "))
	}
	id, err := ts.identity(t.Name)
	if err != nil {
		return s, err
	}
	if id != t.Identity {
		return s, fmt.Errorf("trainer %q: this worker's is %s, the trial's %s: update the worker's trainer, or the manifest's trainer.version", t.Name, id, t.Identity)
	}
	return s, nil
}

// identity is registered trainer name's identity, computed once.
func (ts *Trainers) identity(name string) (string, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if id, ok := ts.identities[name]; ok {
		return id, nil
	}
	s := ts.Registry[name]
	id, err := s.Identity(ts.Dir)
	if err != nil {
		return "", fmt.Errorf("trainer %q: %w", name, err)
	}
	if ts.Manifest {
		id = program.WithEnv(id, s.Env)
	}
	if ts.identities == nil {
		ts.identities = map[string]string{}
	}
	ts.identities[name] = id
	return id, nil
}

// Queues are the task queues of the trials of these trainers on devices: each trainer's
// at its identity (workflows.TrainerQueue), on each device, in order. A worker that runs
// the trainers polls them.
func (ts *Trainers) Queues(devices []string) ([]string, error) {
	if ts == nil {
		return nil, nil
	}
	var qs []string
	for _, name := range slices.Sorted(maps.Keys(ts.Registry)) {
		id, err := ts.identity(name)
		if err != nil {
			return nil, err
		}
		for _, d := range devices {
			qs = append(qs, workflows.TrainerQueue(d, name, id))
		}
	}
	return qs, nil
}

// NodeQueues are the task queues of the trials of 2 to gpus GPUs of device (gpus: N,
// workflows.GPUsDevice) of the trainers with a launcher, which a worker that owns gpus GPUs
// of one node polls.
func (ts *Trainers) NodeQueues(device string, gpus int) ([]string, error) {
	if ts == nil {
		return nil, nil
	}
	var qs []string
	for _, name := range slices.Sorted(maps.Keys(ts.Registry)) {
		if ts.Registry[name].Launcher == "" {
			continue
		}
		id, err := ts.identity(name)
		if err != nil {
			return nil, err
		}
		for n := 2; n <= gpus; n++ {
			qs = append(qs, workflows.TrainerQueue(workflows.GPUsDevice(device, n), name, id))
		}
	}
	return qs, nil
}

// names are the registered trainers' names, for an error.
func (ts *Trainers) names() []string {
	var ns []string
	for n := range ts.Registry {
		ns = append(ns, strconv.Quote(n))
	}
	if len(ns) == 0 {
		return []string{"none"}
	}
	return ns
}

// Program exit statuses and timings (docs/trainer.md).
const (
	// ProgramStall is a program's stall timeout where the trial sets none: no metrics line
	// for this long ends it, and it is retried.
	ProgramStall = 10 * time.Minute
	// programGrace is the time between SIGTERM and SIGKILL when a program is ended.
	programGrace = 10 * time.Second
)

// trainProgram runs one attempt of a program trainer's trial cfg, to its end or to
// in.Until, once its GPU memory is reserved (admitProgram; waiting is told while it waits).
// hb is told each metrics line, with the last finite training loss, and refused each
// refused one. The result is nil where the
// attempt stopped at the rung.
func (a *Activities) trainProgram(ctx context.Context, in workflows.TrainInput, cfg training.Config, waiting func(string), refused func(n int, line string), hb func(m program.Metric, loss float64)) (*training.Result, error) {
	spec, err := a.Trainers.spec(cfg.Trainer)
	if err != nil {
		return nil, invalid(fmt.Errorf("trial %s: %w", in.TrialID, err))
	}
	attempt := int(activity.GetInfo(ctx).Attempt)
	at, err := a.prepareAttempt(ctx, in, cfg, spec, attempt)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(at.root)
	stored, err := trial.ReadCurves(ctx, a.Store, in.TrialID)
	if err != nil {
		return nil, err
	}
	rec := trial.Recorder{Store: a.Store, Prefix: keys.Trial(in.TrialID)}
	if err := rec.WriteConfig(ctx, cfg); err != nil {
		return nil, err
	}
	it := training.ResolveIterate(cfg.Optimizer.Name, "")
	c := &programCurves{points: stored, iterate: it}
	stall := in.StallTimeout
	if stall <= 0 {
		stall = ProgramStall
	}
	release, devices, err := a.admitProgram(ctx, in.TrialID, cfg, spec, waiting)
	if err != nil {
		return nil, err
	}
	defer release()
	at.visible(devices)
	start := time.Now()
	logs := &logStream{a: a, id: in.TrialID, until: in.Until, attempt: attempt, dir: at.logs, sizes: map[string]int64{}}
	loss := 0.0 // the heartbeat's: the last finite training loss (JSON has no NaN)
	out, runErr := program.Run(ctx, program.Attempt{
		Argv: at.argv, Env: at.env, Pass: spec.EnvPass, Dir: at.run, Home: resolveIn(a.Trainers.Dir, spec.Home), Metrics: at.env["SFSWEEP_METRICS"], LogDir: at.logs,
		Until: in.Until, Stall: stall, Grace: programGrace,
		OnMetric: func(m program.Metric) {
			c.add(m)
			if l := m.TrainLoss; l != nil && !math.IsNaN(*l) && !math.IsInf(*l, 0) {
				loss = *l
			}
			hb(m, loss)
		},
		OnRefused: refused,
		Sync: func(ctx context.Context) error {
			logs.sync(ctx)
			return c.flush(ctx, rec)
		},
		Mirror: at.mirror,
	})
	release() // the program has exited: its memory is the driver's again
	a.keepLogs(ctx, in.TrialID, in.Until, attempt, at.logs, out)
	if err := c.flush(ctx, rec); err != nil && runErr == nil {
		runErr = err
	}
	if out.Refused > 0 {
		a.log().Warn("refused metrics lines", "trial", in.TrialID, "count", out.Refused, "first", out.RefusedSample)
	}
	if runErr != nil && out.Status != program.Canceled {
		return nil, a.notAgain(ctx, in, attempt, out, runErr)
	}
	res, err := a.programResult(in, cfg, out, c, time.Since(start))
	if res != nil {
		err = rec.WriteResult(ctx, res)
	} else if err != nil {
		err = a.notAgain(ctx, in, attempt, out, err)
	}
	return res, err
}

// notAgain is err, the failure of attempt, made final where retrying it is blind: the
// attempt failed before its first metrics line, as the attempt before it did, with the
// same exit status and reason (a missing module, an argv the system refuses, a program
// that exits at once). A stall, or a failure after a metrics line, is retried as before.
func (a *Activities) notAgain(ctx context.Context, in workflows.TrainInput, attempt int, out program.Outcome, err error) error {
	var ae *temporal.ApplicationError
	if attempt < 2 || out.Lines > 0 || out.Status == program.Stalled || out.Status == program.Canceled ||
		ctx.Err() != nil || (errors.As(err, &ae) && ae.NonRetryable()) {
		return err
	}
	b, gerr := a.Store.Get(ctx, keys.ProgramLog(in.TrialID, in.Until, attempt-1, "json"))
	var prev attemptSummary
	if gerr != nil || json.Unmarshal(b, &prev) != nil {
		return err
	}
	if prev.Lines > 0 || prev.ExitCode != out.ExitCode || prev.Signal != out.Signal || prev.Reason != out.Reason {
		return err
	}
	return invalid(fmt.Errorf("%w (attempt %d failed the same way before its first metrics line: not retried again)", err, attempt-1))
}

// programAttempt is where an attempt of a program runs: its directories, environment,
// argv, and the mirror of its checkpoint directory, restored from the store.
type programAttempt struct {
	root, run, ckpt, logs string
	env                   map[string]string
	argv                  []string
	mirror                *program.Mirror
}

// prepareAttempt makes an attempt's directories, restores its checkpoints (the newest, or
// given steps, those of the steps: a probe's) and builds its environment and argv.
func (a *Activities) prepareAttempt(ctx context.Context, in workflows.TrainInput, cfg training.Config, spec program.Spec, attempt int, steps ...int) (*programAttempt, error) {
	root, err := os.MkdirTemp(a.workDir(), "trial-"+in.TrialID+"-")
	if err != nil {
		return nil, err
	}
	at := &programAttempt{root: root, run: filepath.Join(root, "run"), ckpt: filepath.Join(root, "checkpoints"), logs: filepath.Join(root, "logs")}
	at.mirror = &program.Mirror{Store: a.Store, Prefix: keys.ProgramCheckpoints(in.TrialID), Dir: at.ckpt}
	fail := func(err error) (*programAttempt, error) { os.RemoveAll(root); return nil, err }
	if err := at.mirror.Restore(ctx, steps...); err != nil {
		return fail(fmt.Errorf("trial %s: restore checkpoints: %w", in.TrialID, err))
	}
	if at.env, err = a.programEnv(ctx, in, cfg, attempt, root, at.run, at.ckpt); err != nil {
		return fail(err)
	}
	for k, v := range spec.Env {
		at.env[k] = v
	}
	if at.argv, err = spec.Argv(a.Trainers.Dir, cfg.Args()); err != nil {
		return fail(invalid(fmt.Errorf("trial %s: %w", in.TrialID, err)))
	}
	if at.argv, err = spec.Launch(at.argv, max(cfg.WithDefaults().GPUs, 1)); err != nil {
		return fail(invalid(fmt.Errorf("trial %s: %w", in.TrialID, err)))
	}
	return at, nil
}

// visible gives the program the GPUs its admission named (devices, as
// CUDA_VISIBLE_DEVICES lists them), where it named any.
func (at *programAttempt) visible(devices string) {
	if devices != "" {
		at.env["CUDA_VISIBLE_DEVICES"] = devices
	}
}

// programResult maps an attempt's outcome to the trial's: a result, a rung reached (nil),
// or an error Temporal retries or not.
func (a *Activities) programResult(in workflows.TrainInput, cfg training.Config, out program.Outcome, c *programCurves, took time.Duration) (*training.Result, error) {
	reason := fmt.Errorf("trial %s: program: %s", in.TrialID, out.Reason)
	switch out.Status {
	case program.Stopped:
		return nil, nil
	case program.Completed:
		if in.Until > 0 && in.Until < cfg.Steps && out.Last.Step < cfg.Steps {
			return nil, nil // it stopped itself at the rung
		}
		return c.result(cfg, status.Completed, 0, took), nil
	case program.Diverged:
		return c.result(cfg, status.Diverged, out.DivergedAt, took), nil
	case program.Invalid:
		return nil, invalid(reason)
	case program.Stalled:
		return nil, temporal.NewApplicationError(reason.Error(), ErrorStalled)
	case program.Canceled:
		return nil, context.Canceled
	}
	return nil, reason
}

// programEnv is the environment docs/trainer.md gives a program: where it runs, keeps
// checkpoints and writes metrics, the trial config, its data and its device.
func (a *Activities) programEnv(ctx context.Context, in workflows.TrainInput, cfg training.Config, attempt int, root, run, ckpt string) (map[string]string, error) {
	env := map[string]string{
		"SFSWEEP_TRIAL_ID":       in.TrialID,
		"SFSWEEP_ATTEMPT":        strconv.Itoa(attempt),
		"SFSWEEP_SEED":           strconv.FormatUint(cfg.Seed, 10),
		"SFSWEEP_STEPS":          strconv.Itoa(cfg.Steps),
		"SFSWEEP_UNTIL":          strconv.Itoa(max(in.Until, 0)),
		"SFSWEEP_RUN_DIR":        run,
		"SFSWEEP_CHECKPOINT_DIR": ckpt,
		"SFSWEEP_METRICS":        filepath.Join(root, "metrics.jsonl"),
		"SFSWEEP_CONFIG":         filepath.Join(root, "config.json"),
		"SFSWEEP_MODE":           "train",
		"CUDA_VISIBLE_DEVICES":   "",
	}
	if onGPU(cfg) {
		if a.GPUDevices != "" {
			env["CUDA_VISIBLE_DEVICES"] = a.GPUDevices
		} else if d, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok {
			env["CUDA_VISIBLE_DEVICES"] = d
		} else {
			delete(env, "CUDA_VISIBLE_DEVICES")
		}
	}
	doc := map[string]any{"trial_id": in.TrialID, "config": cfg, "params": cfg.Trainer.Params}
	if cfg.Model != "" || cfg.ModelConfig != nil {
		if mc, err := cfg.ResolveModel(); err == nil {
			doc["model"] = mc
		}
	}
	if cfg.Data.Path != "" || cfg.Data.Default != "" {
		dir, err := a.programData(ctx, cfg.Data)
		if err != nil {
			return nil, err
		}
		env["SFSWEEP_DATA"], doc["data"] = dir, dir
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return env, os.WriteFile(env["SFSWEEP_CONFIG"], b, 0o644)
}

// programData is a local directory holding the token files of d: the directory itself,
// the default corpus's cache, or a copy of a dataset in the store, made once.
func (a *Activities) programData(ctx context.Context, d training.DataConfig) (string, error) {
	switch {
	case d.Default != "":
		c, err := data.LoadCorpus(ctx, data.CorpusOptions{Tokenizer: d.Default, CacheDir: a.CacheDir, MaxBytes: d.MaxBytes})
		if err != nil {
			return "", err
		}
		return c.Dir, nil
	case isDir(d.Path):
		return d.Path, nil
	}
	// a copy per dataset, named by the digest of its meta.json (which holds the splits'
	// hashes): only meta.json is read from the store once the copy exists
	prefix := strings.TrimSuffix(d.Path, "/")
	meta, err := a.Store.Get(ctx, prefix+"/meta.json")
	if err != nil {
		return "", fmt.Errorf("data.path %s: %w", d.Path, err)
	}
	sum := sha256.Sum256(meta)
	digest := hex.EncodeToString(sum[:])
	dir := filepath.Join(a.CacheDir, "datasets", digest)
	if ds, err := data.OpenDir(dir); err == nil && ds.Digest() == digest {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "copy-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	ks, err := a.Store.List(ctx, prefix+"/")
	if err != nil {
		return "", err
	}
	for _, k := range ks {
		b, err := a.Store.Get(ctx, k)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(tmp, filepath.Base(k)), b, 0o644); err != nil {
			return "", err
		}
	}
	if ds, err := data.OpenDir(tmp); err != nil || ds.Digest() != digest { // verified against its meta
		return "", fmt.Errorf("data.path %s: the copy does not verify: %v", d.Path, err)
	}
	if err := os.Rename(tmp, dir); err != nil && !isDir(dir) {
		return "", err
	}
	return dir, nil
}

// resolveIn is p under dir if it is relative; "" stays "".
func resolveIn(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

func isDir(p string) bool { fi, err := os.Stat(p); return err == nil && fi.IsDir() }

// workDir is where program attempts get their directories.
func (a *Activities) workDir() string {
	d := filepath.Join(a.CacheDir, "programs")
	if a.CacheDir == "" {
		d = filepath.Join(os.TempDir(), "sfsweep-programs")
	}
	_ = os.MkdirAll(d, 0o755)
	return d
}

// attemptSummary is what the store keeps of a program's attempt beside its logs
// (attempt-N.json): how it ended, the metrics lines refused, the end of its stderr.
type attemptSummary struct {
	Status        program.Status `json:"status"`
	ExitCode      int            `json:"exit_code"`
	Signal        string         `json:"signal,omitempty"`
	Reason        string         `json:"reason,omitempty"`
	LastStep      int            `json:"last_step"`
	Lines         int            `json:"lines"`
	Refused       int            `json:"refused_lines"`
	RefusedSample []string       `json:"refused_sample,omitempty"`
	StderrTail    []string       `json:"stderr_tail,omitempty"`
}

// logStreamEvery is how often a running attempt's stdout and stderr are copied to the
// store: a worker killed mid-attempt leaves its program's output that fresh.
const logStreamEvery = 15 * time.Second

// logStream copies a running attempt's logs to the store, where keepLogs puts them once it
// has ended: at its first sync, then at most every logStreamEvery, each stream when it
// has grown.
type logStream struct {
	a              *Activities
	id             string
	until, attempt int
	dir            string
	last           time.Time
	sizes          map[string]int64
}

func (l *logStream) sync(ctx context.Context) {
	if !l.last.IsZero() && time.Since(l.last) < logStreamEvery {
		return
	}
	l.last = time.Now()
	for _, stream := range []string{"stdout", "stderr"} {
		file := filepath.Join(l.dir, stream)
		fi, err := os.Stat(file)
		if err != nil || fi.Size() == l.sizes[stream] {
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		if err := l.a.Store.Put(ctx, keys.ProgramLog(l.id, l.until, l.attempt, stream), b); err != nil {
			l.a.log().Warn("stream program log", "trial", l.id, "stream", stream, "err", err)
			continue
		}
		l.sizes[stream] = int64(len(b))
	}
}

// keepLogs stores the attempt's stdout, stderr and summary. A log that cannot be stored
// is only logged: the attempt's outcome stands.
func (a *Activities) keepLogs(ctx context.Context, id string, until, attempt int, dir string, out program.Outcome) {
	objects := map[string][]byte{}
	for _, stream := range []string{"stdout", "stderr"} {
		if b, err := os.ReadFile(filepath.Join(dir, stream)); err == nil {
			objects[stream] = b
		}
	}
	objects["json"], _ = json.MarshalIndent(attemptSummary{
		Status: out.Status, ExitCode: out.ExitCode, Signal: out.Signal, Reason: out.Reason, LastStep: out.Last.Step,
		Lines: out.Lines, Refused: out.Refused, RefusedSample: out.RefusedSample, StderrTail: out.StderrTail,
	}, "", "  ")
	for stream, b := range objects {
		if err := a.Store.Put(context.WithoutCancel(ctx), keys.ProgramLog(id, until, attempt, stream), b); err != nil {
			a.log().Warn("store program log", "trial", id, "stream", stream, "err", err)
		}
	}
}

// programCurves are a program trial's curves: those stored by earlier attempts, with
// each new metrics line in place of any at or after its step.
type programCurves struct {
	mu      sync.Mutex
	points  []training.CurvePoint
	iterate string // the iterate a line's val_loss is (x for SF-AdamW, w otherwise)
	last    program.Metric
	test    *float64
	named   map[string]float64
	dirty   bool
}

// add takes a metrics line. A line with a loss that is not finite is the divergence the
// outcome records, not a point of the curves (JSON has no NaN); a named metric that is not
// finite is left out.
func (c *programCurves) add(m program.Metric) {
	if !m.Finite() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.points) > 0 && c.points[len(c.points)-1].Step >= m.Step {
		c.points = c.points[:len(c.points)-1]
	}
	p := training.CurvePoint{Step: m.Step, Tokens: m.Tokens, Val: map[string]float64{}}
	if m.LR != nil {
		p.LR = *m.LR
	}
	if m.TrainLoss != nil {
		p.TrainLoss = *m.TrainLoss
	}
	for k, v := range m.Val {
		p.Val[k] = v
	}
	if m.ValLoss != nil {
		p.Val[c.iterate] = *m.ValLoss
	}
	for k, v := range m.Named {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		if p.Metrics == nil {
			p.Metrics = map[string]float64{}
		}
		if c.named == nil {
			c.named = map[string]float64{}
		}
		p.Metrics[k], c.named[k] = v, v
	}
	if m.TestLoss != nil && !math.IsNaN(*m.TestLoss) && !math.IsInf(*m.TestLoss, 0) {
		c.test = m.TestLoss
	}
	c.points = append(c.points, p)
	c.last, c.dirty = m, true
}

// flush writes the curves if a line came since the last write.
func (c *programCurves) flush(ctx context.Context, rec trial.Recorder) error {
	c.mu.Lock()
	if !c.dirty {
		c.mu.Unlock()
		return nil
	}
	points := append([]training.CurvePoint(nil), c.points...)
	c.dirty = false
	c.mu.Unlock()
	return rec.WriteCurves(context.WithoutCancel(ctx), points)
}

// result is the trial's result from its curves: the last validation loss of each
// iterate, the test loss, the named metrics of the last lines.
func (c *programCurves) result(cfg training.Config, st status.Status, divergedAt int, took time.Duration) *training.Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := &training.Result{
		ConfigHash: cfg.Hash(), Status: st, DivergedAt: divergedAt, Primary: c.iterate,
		EvalSeqs: cfg.EvalSeqs, TestSeqs: cfg.TestSeqs, Curves: c.points, Seconds: took.Seconds(),
		Engine:  backend.Provenance{Backend: "program:" + cfg.Trainer.Name, Arithmetic: cfg.Trainer.Identity, Code: backend.CodeVersion()},
		Metrics: c.named,
	}
	if n := len(c.points); n > 0 {
		r.Steps, r.Tokens = c.points[n-1].Step, c.points[n-1].Tokens
	}
	if st == status.Completed {
		r.Val = map[string]float64{}
		for _, p := range c.points {
			for k, v := range p.Val {
				r.Val[k] = v
			}
		}
		if c.test != nil {
			r.Test = map[string]float64{c.iterate: *c.test}
			r.TestPPL = map[string]float64{c.iterate: math.Exp(*c.test)}
		}
	}
	return r
}
