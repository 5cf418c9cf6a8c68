package trial

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/training/data"
	"github.com/sfsweep/sfsweep/training/model"
	_ "github.com/sfsweep/sfsweep/training/native"
)

// runGoldens are the sha256s of the objects a tiny training.Run leaves under its prefix:
// the record must go on writing these bytes, so that a store an older build wrote reads
// the same. They were made when the model became llm-baselines' (a tied head and its
// tensor names), which changed every run's bytes; the encoding itself is that of the
// trainer when it encoded the objects itself (training/record.go, before the trial record
// took them over), which the goldens before pinned. The wall time and the code version in
// result.json and model.json vary from run to run; they are zeroed (sameBytes) first. The
// kernel families (AVX-512, AVX2, Go) all write these bytes, the diverging runs included.
var runGoldens = map[string]map[string]string{
	"sfadamw": {
		keys.ConfigName:    "b96e3dd4d63b65ede7e9fd9b1def2f31f7feb9bc139e12d36370d982d73708d0",
		keys.CurvesName:    "5637378d45375a2bff8668265e373c32c8ec508d6b786c60c90268ffa3ae7a97",
		keys.ResultName:    "2b64a1c7968945f02e2d93eb336ef3fb2ada49cb70d7d0483c37fbe7b84bb399",
		keys.ModelName:     "e5caf4eca8e3c14287a80119e0263dc785d4da82739d725f1cb0eaa1f54484b6",
		keys.ModelCardName: "5d1778208bb24526bb6bd3e1ba2b3a6196c9a8374095593bfbd2335c6de69698",
	},
	// A test loss past 709 nats has an infinite perplexity, which JSON cannot hold: the
	// result does not encode, the run fails with that cause, and no result.json is
	// written (an empty one would read as none, and the trial would train again).
	"adamw not finite": {
		keys.ConfigName:    "9992567eb14b3b80fd6bd5c3072d7c3b431ac326137ead7efe9772c582b9a1df",
		keys.CurvesName:    "476cc4fc059b7bd70ecf69e51e173c90e59fd07f69efd6913eaf06eb9524342a",
		keys.ModelName:     "13a332155463390d84c118de4c2c35711bfecb7399b98999c3365eb939748d71",
		keys.ModelCardName: "842c45aa222af1153b16bc23c01b6f0ae8b5559157ecd2c07febb54b1b66defb",
	},
	"adamw diverged": {
		keys.ConfigName: "a1e566678080f3b579264c8e104f51421436bd81f37eecb0e1c47fe0e1bf2c9f",
		keys.CurvesName: "c4ae52338be0b21c1100a38a05ce0c6d8af5a203efd06bb42c6fedf7caf39cdd",
		keys.ResultName: "28a6cdcf9e3c1db406a2733b56f8368e1e78e06bb08cacc28313e1ed99635dc1",
	},
}

var (
	secondsField = regexp.MustCompile(`"seconds": [^,\n]*`)
	codeField    = regexp.MustCompile(`"code": "[^"]*"`)
)

// sameBytes is b with what varies between two runs of the same config zeroed.
func sameBytes(b []byte) []byte {
	b = secondsField.ReplaceAll(b, []byte(`"seconds": 0`))
	return codeField.ReplaceAll(b, []byte(`"code": ""`))
}

// tinyConfig is a run that trains in a moment: a one-layer LLaMA on bytes.
func tinyConfig(optimizer string) training.Config {
	cfg := training.Config{
		Setup:       training.Setup{ModelConfig: &model.Config{Arch: model.LLaMA, Vocab: 257, Dim: 16, Layers: 1, Heads: 2, Context: 16, Hidden: 32, Batch: 2}},
		Optimizer:   training.OptimizerConfig{Name: optimizer, LR: 3e-3, Beta1: 0.9, Beta2: 0.99},
		BatchTokens: 32, Loop: training.Loop{Steps: 6, EvalEvery: 2, EvalSeqs: 4, TestSeqs: 4, CheckpointEvery: 2}, Seed: 1,
	}
	return cfg.WithDefaults()
}

// trainRecorded trains cfg on a small default corpus with training.Run, its checkpoints
// and its record (a Recorder) under prefix in store.
func trainRecorded(t *testing.T, cfg training.Config, store blob.Store, prefix string) *training.Result {
	t.Helper()
	ds, err := data.DefaultCorpus(context.Background(), "byte", t.TempDir(), 100_000)
	if err != nil {
		t.Fatal(err)
	}
	b, err := training.NewBatches(cfg, ds)
	if err != nil {
		t.Fatal(err)
	}
	res, err := training.Run(context.Background(), cfg, training.Options{Store: store, Prefix: prefix, Record: Recorder{Store: store, Prefix: prefix}, Data: b})
	if err != nil && !strings.Contains(err.Error(), "unsupported value: +Inf") {
		t.Fatal(err)
	}
	return res
}

// adamwAt is tinyConfig's AdamW run at learning rate lr without warmup: at 30 it
// trains to its end with losses that are not finite, at 10⁴ it diverges (at 300 its
// logits overflow and it collapses to the uniform loss ln 257 on every kernel family).
func adamwAt(lr float64) training.Config {
	cfg := tinyConfig(training.AdamW)
	zero := 0.0
	cfg.Optimizer.LR, cfg.Optimizer.WarmupFrac = lr, &zero
	return cfg
}

// TestRunGoldens trains tiny runs with training.Run, recorded by a Recorder, and compares
// what they leave in the store with runGoldens.
func TestRunGoldens(t *testing.T) {
	ctx := context.Background()
	for name, cfg := range map[string]training.Config{
		"sfadamw":          tinyConfig(training.SFAdamW),
		"adamw not finite": adamwAt(30),
		"adamw diverged":   adamwAt(1e4),
	} {
		t.Run(name, func(t *testing.T) {
			store, prefix := newStore(t), "runs/golden"
			trainRecorded(t, cfg, store, prefix)
			written, err := store.List(ctx, prefix+"/")
			if err != nil {
				t.Fatal(err)
			}
			want := runGoldens[name]
			n := 0
			for _, key := range written {
				name := key[len(prefix)+1:]
				if strings.HasPrefix(key, keys.Checkpoints(prefix)+"/") {
					continue
				}
				n++
				b, err := store.Get(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				sum := sha256.Sum256(sameBytes(b))
				if got := hex.EncodeToString(sum[:]); got != want[name] {
					t.Errorf("%s: sha256 %s, want %s", name, got, want[name])
				}
			}
			if n != len(want) {
				t.Errorf("%d objects besides the checkpoints %v, want %d", n, written, len(want))
			}
		})
	}
}
