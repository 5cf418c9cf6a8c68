package trial

// A trial's evaluations as they land (curves.jsonl) and its result (result.json), read
// back; and written, for a trial, through its Recorder.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/training"
)

// ReadResult reads trial id's result: nil if it has none yet, or a damaged one (which is
// recomputed).
func ReadResult(ctx context.Context, store blob.Store, id string) (*training.Result, error) {
	return readJSON[training.Result](ctx, store, keys.RunResult(keys.Trial(id)))
}

// WriteResult writes r as trial id's result.json (Recorder.WriteResult). A trainer
// writes it once, at the end of its run, after its curves.
func WriteResult(ctx context.Context, store blob.Store, id string, r *training.Result) error {
	return of(store, id).WriteResult(ctx, r)
}

// ReadCurves reads trial id's evaluations so far: nil if it has none. A line that does
// not decode (an evaluation whose loss was not finite is written empty) is left out.
func ReadCurves(ctx context.Context, store blob.Store, id string) ([]training.CurvePoint, error) {
	b, err := store.Get(ctx, keys.RunCurves(keys.Trial(id)))
	if errors.Is(err, blob.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []training.CurvePoint
	for _, line := range bytes.Split(b, []byte("\n")) {
		var c training.CurvePoint
		if len(bytes.TrimSpace(line)) > 0 && json.Unmarshal(line, &c) == nil {
			out = append(out, c)
		}
	}
	return out, nil
}

// WriteCurves writes points as trial id's curves.jsonl (Recorder.WriteCurves). A trainer
// writes all its evaluations so far at each evaluation.
func WriteCurves(ctx context.Context, store blob.Store, id string, points []training.CurvePoint) error {
	return of(store, id).WriteCurves(ctx, points)
}

// readJSON reads the object under key: nil if it is missing or does not decode.
func readJSON[T any](ctx context.Context, store blob.Store, key string) (*T, error) {
	b, err := store.Get(ctx, key)
	if errors.Is(err, blob.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var v T
	if json.Unmarshal(b, &v) != nil {
		return nil, nil
	}
	return &v, nil
}

// putIndented writes v under key, indented: the form of results and probe results.
func putIndented(ctx context.Context, store blob.Store, key string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return store.Put(ctx, key, b)
}
