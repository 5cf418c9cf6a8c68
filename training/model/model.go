// Package model describes the transformer language models sfsweep trains: their
// configuration, the named presets of the paper and their CPU-sized twins, the layout of all
// parameters in one flat buffer, deterministic initialisation, and the FLOP count of a step.
//
// It holds no compute: the engines (the native CPU engine, the gorgonia oracle, the GPU
// backend) all read the same Config and Layout, so a parameter buffer, a checkpoint and a
// gradient mean the same thing to each of them.
package model

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/sfsweep/sfsweep/fielderr"
)

// Arch is a model architecture.
type Arch string

const (
	// LLaMA is the paper's main model, llm-baselines' Llama: token embedding, pre-norm
	// RMSNorm, RoPE (θ = 10000), causal multi-head attention, SwiGLU MLP, final RMSNorm, LM
	// head tied to the token embedding, no biases.
	LLaMA Arch = "llama"
	// GPT2 is the paper's appendix model, llm-baselines' GPT-2 (its base model, nanoGPT's):
	// learned position embedding, LayerNorm, GELU MLP, LM head tied to the token embedding,
	// and no biases, as llm-baselines' default (bias False); Biases gives nanoGPT's.
	GPT2 Arch = "gpt2"
)

// Config is one model. Presets are values of it; any other size comes from a config file.
type Config struct {
	Arch      Arch    `json:"arch"`
	Vocab     int     `json:"vocab"`      // vocabulary size (50304 = GPT-2's 50257 padded to a multiple of 64)
	Dim       int     `json:"dim"`        // model width d
	Layers    int     `json:"layers"`     // transformer blocks L
	Heads     int     `json:"heads"`      // attention heads; Dim must be a multiple
	Context   int     `json:"context"`    // maximum sequence length T
	Hidden    int     `json:"hidden"`     // MLP width: SwiGLU hidden (LLaMA) or 4d (GPT-2)
	Batch     int     `json:"batch"`      // default sequences per micro-batch
	RopeTheta float64 `json:"rope_theta"` // RoPE base (LLaMA)
	NormEps   float64 `json:"norm_eps"`   // ε of RMSNorm / LayerNorm
	InitStd   float64 `json:"init_std"`   // standard deviation of the weight initialisation
	// Untied gives the LM head its own weight, lm_head.weight, as llm-baselines'
	// --untied_embeds; by default the head is the token embedding, as the paper's models.
	// It is always written, so a config of before the field, whose LLaMA was untied, never
	// has the hash of a tied one.
	Untied bool `json:"untied"`
	// Biases gives GPT-2's linear layers and LayerNorms biases, as nanoGPT and GPT-2 itself
	// have them; by default they have none, as llm-baselines' --bias False. LLaMA has none.
	// Written only when set: every config written since untied was, which has it, had
	// biases only where it says so.
	Biases bool `json:"biases,omitempty"`
}

// Tied reports whether the LM head is the token embedding.
func (c Config) Tied() bool { return !c.Untied }

var presets = map[string]Config{
	// The paper's models (appendix "Architectures"): 124M parameters at d 768.
	"llama-124m": {Arch: LLaMA, Vocab: 50304, Dim: 768, Layers: 12, Heads: 12, Context: 512, Hidden: 2048, Batch: 8},
	"gpt2-124m":  {Arch: GPT2, Vocab: 50304, Dim: 768, Layers: 12, Heads: 12, Context: 512, Hidden: 3072, Batch: 8},
	// CPU-sized twins, the same as the PyTorch peer's "tiny" and "small".
	"tiny-llama":  {Arch: LLaMA, Vocab: 512, Dim: 128, Layers: 4, Heads: 4, Context: 128, Hidden: 344, Batch: 16},
	"small-llama": {Arch: LLaMA, Vocab: 50304, Dim: 384, Layers: 6, Heads: 6, Context: 256, Hidden: 1024, Batch: 8},
	"tiny-gpt2":   {Arch: GPT2, Vocab: 512, Dim: 128, Layers: 4, Heads: 4, Context: 128, Hidden: 512, Batch: 16},
	// The model of the CPU twins of the paper's experiments (sweeps/examples/*-tiny.yaml):
	// tiny-llama at half the width, the smallest tried at which the paper's effects stand
	// above seed noise. Its step trains 2.4× the tokens per second of tiny-llama's
	// (sfsweep bench -model twin-llama, then -model tiny-llama; AVX-512, 2 cores).
	"twin-llama": {Arch: LLaMA, Vocab: 512, Dim: 64, Layers: 4, Heads: 4, Context: 128, Hidden: 172, Batch: 16},
	// The model of the findings' twins, which train it to the paper's ~20 tokens per
	// parameter: twin-llama at 3/4 of the width, 3 blocks, and the byte vocabulary (257 ids)
	// padded to a multiple of 64. 98,640 parameters, tied; its step trains 1.5× the tokens per
	// second of twin-llama's (sfsweep bench; AVX-512, 2 cores, untied), so 1,100 steps of
	// 2,048 tokens (22.8 tokens per parameter) cost about what 600 of twin-llama's did.
	"mini-llama": {Arch: LLaMA, Vocab: 320, Dim: 48, Layers: 3, Heads: 4, Context: 128, Hidden: 128, Batch: 16},
	// A model small enough for finite-difference and oracle checks.
	"micro-llama": {Arch: LLaMA, Vocab: 32, Dim: 16, Layers: 2, Heads: 2, Context: 8, Hidden: 24, Batch: 2},
	"micro-gpt2":  {Arch: GPT2, Vocab: 32, Dim: 16, Layers: 2, Heads: 2, Context: 8, Hidden: 64, Batch: 2},
}

