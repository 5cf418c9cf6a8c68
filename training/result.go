package training

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"time"

	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/model"
)

// Progress is a snapshot of a running run.
type Progress struct {
	Step, Steps  int
	TrainLoss    float64
	TokensPerSec float64 // steady state: over the steps after the attempt's first (throughput)
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
	// Metrics are a program trainer's named metrics at this step (docs/trainer.md).
	Metrics map[string]float64 `json:"metrics,omitempty"`
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
	// Metrics are a program trainer's named metrics on its last metrics line.
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

// ModelCard describes a run's final model file (model.safetensors): what a reader needs
// to build the module it loads into (bench/torch/torch_llama.py's names).
type ModelCard struct {
	Model      model.Config       `json:"model"`
	Iterate    string             `json:"iterate"` // the weights: x for SF-AdamW, w for AdamW
	Step       int                `json:"step"`
	ConfigHash string             `json:"config_hash"`
	Engine     backend.Provenance `json:"engine"`
	// PyTorch is the PyTorch module that takes the file's tensors by their names, and the
	// config its constructor takes; nil where sfsweep has no such module (GPT-2).
	PyTorch *PyTorchModel `json:"pytorch,omitempty"`
}

// PyTorchModel names a PyTorch module of this repository and its constructor's config.
type PyTorchModel struct {
	Class  string         `json:"class"` // file:class, from the repository's root
	Config map[string]any `json:"config"`
}

// TorchLlama is the LLaMA of bench/torch/torch_llama.py, llm-baselines' module for module.
const TorchLlama = "bench/torch/torch_llama.py:Llama"

// PyTorchOf is the PyTorch module of model c, with its constructor's config in that
// module's names (d, ctx, eps), or nil if there is none.
func PyTorchOf(c model.Config) *PyTorchModel {
	if c.Arch != model.LLaMA {
		return nil
	}
	return &PyTorchModel{Class: TorchLlama, Config: map[string]any{
		"vocab": c.Vocab, "d": c.Dim, "layers": c.Layers, "heads": c.Heads, "ctx": c.Context, "hidden": c.Hidden,
		"eps": c.NormEps, "rope_theta": c.RopeTheta, "untied": c.Untied,
	}}
}

// ProbeStep is one step of a probe's own training.
type ProbeStep struct {
	Step      int     `json:"step"`
	LR        float64 `json:"lr"`
	TrainLoss float64 `json:"train_loss"`
}

// Loss is a validation loss that a diverged probe leaves not finite: JSON has no NaN, so
// its JSON form is null then, read back as NaN.
type Loss float64

// MarshalJSON writes the loss, or null if it is not finite.
func (l Loss) MarshalJSON() ([]byte, error) {
	if !finite(float64(l)) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(l))
}

// UnmarshalJSON reads a loss; null is NaN.
func (l *Loss) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*l = Loss(math.NaN())
		return nil
	}
	return json.Unmarshal(b, (*float64)(l))
}

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
