package trial

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

// runGoldens are the sha256s of the objects a tiny training.Run leaves under its prefix,
// as the trainer wrote them when it encoded them itself (training/record.go, before the
// trial record took them over): the record must go on writing these bytes, so that a
// store an older build wrote reads the same. The wall time and the code version in
// result.json and model.json vary from run to run; they are zeroed (sameBytes) first.
var runGoldens = map[string]map[string]string{
	"sfadamw": {
		keys.ConfigName:    "7085c92a447b5d101a831d9bf86abad7e59180176066ea9ba20dfdd91f5f0e3a",
		keys.CurvesName:    "8adc967b7a417d347c79cb8b08b905de7a57d590ea09647797fa4ed5a041ba4c",
		keys.ResultName:    "989bb2cc291b8e1dc2fcd3dbadf21bafa32f0ab91366d009373883b1c7534dfe",
		keys.ModelName:     "9dc22b5f9e230b7e2cc0ff024dfc61dad0bc8f2eda8731b2fd4122b9edfeddf9",
		keys.ModelCardName: "ca063974a16b8a1941b446658502c847483464f01cdaf241430900d8879d5b71",
	},
	// A test loss past 709 nats has an infinite perplexity, which JSON cannot hold: the
	// result does not encode, the run fails with that cause, and no result.json is
	// written (an empty one would read as none, and the trial would train again).
	"adamw not finite": {
		keys.ConfigName:    "b0b669ce648d718341394d2d977e5971cafe4ca7c15f660e9e5e5533101b780e",
		keys.CurvesName:    "fa3e20fe4441a288388ca946d2c41f1d13bfb0a0c0c20ff4e63db435ce0a458a",
		keys.ModelName:     "054e434c39dcd110569589e67cef3467bc1bb5110cee6344eb45a692dcea574a",
		keys.ModelCardName: "f31ecde1a9768f809a669daa15d7b34d3f24af84c6de284d8cfe288e427c394b",
	},
	"adamw diverged": {
		keys.ConfigName: "3df9c31ac308317ebaff570ecc9c679c93d25b66f9b2f6147db3b1bfc81b2a1b",
		keys.CurvesName: "82624c109adbc4d58bc2eef44fb03363a64488eb261d5526b37a6be837aec306",
		keys.ResultName: "3a333b2746d094bfa3b87c790f7b8b7161c90a7d95eb0874df7cee9f214ec93f",
	},
}

var (
	decayField   = regexp.MustCompile(`,\s*"decay_params": ?"all"`)
	secondsField = regexp.MustCompile(`"seconds": [^,\n]*`)
	codeField    = regexp.MustCompile(`"code": "[^"]*"`)
)

// hashWithoutDecay is the config hash cfg had before decay_params: that of its canonical
// JSON without the field.
func hashWithoutDecay(t *testing.T, cfg training.Config) string {
	b, err := json.Marshal(cfg.Canonical())
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bytes.Replace(b, []byte(`,"decay_params":"all"`), nil, 1))
	return hex.EncodeToString(sum[:])
}

// sameBytes is b with what varies between two runs of the same config zeroed, and the
// field decay_params: all taken out (the caller puts the hash of the config without it
// in place of config_hash), so that a run of decay_params all reads as one of before that
// setting.
func sameBytes(b []byte) []byte {
	b = decayField.ReplaceAll(b, nil)
	b = secondsField.ReplaceAll(b, []byte(`"seconds": 0`))
	return codeField.ReplaceAll(b, []byte(`"code": ""`))
}

// tinyConfig is a run that trains in a moment: a one-layer LLaMA on bytes, with weight
// decay on every parameter (decay_params all), as every run had before the paper's
// linear-only default: its curves, result and model are still those bytes, and only
// config.json, which now names the setting, has a new sum.
func tinyConfig(optimizer string) training.Config {
	cfg := training.Config{
		Setup:       training.Setup{ModelConfig: &model.Config{Arch: model.LLaMA, Vocab: 257, Dim: 16, Layers: 1, Heads: 2, Context: 16, Hidden: 32, Batch: 2}},
		Optimizer:   training.OptimizerConfig{Name: optimizer, LR: 3e-3, Beta1: 0.9, Beta2: 0.99, DecayParams: training.DecayAll},
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

// adamwAt is tinyConfig's AdamW run at learning rate lr without warmup: at 10 it
// trains to its end with losses that are not finite, at 10⁴ it diverges (at 100 its
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
		"adamw not finite": adamwAt(10),
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
				b = bytes.ReplaceAll(b, []byte(cfg.Hash()), []byte(hashWithoutDecay(t, cfg)))
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
