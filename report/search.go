package report

// The trials of a search: a grid's, or those its sampler suggested so far, and those its
// early stopping ended at a rung.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/search"
	"github.com/sfsweep/sfsweep/sweeps"
)

// ReadSearch reads a search's state from the store: nil if it has made no decision yet.
func ReadSearch(ctx context.Context, store blob.Store, sweepID string) (*search.State, error) {
	b, err := store.Get(ctx, keys.SearchState(sweepID))
	if errors.Is(err, blob.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s search.Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("search state of %s: %w", sweepID, err)
	}
	return s.State, nil
}

// searchTrials are the trials of manifest m, and the step at which its search stopped
// each it stopped (by trial ID). A grid's trials are its expansion; a sampled search's,
// the configurations its state holds (none before its first decision).
func searchTrials(ctx context.Context, store blob.Store, m *sweeps.Manifest, sweepID string) ([]sweeps.Trial, map[string]int, error) {
	var trials []sweeps.Trial
	if !m.Sampled() {
		var err error
		if trials, err = m.Expand(); err != nil {
			return nil, nil, invalidError{err}
		}
	}
	if !m.Searched() || sweepID == "" {
		return trials, nil, nil
	}
	st, err := ReadSearch(ctx, store, sweepID)
	if err != nil || st == nil {
		return trials, nil, err
	}
	stopped := map[string]int{}
	seen := map[string]bool{}
	for _, t := range trials {
		seen[t.ID] = true
	}
	for _, c := range st.Candidates {
		ts, err := m.PointTrials(c.Grid, c.Point)
		if err != nil {
			return nil, nil, invalidError{fmt.Errorf("search configuration %d: %w", c.Index, err)}
		}
		for _, t := range ts {
			if c.Status == search.StatusStopped {
				stopped[t.ID] = c.StoppedAt
			}
			if !seen[t.ID] {
				seen[t.ID] = true
				trials = append(trials, t)
			}
		}
	}
	return trials, stopped, nil
}
