package training

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/model"
)

// Config is one training run: the model, the data, the optimizer and its hyperparameters,
// the batch, the length of the run and how often it evaluates and checkpoints. Its YAML
// and JSON forms use the snake_case names of the tags; unknown fields are errors.
// The defaults (WithDefaults) are the paper's appendix "Training details".
type Config struct {
	Setup `yaml:",inline"`

	Optimizer   OptimizerConfig `json:"optimizer" yaml:"optimizer"`
	BatchTokens int             `json:"batch_tokens" yaml:"batch_tokens"` // tokens per optimizer step (the paper: 0.5M and 2M)

	Loop `yaml:",inline"`
	Seed uint64 `json:"seed" yaml:"seed"` // initialisation and batch sampling

	// Trainer, if set, is the program that trains the run instead of sfsweep's engine
	// (docs/trainer.md). Such a run may leave out the optimizer, the model, the data and
	// the batch, which are then the program's own business.
	Trainer *Trainer `json:"trainer,omitempty" yaml:"trainer,omitempty"`
}

// Setup is what a run trains, where, and on what: the model, the backend and the data.
//
// Setup and Loop are the run settings, which a sweep's trials share: sweeps.Manifest
// embeds them as Config does, so that a run option is declared once, with one YAML key,
// one default (Config.WithDefaults) and one check (Config.Validate), whose error names
// the field as the manifest and config.json spell it. They are two structs, around the
// optimizer and the batch, because that is the order of config.json's fields, and the
// bytes of config.json are hashed into the trial's ID (Config.Hash). For that reason too,
// a new field must be left out of the JSON at the value that means "as before"
// (omitempty, at its zero value, which WithDefaults leaves alone), or every trial's ID
// changes.
type Setup struct {
	// Model is a preset name (model.PresetNames); ModelConfig, if set, overrides it whole.
	Model       string        `json:"model,omitempty" yaml:"model,omitempty"`
	ModelConfig *model.Config `json:"model_config,omitempty" yaml:"model_config,omitempty"`
	Backend     string        `json:"backend,omitempty" yaml:"backend,omitempty"` // a name of backend.Catalog; "": backend.Default
	// Precision, if set, picks the backend of Backend's family with that precision of
	// matrix products (backend: cuda, precision: bf16 is the backend cuda-bf16);
	// WithDefaults folds it into Backend, so the two spellings are one config.
	Precision backend.Precision `json:"precision,omitempty" yaml:"precision,omitempty"`
	// GPUs is how many GPUs a program trainer's trial is given (docs/trainer.md, "GPUs"):
	// its program sees them, and only them, in CUDA_VISIBLE_DEVICES. 0 is its backend's
	// default: one GPU on a GPU backend, none on the cpu. Set without a backend, it puts
	// the trial on the GPU (backend cuda). WithDefaults folds a single GPU into the
	// backend, so gpus: 1 and backend: cuda are one config. The engine's trials take no
	// gpus: they train on their backend's device.
	GPUs int `json:"gpus,omitempty" yaml:"gpus,omitempty"`

	Data DataConfig `json:"data" yaml:"data"`
}

// Loop is how a run's loop goes: the shape of its micro-batches, its length, and how
// often it evaluates, checkpoints and averages.
type Loop struct {
	MicroBatch int `json:"micro_batch,omitempty" yaml:"micro_batch,omitempty"` // sequences per forward pass; default the preset's batch
	SeqLen     int `json:"seq_len,omitempty" yaml:"seq_len,omitempty"`         // tokens per sequence; default the model's context
	Steps      int `json:"steps" yaml:"steps"`                                 // optimizer steps

	EvalEvery       int     `json:"eval_every,omitempty" yaml:"eval_every,omitempty"`             // steps between evaluations; 0: only at the end
	EvalSeqs        int     `json:"eval_seqs,omitempty" yaml:"eval_seqs,omitempty"`               // validation sequences (the paper: 3,200)
	TestSeqs        int     `json:"test_seqs,omitempty" yaml:"test_seqs,omitempty"`               // held-out test sequences at the end
	CheckpointEvery int     `json:"checkpoint_every,omitempty" yaml:"checkpoint_every,omitempty"` // steps between checkpoints; 0: none
	KeepCheckpoints int     `json:"keep_checkpoints,omitempty" yaml:"keep_checkpoints,omitempty"` // newest checkpoints kept; 0: all
	EWADecay        float64 `json:"ewa_decay,omitempty" yaml:"ewa_decay,omitempty"`               // decay of the EWA iterates (the paper: 0.99)
}

