package report

// Who writes an output: two sweeps never overwrite each other's tables by accident.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/sweeps"
)

// owner records whose tables an output holds: the manifest that wrote them last and its
// trials, sorted.
type owner struct {
	Manifest string   `json:"manifest"`
	Trials   []string `json:"trials"`
}

// OutputTakenError is the error of a manifest whose output holds the tables of a sweep it
// does not extend: a manifest of the same name, or the same output.prefix, with trials
// this one lacks.
type OutputTakenError struct {
	Output   string
	Manifest string // the owner's name
	Lacks    int    // trials of the owner this manifest lacks
}

func (e *OutputTakenError) Error() string {
	return fmt.Sprintf("output = %s: holds the tables of another sweep (manifest %q, %d of whose trials this one lacks); "+
		"set output.prefix to write elsewhere, or extend that manifest instead of replacing it", e.Output, e.Manifest, e.Lacks)
}

// CheckOutput tells whether manifest m, of these trials, may write its tables to its
// output: yes if no sweep wrote there, or if m has every trial of the one that did (the
// same manifest, or that manifest extended); else an *OutputTakenError.
func CheckOutput(ctx context.Context, store blob.Store, m *sweeps.Manifest, trials []sweeps.Trial) error {
	_, _, err := checkOwner(ctx, store, m, trials)
	return err
}

// ReleaseOutput forgets whose tables m's output holds, so that m may write its own there:
// the other sweep's results stay in the store, and its tables at that output are m's from
// then on.
func ReleaseOutput(ctx context.Context, store blob.Store, m *sweeps.Manifest) error {
	return store.Delete(ctx, keys.Owner(Output(m)))
}

// claim records m as the owner of its output, after CheckOutput's check.
func claim(ctx context.Context, store blob.Store, m *sweeps.Manifest, trials []sweeps.Trial) error {
	mine, same, err := checkOwner(ctx, store, m, trials)
	if err != nil || same {
		return err
	}
	b, err := json.Marshal(mine)
	if err != nil {
		return err
	}
	return store.Put(ctx, keys.Owner(Output(m)), b)
}

// checkOwner returns m's owner record and whether the output's record is already it.
func checkOwner(ctx context.Context, store blob.Store, m *sweeps.Manifest, trials []sweeps.Trial) (owner, bool, error) {
	mine := owner{Manifest: m.Name, Trials: make([]string, len(trials))}
	for i, t := range trials {
		mine.Trials[i] = t.ID
	}
	slices.Sort(mine.Trials)
	b, err := store.Get(ctx, keys.Owner(Output(m)))
	if errors.Is(err, blob.ErrNotFound) {
		return mine, false, nil
	}
	if err != nil {
		return mine, false, err
	}
	var prev owner
	if err := json.Unmarshal(b, &prev); err != nil {
		return mine, false, nil // a damaged record is replaced
	}
	if m.Sampled() && prev.Manifest == m.Name && len(trials) == 0 {
		// a sampled search knows its trials only as it runs: the search of this name, run
		// again, may write there (its build records its trials)
		return mine, false, nil
	}
	lacks := 0
	for _, id := range prev.Trials {
		if _, ok := slices.BinarySearch(mine.Trials, id); !ok {
			lacks++
		}
	}
	if lacks > 0 {
		return mine, false, &OutputTakenError{Output: Output(m), Manifest: prev.Manifest, Lacks: lacks}
	}
	return mine, prev.Manifest == mine.Manifest && slices.Equal(prev.Trials, mine.Trials), nil
}
