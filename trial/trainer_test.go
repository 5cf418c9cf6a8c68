package trial

import (
	"context"
	"testing"

	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/training"
)

// TestTrainerWriters trains a tiny run with training.Run, recorded as trial "t", and writes
// its config, curves and result again through the writers by trial ID: the bytes must be
// those the run's Recorder wrote, so that another trainer's trials read as ours do.
func TestTrainerWriters(t *testing.T) {
	ctx := context.Background()
	cfg := tinyConfig(training.SFAdamW)
	ours, theirs := newStore(t), newStore(t)
	res := trainRecorded(t, cfg, ours, keys.Trial("t"))
	if len(res.Curves) == 0 {
		t.Fatal("the run has no evaluations")
	}
	if err := WriteConfig(ctx, theirs, "t", cfg.Canonical()); err != nil {
		t.Fatal(err)
	}
	if err := WriteCurves(ctx, theirs, "t", res.Curves); err != nil {
		t.Fatal(err)
	}
	if err := WriteResult(ctx, theirs, "t", res); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{keys.RunConfig(keys.Trial("t")), keys.RunCurves(keys.Trial("t")), keys.RunResult(keys.Trial("t"))} {
		if got, want := get(t, theirs, key), get(t, ours, key); got != want {
			t.Errorf("%s: written here\n%s\nby training.Run\n%s", key, got, want)
		}
	}
	if got, err := ReadResult(ctx, theirs, "t"); err != nil || got == nil || got.ParamsHash != res.ParamsHash {
		t.Errorf("ReadResult = %+v, %v", got, err)
	}
}