// Preset returns the named preset with defaults filled in.
func Preset(name string) (Config, error) {
	c, ok := presets[name]
	if !ok {
		return Config{}, fmt.Errorf("model preset %q: unknown; known presets: %v", name, PresetNames())
	}
	return c.WithDefaults(), nil
}

// PresetNames lists the presets in sorted order.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// WithDefaults fills the fields left zero with the paper's values: RoPE θ = 10000,
// norm ε = 1e-5, initialisation standard deviation 0.02.
func (c Config) WithDefaults() Config {
	if c.RopeTheta == 0 && c.Arch == LLaMA {
		c.RopeTheta = 10000
	}
	if c.NormEps == 0 {
		c.NormEps = 1e-5
	}
	if c.InitStd == 0 {
		c.InitStd = 0.02
	}
	return c
}

// Validate reports the first invalid field as a *fielderr.Error.
func (c Config) Validate() error {
	if c.Arch != LLaMA && c.Arch != GPT2 {
		return &fielderr.Error{Field: "arch", Value: c.Arch, Reason: `must be "llama" or "gpt2"`}
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"vocab", c.Vocab}, {"dim", c.Dim}, {"layers", c.Layers}, {"heads", c.Heads}, {"context", c.Context}, {"hidden", c.Hidden}, {"batch", c.Batch}} {
		if f.v < 1 {
			return &fielderr.Error{Field: f.name, Value: f.v, Reason: "must be ≥ 1"}
		}
	}
	if c.Dim%c.Heads != 0 {
		return &fielderr.Error{Field: "heads", Value: c.Heads, Reason: fmt.Sprintf("must divide dim (%d)", c.Dim)}
	}
	if c.Biases && c.Arch != GPT2 {
		return &fielderr.Error{Field: "biases", Value: true, Reason: "only a gpt2 model has biases"}
	}
	if c.Arch == LLaMA && (c.Dim/c.Heads)%2 != 0 {
		return &fielderr.Error{Field: "heads", Value: c.Heads, Reason: fmt.Sprintf("head size dim/heads = %d must be even for RoPE", c.Dim/c.Heads)}
	}
	if c.Vocab > 1<<16 {
		return &fielderr.Error{Field: "vocab", Value: c.Vocab, Reason: "must be ≤ 65536 (tokens are stored as uint16)"}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"norm_eps", c.NormEps}, {"init_std", c.InitStd}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v <= 0 {
			return &fielderr.Error{Field: f.name, Value: f.v, Reason: "must be a finite number > 0"}
		}
	}
	if c.Arch == LLaMA && (math.IsNaN(c.RopeTheta) || math.IsInf(c.RopeTheta, 0) || c.RopeTheta <= 1) {
		return &fielderr.Error{Field: "rope_theta", Value: c.RopeTheta, Reason: "must be a finite number > 1"}
	}
	return nil
}

// HeadDim returns the size of one attention head, Dim/Heads.
func (c Config) HeadDim() int { return c.Dim / c.Heads }

// Tensor is one named parameter tensor inside the flat buffer: Shape in row-major order
// (linear weights are (out, in), as torch.nn.Linear), at [Offset, Offset+Size).
type Tensor struct {
	Name   string `json:"name"`
	Shape  []int  `json:"shape"`
	Offset int    `json:"offset"`
	Size   int    `json:"size"`
	// Kind says how the tensor is initialised and used: "embedding" (also the LM head of a
	// tied model), "linear", "residual" (a linear layer writing into the residual stream),
	// "head" (an untied LM head), "norm" (scale, init 1) or "bias" (init 0).
	Kind string `json:"kind"`
}

// Layout places every parameter of a model in one flat buffer, layer by layer. Names are
// those of the paper's code, llm-baselines (src/models/llama.py and base.py, which are
// nanoGPT's), so weights map one to one onto its state dict; a tied LM head is the one
// tensor transformer.wte.weight, as torch's named_parameters gives it.
type Layout struct {
	Tensors []Tensor `json:"tensors"`
	Size    int      `json:"size"` // total number of parameters
	index   map[string]int
}

