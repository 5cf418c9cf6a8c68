package trial

// A trial's outcome, read from its record: one trial at a time, or a sweep's trials against
// one listing of the store.

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/training"
)

// Outcome is what is known of a trial: its result, or why it failed, or nothing yet.
type Outcome struct {
	Result *training.Result // nil: not finished
	Failed string           // non-empty: the trial failed after its retries, with this reason
	// Stopped is the step at which a search's early stopping ended the trial (0: it did
	// not): a result of the sweep, not a failure. The search's state says so, not the
	// trial's record: whoever reads that state sets it.
	Stopped int
	// Attempts its training took, where it was retried (0: one, or not recorded).
	Attempts int
}

// ReadOutcome reads trial id's outcome: its result, or why it failed after its retries;
// the zero Outcome if it has neither yet.
func ReadOutcome(ctx context.Context, store blob.Store, id string) (Outcome, error) {
	r, err := ReadResult(ctx, store, id)
	if err != nil || r != nil {
		return Outcome{Result: r, Attempts: ReadAttempts(ctx, store, id)}, err
	}
	reason, err := ReadFailure(ctx, store, id)
	if err != nil || reason == "" {
		return Outcome{}, err
	}
	return Outcome{Failed: reason, Attempts: ReadAttempts(ctx, store, id)}, nil
}

// Listing is the keys under keys.Trials in lexical order (as blob.Store.List gives them):
// one listing tells which objects of every trial exist, so that only those are read.
type Listing []string

// List lists the trials' objects in store.
func List(ctx context.Context, store blob.Store) (Listing, error) {
	return store.List(ctx, keys.Trials)
}

// Has tells whether the listing has key.
func (l Listing) Has(key string) bool {
	_, found := slices.BinarySearch(l, key)
	return found
}

// HasConfig tells whether the listing has trial id's config.json.
func (l Listing) HasConfig(id string) bool { return l.Has(keys.RunConfig(keys.Trial(id))) }

// HasResult tells whether the listing has trial id's result.json.
func (l Listing) HasResult(id string) bool { return l.Has(keys.RunResult(keys.Trial(id))) }

// under is the listed keys that start with prefix.
func (l Listing) under(prefix string) []string {
	lo, _ := slices.BinarySearch(l, prefix)
	hi := lo
	for hi < len(l) && strings.HasPrefix(l[hi], prefix) {
		hi++
	}
	return l[lo:hi]
}

// Checkpoints are the steps of trial id's checkpoints listed, in lexical (so numerical)
// order.
func (l Listing) Checkpoints(id string) []int {
	var steps []int
	for _, k := range l.under(keys.Checkpoints(keys.Trial(id)) + "/") {
		if _, step, ok := keys.CheckpointOf(k); ok {
			steps = append(steps, step)
		}
	}
	return steps
}

// Outcome reads trial id's outcome, reading only the objects the listing has: its result
// (through result, a cache of results, if not nil), else why it failed, and its attempts.
// A failed.json listed but not read back reads "failed".
func (l Listing) Outcome(ctx context.Context, store blob.Store, id string, result func(ctx context.Context, id string) (*training.Result, error)) (Outcome, error) {
	if result == nil {
		result = func(ctx context.Context, id string) (*training.Result, error) { return ReadResult(ctx, store, id) }
	}
	var o Outcome
	if l.HasResult(id) {
		r, err := result(ctx, id)
		if err != nil {
			return o, err
		}
		o.Result = r
	}
	if o.Result == nil && l.Has(keys.TrialFailed(id)) {
		reason, _ := ReadFailure(ctx, store, id)
		o.Failed = cmp.Or(reason, "failed")
	}
	if l.Has(keys.TrialAttempts(id)) {
		o.Attempts = ReadAttempts(ctx, store, id)
	}
	return o, nil
}
