package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/trial"
)

const tinyTrainConfig = `model_config: {arch: llama, vocab: 257, dim: 16, layers: 1, heads: 2, context: 16, hidden: 32, batch: 2}
data: {default: byte, max_bytes: 100000}
optimizer: {name: sfadamw, lr: 3e-3, beta1: 0.9, beta2: 0.99}
batch_tokens: 32
steps: 6
eval_every: 2
eval_seqs: 4
test_seqs: 4
checkpoint_every: 2
seed: 1
`

// sfsweep train leaves a run's whole record under runs/<hash>: the config as a trial's
// record writes it, the curves, the final model and the result it prints.
func TestTrainCommand(t *testing.T) {
	dir := t.TempDir()
	file, out := filepath.Join(dir, "tiny.yaml"), filepath.Join(dir, "out")
	if err := os.WriteFile(file, []byte(tinyTrainConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t, "train", file, "-out", out, "-cache", filepath.Join(dir, "cache"), "-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res training.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.Status != status.Completed {
		t.Fatalf("printed result %q: %v", stdout, err)
	}
	cfg, err := training.ParseConfig([]byte(tinyTrainConfig))
	if err != nil {
		t.Fatal(err)
	}
	ctx, prefix := context.Background(), "runs/"+cfg.Hash()[:16]
	store, err := blob.NewDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{keys.RunCurves(prefix), keys.RunModel(prefix), keys.RunModelCard(prefix)} {
		if _, err := store.Get(ctx, key); err != nil {
			t.Error(err)
		}
	}
	var stored training.Result
	if b, err := store.Get(ctx, keys.RunResult(prefix)); err != nil || json.Unmarshal(b, &stored) != nil || stored.ParamsHash != res.ParamsHash {
		t.Errorf("result.json: %v, hash %q, want %q", err, stored.ParamsHash, res.ParamsHash)
	}
	ref, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := (trial.Recorder{Store: ref, Prefix: prefix}).WriteConfig(ctx, cfg.Canonical()); err != nil {
		t.Fatal(err)
	}
	got, err := store.Get(ctx, keys.RunConfig(prefix))
	if want, _ := ref.Get(ctx, keys.RunConfig(prefix)); err != nil || string(got) != string(want) {
		t.Errorf("config.json (%v):\n%s\nwant\n%s", err, got, want)
	}
}