// Layout returns the parameter layout of the configuration.
func (c Config) Layout() Layout {
	var l Layout
	add := func(name, kind string, shape ...int) {
		n := 1
		for _, s := range shape {
			n *= s
		}
		l.Tensors = append(l.Tensors, Tensor{Name: name, Shape: slices.Clone(shape), Offset: l.Size, Size: n, Kind: kind})
		l.Size += n
	}
	d, h, V := c.Dim, c.Hidden, c.Vocab
	switch c.Arch {
	case LLaMA:
		add("transformer.wte.weight", "embedding", V, d)
		for i := range c.Layers {
			p := fmt.Sprintf("transformer.h.%d.", i)
			add(p+"ln_1.weight", "norm", d)
			add(p+"attn.c_attn.weight", "linear", 3*d, d) // q, k, v
			add(p+"attn.c_proj.weight", "residual", d, d)
			add(p+"ln_2.weight", "norm", d)
			add(p+"mlp.w1.weight", "linear", h, d) // gate
			add(p+"mlp.w2.weight", "linear", h, d) // up
			add(p+"mlp.c_proj.weight", "residual", d, h)
		}
		add("transformer.ln_f.weight", "norm", d)
	case GPT2:
		add("transformer.wte.weight", "embedding", V, d)
		add("transformer.wpe.weight", "embedding", c.Context, d)
		bias := func(name string, n int) {
			if c.Biases {
				add(name, "bias", n)
			}
		}
		for i := range c.Layers {
			p := fmt.Sprintf("transformer.h.%d.", i)
			add(p+"ln_1.weight", "norm", d)
			bias(p+"ln_1.bias", d)
			add(p+"attn.c_attn.weight", "linear", 3*d, d)
			bias(p+"attn.c_attn.bias", 3*d)
			add(p+"attn.c_proj.weight", "residual", d, d)
			bias(p+"attn.c_proj.bias", d)
			add(p+"ln_2.weight", "norm", d)
			bias(p+"ln_2.bias", d)
			add(p+"mlp.c_fc.weight", "linear", h, d)
			bias(p+"mlp.c_fc.bias", h)
			add(p+"mlp.c_proj.weight", "residual", d, h)
			bias(p+"mlp.c_proj.bias", d)
		}
		add("transformer.ln_f.weight", "norm", d)
		bias("transformer.ln_f.bias", d)
	}
	if c.Untied {
		add("lm_head.weight", "head", V, d)
	}
	l.index = make(map[string]int, len(l.Tensors))
	for i, t := range l.Tensors {
		l.index[t.Name] = i
	}
	return l
}

// Decayed are the runs [lo, hi) of the flat buffer that weight decay applies to, as the
// paper's code (llm-baselines) groups them: the weights of linear layers (kinds linear and
// residual), adjacent ones merged; not norms, biases, embeddings or the LM head, tied or
// untied (llm-baselines takes an untied lm_head.weight out of its decayed set).
func (l Layout) Decayed() [][2]int {
	var runs [][2]int
	for _, t := range l.Tensors {
		if t.Kind != "linear" && t.Kind != "residual" {
			continue
		}
		if n := len(runs); n > 0 && runs[n-1][1] == t.Offset {
			runs[n-1][1] = t.Offset + t.Size
			continue
		}
		runs = append(runs, [2]int{t.Offset, t.Offset + t.Size})
	}
	return runs
}

// Tensor returns the tensor called name.
func (l Layout) Tensor(name string) (Tensor, bool) {
	i, ok := l.index[name]
	if !ok {
		return Tensor{}, false
	}
	return l.Tensors[i], true
}

// View returns the slice of buf holding the tensor called name; it panics if there is none,
// since names come from the layout itself.
func View[T any](l Layout, buf []T, name string) []T {
	t, ok := l.Tensor(name)
	if !ok {
		panic("model: no tensor " + name)
	}
	return buf[t.Offset : t.Offset+t.Size : t.Offset+t.Size]
}

// NumParams returns the number of parameters.
func (c Config) NumParams() int { return c.Layout().Size }

// MatmulParams returns N_matmul of the FLOP formula: every parameter except the input
// embedding tables (a lookup, not a matmul), plus a tied LM head (a matmul with the token
// embedding).
func (c Config) MatmulParams() int {
	n := c.NumParams() - c.Vocab*c.Dim
	if c.Arch == GPT2 {
		n -= c.Context * c.Dim
	}
	if c.Tied() {
		n += c.Vocab * c.Dim
	}
	return n
}

// Head returns the name of the LM head's weight: lm_head.weight, or the token embedding
// of a tied model.
func (c Config) Head() string {
	if c.Untied {
		return "lm_head.weight"
	}
	return "transformer.wte.weight"
}

// FLOPsPerStep returns the floating-point operations of one training step (forward and
// backward) over batch sequences of seqLen tokens: 6·N_matmul·B·T + 12·L·T²·d·B, the formula
// of the PyTorch peer (dense causal attention counted in full).
func (c Config) FLOPsPerStep(batch, seqLen int) float64 {
	b, t := float64(batch), float64(seqLen)
	return 6*float64(c.MatmulParams())*b*t + 12*float64(c.Layers)*t*t*float64(c.Dim)*b
}
