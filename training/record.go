package training

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/training/checkpoint"
)

// The objects a run writes under its prefix, besides its checkpoints (state.go): its
// config, its curves, its result and its final model with the model's card.

// putConfig writes config.json: the canonical config, which the result's ConfigHash
// identifies.
func putConfig(ctx context.Context, store blob.Store, prefix string, cfg Config) error {
	b, _ := json.MarshalIndent(cfg.Canonical(), "", "  ")
	if err := store.Put(ctx, keys.RunConfig(prefix), b); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	return nil
}

// putCurves writes curves.jsonl: one evaluation a line.
func putCurves(ctx context.Context, store blob.Store, prefix string, curves []CurvePoint) error {
	var b []byte
	for _, c := range curves {
		line, _ := json.Marshal(c)
		b = append(append(b, line...), '\n')
	}
	if err := store.Put(ctx, keys.RunCurves(prefix), b); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	return nil
}

// putResult writes result.json.
func putResult(ctx context.Context, store blob.Store, prefix string, res *Result) error {
	b, _ := json.MarshalIndent(res, "", "  ")
	if err := store.Put(ctx, keys.RunResult(prefix), b); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	return nil
}

// putModel writes model.safetensors, the weights ck.Params under the layout's PyTorch
// names, and its card.
func putModel(ctx context.Context, store blob.Store, prefix string, ck *checkpoint.Checkpoint, card ModelCard) error {
	b, err := ck.Encode()
	if err != nil {
		return fmt.Errorf("train: model: %w", err)
	}
	if err := store.Put(ctx, keys.RunModel(prefix), b); err != nil {
		return fmt.Errorf("train: model: %w", err)
	}
	c, _ := json.MarshalIndent(card, "", "  ")
	if err := store.Put(ctx, keys.RunModelCard(prefix), c); err != nil {
		return fmt.Errorf("train: model: %w", err)
	}
	return nil
}
