package report

// Index: every trial of an output at a glance, in one object beside its tables.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/trial"
)

// Index is what a manifest's trials are when its tables are built: each trial's
// configuration, outcome and final losses. Build writes it (keys.TrialIndex), so that a
// view of a sweep of any size reads one object rather than a result per trial.
type Index struct {
	Sweep  string          `json:"sweep,omitempty"` // the sweep whose run built it, when known
	Name   string          `json:"name"`            // the manifest's name
	Trials []trial.Summary `json:"trials"`
}

// MakeIndex is the index of res.
func MakeIndex(name, sweepID string, res *Results) *Index {
	ix := &Index{Sweep: sweepID, Name: name, Trials: make([]trial.Summary, 0, len(res.Trials))}
	for _, t := range res.Trials {
		ix.Trials = append(ix.Trials, trial.Summarize(t.ID, t.Config, res.Outcomes[t.ID]))
	}
	return ix
}

// index writes the index of res under the writer's output.
func (w *writer) index(name, sweepID string, res *Results) {
	w.put(keys.TrialIndex(w.out), func(b *bytes.Buffer) error {
		return json.NewEncoder(b).Encode(MakeIndex(name, sweepID, res))
	})
}

// ReadIndex reads an output's index: nil if its tables were never built.
func ReadIndex(ctx context.Context, store blob.Store, output string) (*Index, error) {
	b, err := store.Get(ctx, keys.TrialIndex(output))
	if errors.Is(err, blob.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ix, err := ParseIndex(b)
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", keys.TrialIndex(output), err)
	}
	return ix, nil
}

// ParseIndex decodes an index as Build writes it.
func ParseIndex(b []byte) (*Index, error) {
	var ix Index
	if err := json.Unmarshal(b, &ix); err != nil {
		return nil, err
	}
	return &ix, nil
}
