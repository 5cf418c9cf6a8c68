package trial

// The record a trainer writes of one run: config.json at its start, curves.jsonl at each
// evaluation, and at its end model.safetensors with model.json (a completed run) and
// result.json.

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/training/checkpoint"
)

// Recorder writes the record of the run under Prefix in Store: a trial's (keys.Trial of
// its ID) or that of a run outside a sweep. It is the training.Record a trainer is given,
// and every writer of a run's config, curves, model and result goes through it.
type Recorder struct {
	Store  blob.Store
	Prefix string
}

var _ training.Record = Recorder{}

// of is the recorder of trial id.
func of(store blob.Store, id string) Recorder { return Recorder{Store: store, Prefix: keys.Trial(id)} }

// WriteConfig writes cfg as the run's config.json, indented, as every config is written.
func (r Recorder) WriteConfig(ctx context.Context, cfg training.Config) error {
	return putIndented(ctx, r.Store, keys.RunConfig(r.Prefix), cfg)
}

// WriteCurves writes points as the run's curves.jsonl: one JSON object a line, an
// evaluation that does not encode (a loss that is not finite) as an empty line.
func (r Recorder) WriteCurves(ctx context.Context, points []training.CurvePoint) error {
	var b []byte
	for _, c := range points {
		line, _ := json.Marshal(c)
		b = append(append(b, line...), '\n')
	}
	return r.Store.Put(ctx, keys.RunCurves(r.Prefix), b)
}

// WriteModel writes the run's final model as model.safetensors (checkpoint's encoding:
// the weights under the layout's PyTorch names) and its card as model.json, indented.
func (r Recorder) WriteModel(ctx context.Context, model *checkpoint.Checkpoint, card training.ModelCard) error {
	b, err := model.Encode()
	if err != nil {
		return err
	}
	if err := r.Store.Put(ctx, keys.RunModel(r.Prefix), b); err != nil {
		return err
	}
	return putIndented(ctx, r.Store, keys.RunModelCard(r.Prefix), card)
}

// WriteResult writes res as the run's result.json, indented. A result that does not
// encode (a test perplexity past the range of float64) is written empty, as it always
// was: it reads as none.
func (r Recorder) WriteResult(ctx context.Context, res *training.Result) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil { // a loss JSON cannot hold: never an empty result.json
		return fmt.Errorf("result of %s: %w", r.Prefix, err)
	}
	return r.Store.Put(ctx, keys.RunResult(r.Prefix), b)
}
