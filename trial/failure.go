package trial

// Why a trial failed after its retries (failed.json), and the attempts of its training
// (attempts.json).

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
)

// Failure is a trial's failed.json: why it failed after its retries.
type Failure struct {
	Reason  string `json:"reason"`
	TrialID string `json:"trial_id"`
}

// WriteFailure records that trial id failed after its retries, and why.
func WriteFailure(ctx context.Context, store blob.Store, id, reason string) error {
	b, err := json.Marshal(Failure{Reason: reason, TrialID: id})
	if err != nil {
		return err
	}
	return store.Put(ctx, keys.TrialFailed(id), b)
}

// ClearFailure removes trial id's failed.json, if it has one: a trial that trains again
// has an outcome of its newest training, not that of one that failed before.
func ClearFailure(ctx context.Context, store blob.Store, id string) error {
	return store.Delete(ctx, keys.TrialFailed(id))
}

// ReadFailure reads why trial id failed after its retries: "" if it did not (it has no
// failed.json), "failed" if its failed.json gives no reason.
func ReadFailure(ctx context.Context, store blob.Store, id string) (string, error) {
	b, err := store.Get(ctx, keys.TrialFailed(id))
	switch {
	case errors.Is(err, blob.ErrNotFound):
		return "", nil
	case err != nil:
		return "", err
	}
	return failureReason(b), nil
}

// failureReason is the reason a failed.json gives ("failed" if it gives none).
func failureReason(b []byte) string {
	var f Failure
	_ = json.Unmarshal(b, &f)
	return cmp.Or(f.Reason, "failed")
}

// Attempts is a trial's attempts.json: how many attempts its training took, written
// once it is retried, so that the count outlives the trial's workflow.
type Attempts struct {
	Attempts int `json:"attempts"`
}

// WriteAttempts records that trial id's training is on its attempt-th attempt.
func WriteAttempts(ctx context.Context, store blob.Store, id string, attempt int) error {
	b, err := json.Marshal(Attempts{Attempts: attempt})
	if err != nil {
		return err
	}
	return store.Put(ctx, keys.TrialAttempts(id), b)
}

// ReadAttempts reads how many attempts trial id's training took: 0 if that is unknown
// (it was never retried, or its record cannot be read).
func ReadAttempts(ctx context.Context, store blob.Store, id string) int {
	var a Attempts
	if b, err := store.Get(ctx, keys.TrialAttempts(id)); err == nil {
		_ = json.Unmarshal(b, &a)
	}
	return a.Attempts
}