// DataConfig says where the token files come from: a prepared dataset (Path: a local
// directory or a key prefix in the object store, with train.bin, val.bin, test.bin and
// meta.json), or the offline default corpus (Default: the Go toolchain's source tree,
// tokenised with the named tokenizer, "byte" or "gpt2").
type DataConfig struct {
	Path     string `json:"path,omitempty" yaml:"path,omitempty"`
	Default  string `json:"default,omitempty" yaml:"default,omitempty"`
	MaxBytes int64  `json:"max_bytes,omitempty" yaml:"max_bytes,omitempty"` // cap on the default corpus's source bytes
}

// OptimizerConfig is the optimizer of a run. Name "sfadamw" is Schedule-Free AdamW
// (Algorithm 1; refined, Algorithm 2, when C > 0), "adamw" is AdamW with Schedule.
type OptimizerConfig struct {
	Name        string   `json:"name" yaml:"name"`
	LR          float64  `json:"lr" yaml:"lr"`
	Beta1       float64  `json:"beta1" yaml:"beta1"`
	Beta2       float64  `json:"beta2" yaml:"beta2"`
	Eps         float64  `json:"eps,omitempty" yaml:"eps,omitempty"`
	WeightDecay *float64 `json:"weight_decay,omitempty" yaml:"weight_decay,omitempty"` // default 0.1
	C           float64  `json:"c,omitempty" yaml:"c,omitempty"`                       // refined SF-AdamW; 0 is vanilla
	GradClip    *float64 `json:"grad_clip,omitempty" yaml:"grad_clip,omitempty"`       // default 1.0 for AdamW, 0 (off) for SF-AdamW
	WarmupFrac  *float64 `json:"warmup_frac,omitempty" yaml:"warmup_frac,omitempty"`   // warmup as a fraction of steps; default 0.05
	Schedule    string   `json:"schedule,omitempty" yaml:"schedule,omitempty"`         // AdamW: constant, cosine (default), linear, wsd
	FinalFrac   *float64 `json:"final_frac,omitempty" yaml:"final_frac,omitempty"`     // AdamW cosine: final LR / peak; default 0.1
	DecayFrac   float64  `json:"decay_frac,omitempty" yaml:"decay_frac,omitempty"`     // AdamW wsd: decay branch as a fraction of steps
	// DecayParams is what weight decay applies to: DecayLinear (the default, as the
	// paper's code: the weights of linear layers, no norm, bias or embedding, so not the
	// tied LM head either) or DecayAll (every parameter).
	DecayParams string `json:"decay_params,omitempty" yaml:"decay_params,omitempty"`
}

// The values of OptimizerConfig.DecayParams.
const (
	DecayLinear = "linear"
	DecayAll    = "all"
)

// The optimizer names.
const (
	SFAdamW = "sfadamw"
	AdamW   = "adamw"
)

// backendNames lists the catalog's backends for an error: "cpu" (the native engine: ...), ...
func backendNames() string {
	var b strings.Builder
	for i, info := range backend.Catalog() {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q (%s)", info.Name, info.Summary)
	}
	return b.String()
}

