package training

import (
	"context"

	"github.com/sfsweep/sfsweep/training/checkpoint"
)

// Record receives what a run leaves besides its checkpoints (state.go): its config, its
// evaluations, its final model and its result. The run says what to record and when; how
// each is stored, and in what format, is the recorder's (package trial's Recorder), so
// that every trainer's runs read alike.
type Record interface {
	// WriteConfig receives the run's canonical config, the one its result's ConfigHash
	// identifies, once, before the run resumes or trains.
	WriteConfig(ctx context.Context, cfg Config) error
	// WriteCurves receives every evaluation of the run so far: after each evaluation,
	// and once more when the run ends.
	WriteCurves(ctx context.Context, curves []CurvePoint) error
	// WriteModel receives a completed run's final model, the weights at the iterate it
	// reports under the layout's names, and the model's card, before its result.
	WriteModel(ctx context.Context, model *checkpoint.Checkpoint, card ModelCard) error
	// WriteResult receives the result of a run that ended, completed or diverged (not
	// one paused at Options.Until), last.
	WriteResult(ctx context.Context, res *Result) error
}
