package trial

// A trial's run config: config.json, the config its ID is the hash of.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/training"
)

// DamagedError is an object of a trial's record that is there but does not decode.
type DamagedError struct {
	Key string
	Err error
}

func (e *DamagedError) Error() string { return e.Key + ": " + e.Err.Error() }
func (e *DamagedError) Unwrap() error { return e.Err }

// ReadConfig reads trial id's config.json as it was written (no defaults applied). A
// missing one is an error wrapping blob.ErrNotFound; one that does not decode, or that
// names a field this build does not know (it would be ignored, and the trial would train
// as another), a *DamagedError.
func ReadConfig(ctx context.Context, store blob.Store, id string) (training.Config, error) {
	key := keys.RunConfig(keys.Trial(id))
	var cfg training.Config
	b, err := store.Get(ctx, key)
	if err != nil {
		return cfg, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return cfg, &DamagedError{Key: key, Err: err}
	}
	return cfg, nil
}

// WriteConfig writes cfg as trial id's config.json (Recorder.WriteConfig). The planner
// writes a trial's canonical config before it trains; a trainer writes it again at its
// start.
func WriteConfig(ctx context.Context, store blob.Store, id string, cfg training.Config) error {
	return of(store, id).WriteConfig(ctx, cfg)
}

// EnsureConfig writes cfg as trial id's config.json unless the trial has one.
func EnsureConfig(ctx context.Context, store blob.Store, id string, cfg training.Config) error {
	_, err := store.Get(ctx, keys.RunConfig(keys.Trial(id)))
	if errors.Is(err, blob.ErrNotFound) {
		return WriteConfig(ctx, store, id, cfg)
	}
	return err
}