// precisionNames lists the precisions a config may ask for: fp32, tf32, bf16.
func precisionNames() string {
	names := make([]string, len(backend.Precisions))
	for i, p := range backend.Precisions {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

// DefaultWeightDecay is the weight decay where a run gives none: the paper's 0.1.
const DefaultWeightDecay = 0.1

// DefaultWarmupFrac is the warmup's default share of the run's steps: the paper's 5%.
const DefaultWarmupFrac = 0.05

func ptr(v float64) *float64 { return &v }

// maxCount bounds the counts of a config (2^40: a trillion tokens in a batch), so that
// their products cannot overflow.
const maxCount = 1 << 40

// WithDefaults fills the fields left unset with the paper's values.
func (c Config) WithDefaults() Config {
	if c.Backend == "" && c.Trainer != nil && c.GPUs > 0 {
		c.Backend = backend.DeviceCUDA // a program's GPUs: the GPU family's default
	}
	if c.Backend == "" {
		c.Backend = backend.Default
	}
	if name, err := backend.Resolve(c.Backend, c.Precision); err == nil {
		c.Backend, c.Precision = name, "" // else Validate reports the precision
	}
	if b, ok := backend.Lookup(c.Backend); ok && c.Trainer != nil && c.GPUs == 1 && b.Device != backend.DeviceCPU {
		c.GPUs = 0 // one GPU is a GPU backend's default
	}
	if c.Trainer == nil || c.Optimizer.Name != "" {
		c.optimizerDefaults()
	}
	if c.EWADecay == 0 {
		c.EWADecay = 0.99
	}
	if c.Trainer == nil && c.Data.Path == "" && c.Data.Default == "" {
		c.Data.Default = "byte"
	}
	if c.Data.Default != "" && c.Data.MaxBytes == 0 {
		c.Data.MaxBytes = 16 << 20
	}
	// a program is passed the evaluation sizes a manifest gives, and none it does not
	if c.EvalSeqs == 0 && c.Trainer == nil {
		c.EvalSeqs = 3200
	}
	if c.TestSeqs == 0 && c.Trainer == nil {
		c.TestSeqs = c.EvalSeqs
	}
	if mc, err := c.ResolveModel(); err == nil {
		if c.MicroBatch == 0 {
			c.MicroBatch = mc.Batch
		}
		if c.SeqLen == 0 {
			c.SeqLen = mc.Context
		}
	}
	return c
}

// optimizerDefaults fills the optimizer's fields left unset with the paper's values.
func (c *Config) optimizerDefaults() {
	o := &c.Optimizer
	if o.Eps == 0 {
		o.Eps = 1e-8
	}
	if o.WeightDecay == nil {
		o.WeightDecay = ptr(DefaultWeightDecay)
	}
	if o.DecayParams == "" {
		o.DecayParams = DecayLinear
	}
	if o.WarmupFrac == nil {
		o.WarmupFrac = ptr(DefaultWarmupFrac)
	}
	if o.GradClip == nil {
		if o.Name == AdamW {
			o.GradClip = ptr(1.0)
		} else {
			o.GradClip = ptr(0)
		}
	}
	if o.Name == AdamW {
		if o.Schedule == "" {
			o.Schedule = string(sfadamw.Cosine)
		}
		if o.FinalFrac == nil {
			o.FinalFrac = ptr(0.1)
		}
	}
}

// ResolveModel returns the model of the run: ModelConfig with defaults, or the preset.
func (c Config) ResolveModel() (model.Config, error) {
	if c.ModelConfig != nil {
		mc := c.ModelConfig.WithDefaults()
		if err := mc.Validate(); err != nil {
			return mc, fielderr.Under("model_config", err)
		}
		return mc, nil
	}
	if c.Model == "" {
		return model.Config{}, &fielderr.Error{Field: "model", Value: `""`, Reason: fmt.Sprintf("must name a preset %v or give model_config", model.PresetNames())}
	}
	mc, err := model.Preset(c.Model)
	if err != nil {
		return mc, &fielderr.Error{Field: "model", Value: c.Model, Reason: fmt.Sprintf("unknown preset; known: %v", model.PresetNames())}
	}
	return mc, nil
}

// Accum returns the micro-batches per optimizer step: BatchTokens / (MicroBatch·SeqLen).
func (c Config) Accum() int { return c.BatchTokens / (c.MicroBatch * c.SeqLen) }

// WarmupSteps returns the warmup in steps: WarmupFrac of Steps, rounded down.
func (c Config) WarmupSteps() int { return int(*c.Optimizer.WarmupFrac * float64(c.Steps)) }

// Validate checks a Config with defaults applied; the error is a *fielderr.Error naming the
// first invalid field.
func (c Config) Validate() error {
	if c.Trainer != nil {
		if err := c.Trainer.Check(); err != nil {
			return err
		}
	}
	// a program trainer's run may leave the model, the batch and the optimizer to the
	// program
	sized := c.Trainer == nil || c.Model != "" || c.ModelConfig != nil
	var mc model.Config
	if sized {
		var err error
		if mc, err = c.ResolveModel(); err != nil {
			return err
		}
	}
	if _, ok := backend.Lookup(c.Backend); !ok {
		return &fielderr.Error{Field: "backend", Value: c.Backend, Reason: "must be one of " + backendNames()}
	}
	if err := c.validateGPUs(); err != nil {
		return err
	}
	if c.Precision != "" {
		_, err := backend.Resolve(c.Backend, c.Precision)
		reason := "must be one of " + precisionNames()
		if slices.Contains(backend.Precisions, c.Precision) && err != nil {
			_, reason, _ = strings.Cut(err.Error(), ": ")
		}
		return &fielderr.Error{Field: "precision", Value: c.Precision, Reason: reason}
	}
	if c.Data.Path != "" && c.Data.Default != "" {
		return &fielderr.Error{Field: "data.default", Value: c.Data.Default, Reason: "give data.path or data.default, not both"}
	}
	if c.Data.Default != "" && c.Data.Default != "byte" && c.Data.Default != "gpt2" {
		return &fielderr.Error{Field: "data.default", Value: c.Data.Default, Reason: `must be a tokenizer: "byte" or "gpt2"`}
	}
	if c.Data.MaxBytes < 0 {
		return &fielderr.Error{Field: "data.max_bytes", Value: c.Data.MaxBytes, Reason: "must be ≥ 0"}
	}
	pos := []struct {
		name string
		v    int
	}{{"steps", c.Steps}, {"batch_tokens", c.BatchTokens}, {"micro_batch", c.MicroBatch}, {"seq_len", c.SeqLen}, {"eval_seqs", c.EvalSeqs}, {"test_seqs", c.TestSeqs}}
	for _, f := range pos {
		if f.v == 0 && (!sized && (f.name == "batch_tokens" || f.name == "micro_batch" || f.name == "seq_len") ||
			c.Trainer != nil && (f.name == "eval_seqs" || f.name == "test_seqs")) {
			continue // left to the program
		}
		if f.v < 1 {
			return &fielderr.Error{Field: f.name, Value: f.v, Reason: "must be ≥ 1"}
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"eval_every", c.EvalEvery}, {"checkpoint_every", c.CheckpointEvery}, {"keep_checkpoints", c.KeepCheckpoints}} {
		if f.v < 0 {
			return &fielderr.Error{Field: f.name, Value: f.v, Reason: "must be ≥ 0"}
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"micro_batch", c.MicroBatch}, {"batch_tokens", c.BatchTokens}, {"steps", c.Steps}, {"eval_seqs", c.EvalSeqs}, {"test_seqs", c.TestSeqs}} {
		if f.v > maxCount {
			return &fielderr.Error{Field: f.name, Value: f.v, Reason: fmt.Sprintf("must be ≤ %d", maxCount)}
		}
	}
	if !sized {
		return c.ValidateOptimizer()
	}
	if c.SeqLen > mc.Context {
		return &fielderr.Error{Field: "seq_len", Value: c.SeqLen, Reason: fmt.Sprintf("must be ≤ the model's context (%d)", mc.Context)}
	}
	if seq := c.MicroBatch * c.SeqLen; c.BatchTokens%seq != 0 {
		return &fielderr.Error{Field: "batch_tokens", Value: c.BatchTokens, Reason: fmt.Sprintf("must be a multiple of micro_batch × seq_len = %d × %d = %d", c.MicroBatch, c.SeqLen, seq)}
	}
	return c.ValidateOptimizer()
}

// MaxGPUs bounds gpus: the GPUs of one node a trial takes.
const MaxGPUs = 64

// validateGPUs checks gpus: a program trial's, on a GPU backend, up to MaxGPUs of one node
// (several need a trainer with a launcher, which the worker that runs it checks).
func (c Config) validateGPUs() error {
	switch b, _ := backend.Lookup(c.Backend); {
	case c.GPUs == 0:
		return nil
	case c.GPUs < 0:
		return &fielderr.Error{Field: "gpus", Value: c.GPUs, Reason: "must be ≥ 0"}
	case c.Trainer == nil:
		return &fielderr.Error{Field: "gpus", Value: c.GPUs, Reason: "only a program trainer's trial takes gpus: sfsweep's engine trains on one device, its backend's (backend: cuda for a GPU)"}
	case b.Device == backend.DeviceCPU:
		return &fielderr.Error{Field: "gpus", Value: c.GPUs, Reason: fmt.Sprintf("backend %s gives its program no GPU: leave backend out, or name one on a GPU", c.Backend)}
	case c.GPUs > MaxGPUs:
		return &fielderr.Error{Field: "gpus", Value: c.GPUs, Reason: fmt.Sprintf("must be ≤ %d: a trial's GPUs are those of one node", MaxGPUs)}
	}
	return nil
}

// ValidateOptimizer checks the run's EWA and optimizer alone, as Validate does after the
// rest: a caller that reports every invalid field checks them even where the rest is
// invalid. A program trainer's run may have none.
func (c Config) ValidateOptimizer() error {
	if math.IsNaN(c.EWADecay) || c.EWADecay <= 0 || c.EWADecay >= 1 {
		return &fielderr.Error{Field: "ewa_decay", Value: c.EWADecay, Reason: "must be in (0, 1)"}
	}
	o := c.Optimizer
	if c.Trainer != nil && o.Name == "" {
		return nil
	}
	if wf := *o.WarmupFrac; math.IsNaN(wf) || wf < 0 || wf >= 1 {
		return &fielderr.Error{Field: "optimizer.warmup_frac", Value: wf, Reason: "must be in [0, 1)"}
	}
	if o.DecayParams != DecayLinear && o.DecayParams != DecayAll {
		return &fielderr.Error{Field: "optimizer.decay_params", Value: fmt.Sprintf("%q", o.DecayParams),
			Reason: `must be "linear" (the weights of linear layers, as the paper's code) or "all" (every parameter)`}
	}
	var oerr error
	switch o.Name {
	case SFAdamW:
		oerr = c.SFAdamWConfig().Validate()
	case AdamW:
		if ff := *o.FinalFrac; math.IsNaN(ff) || ff < 0 || ff > 1 {
			return &fielderr.Error{Field: "optimizer.final_frac", Value: ff, Reason: "must be in [0, 1]"}
		}
		if o.Schedule == string(sfadamw.WSD) && (math.IsNaN(o.DecayFrac) || o.DecayFrac <= 0 || o.DecayFrac > 1) {
			return &fielderr.Error{Field: "optimizer.decay_frac", Value: o.DecayFrac, Reason: "must be in (0, 1] for the wsd schedule"}
		}
		if o.C != 0 {
			return &fielderr.Error{Field: "optimizer.c", Value: o.C, Reason: "applies to sfadamw only"}
		}
		oerr = c.AdamWConfig().Validate()
	default:
		return &fielderr.Error{Field: "optimizer.name", Value: fmt.Sprintf("%q", o.Name), Reason: `must be "sfadamw" or "adamw"`}
	}
	return fielderr.Under("optimizer", oerr)
}

// SFAdamWConfig returns the SF-AdamW configuration of the run.
func (c Config) SFAdamWConfig() sfadamw.Config {
	o := c.Optimizer
	return sfadamw.Config{
		LR: o.LR, Beta1: o.Beta1, Beta2: o.Beta2, Eps: o.Eps, WeightDecay: *o.WeightDecay,
		WarmupSteps: c.WarmupSteps(), C: o.C, GradClip: *o.GradClip, Decayed: c.decayed(),
	}
}

// decayed are the runs of the parameter buffer weight decay applies to: nil (all) for
// DecayAll, else those of the model's linear weights (model.Layout.Decayed).
func (c Config) decayed() []sfadamw.Span {
	if c.Optimizer.DecayParams == DecayAll {
		return nil
	}
	mc, err := c.ResolveModel()
	if err != nil {
		return nil // Validate reports the model
	}
	var spans []sfadamw.Span
	for _, r := range mc.Layout().Decayed() {
		spans = append(spans, sfadamw.Span{Lo: r[0], Hi: r[1]})
	}
	return spans
}

// AdamWConfig returns the AdamW configuration of the run.
func (c Config) AdamWConfig() sfadamw.AdamWConfig {
	o := c.Optimizer
	s := sfadamw.Schedule{
		Kind: sfadamw.ScheduleKind(o.Schedule), Peak: o.LR, WarmupSteps: c.WarmupSteps(),
		TotalSteps: c.Steps, FinalFrac: *o.FinalFrac,
	}
	if s.Kind == sfadamw.WSD {
		s.DecaySteps = max(1, int(o.DecayFrac*float64(c.Steps)))
		s.DecayStart = c.Steps - s.DecaySteps
	}
	return sfadamw.AdamWConfig{Schedule: s, Beta1: o.Beta1, Beta2: o.Beta2, Eps: o.Eps, WeightDecay: *o.WeightDecay, GradClip: *o.GradClip, Decayed: c.decayed()}
}

// Canonical returns the config that identifies the run: defaults applied, the model
// resolved to its full configuration, and refined SF-AdamW with C = 1/(1−β1) mapped to
// vanilla (C = 0), which is the same run.
func (c Config) Canonical() Config {
	c = c.WithDefaults()
	if mc, err := c.ResolveModel(); err == nil {
		c.Model, c.ModelConfig = "", &mc
	}
	if c.Optimizer.Name == SFAdamW {
		c.Optimizer.C = c.SFAdamWConfig().Canonical().C
	}
	return c
}

// Hash returns the hex sha256 of the canonical config's JSON: runs with equal hashes are
// the same run.
func (c Config) Hash() string {
	b, err := json.Marshal(c.Canonical())
	if err != nil {
		panic(err) // a Config always marshals
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// ParseConfig reads a YAML (or JSON) run config, rejecting unknown fields with the line
// where they stand, and returns it with defaults applied and validated.
func ParseConfig(src []byte) (Config, error) {
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("config: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	c = c.WithDefaults()
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	return c, nil
}
