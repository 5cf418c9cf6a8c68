package training

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/training/checkpoint"
	"github.com/sfsweep/sfsweep/training/data"
	"github.com/sfsweep/sfsweep/training/model"
	_ "github.com/sfsweep/sfsweep/training/native"
)

var (
	corpusOnce sync.Once
	corpus     *data.Dataset
	corpusErr  error
)

// testCorpus is the default corpus (the Go source tree, byte tokens) with a small cap,
// prepared once per test binary.
func testCorpus(t *testing.T) *data.Dataset {
	t.Helper()
	corpusOnce.Do(func() {
		dir, err := osMkdirTemp()
		if err != nil {
			corpusErr = err
			return
		}
		corpus, corpusErr = data.DefaultCorpus(context.Background(), "byte", dir, 400_000)
	})
	if corpusErr != nil {
		t.Fatal(corpusErr)
	}
	return corpus
}

// testConfig is a small LLaMA on byte tokens: 2 micro-batches of 4 sequences of 32 tokens
// per step.
func testConfig(opt string) Config {
	c := Config{
		ModelConfig: &model.Config{Arch: model.LLaMA, Vocab: 257, Dim: 32, Layers: 2, Heads: 2, Context: 32, Hidden: 64, Batch: 4},
		Optimizer:   OptimizerConfig{Name: opt, LR: 3e-3, Beta1: 0.9, Beta2: 0.99},
		BatchTokens: 256, Steps: 40, EvalEvery: 10, EvalSeqs: 16, TestSeqs: 16,
		CheckpointEvery: 10, Seed: 3,
	}
	if opt == AdamW {
		c.Optimizer.Beta2 = 0.95
	}
	return c.WithDefaults()
}

func run(t *testing.T, cfg Config, store blob.Store, stopAt int) (*Result, error) {
	t.Helper()
	b, err := NewBatches(cfg, testCorpus(t))
	if err != nil {
		t.Fatal(err)
	}
	opt := Options{Store: store, Prefix: "trials/t", Data: b}
	if stopAt > 0 {
		opt.AfterStep = func(step int) error {
			if step == stopAt {
				return errKilled
			}
			return nil
		}
	}
	return Run(context.Background(), cfg, opt)
}

var errKilled = errors.New("killed")

func newStore(t *testing.T) *blob.Dir {
	d, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestRunLearns(t *testing.T) {
	for _, opt := range []string{SFAdamW, AdamW} {
		t.Run(opt, func(t *testing.T) {
			cfg := testConfig(opt)
			store := newStore(t)
			res, err := run(t, cfg, store, 0)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != status.Completed || res.Steps != 40 || res.Tokens != 40*256 || len(res.Curves) != 4 {
				t.Fatalf("result %+v", res)
			}
			iters := Iterates(opt)
			if res.Primary != iters[0] {
				t.Errorf("primary %q, want %q", res.Primary, iters[0])
			}
			first, last := res.Curves[0], res.Curves[3]
			for _, it := range iters {
				if _, ok := last.Val[it]; !ok {
					t.Errorf("no validation loss at %s", it)
				}
				if tl := res.Test[it]; !(tl > 0) || math.Abs(res.TestPPL[it]-math.Exp(tl)) > 1e-9*res.TestPPL[it] {
					t.Errorf("test loss %v, perplexity %v at %s", tl, res.TestPPL[it], it)
				}
			}
			// byte-level text starts at ln 257 ≈ 5.55 nats at initialisation
			if v := last.Val[iters[0]]; !(v < 4.2) || !(v < first.Val[iters[0]]-0.5) {
				t.Errorf("validation loss at %s: %.3f after 10 steps, %.3f after 40", iters[0], first.Val[iters[0]], v)
			}
			for _, k := range []string{"trials/t/config.json", "trials/t/curves.jsonl", "trials/t/result.json"} {
				if _, err := store.Get(context.Background(), k); err != nil {
					t.Error(err)
				}
			}
			b, _ := store.Get(context.Background(), "trials/t/result.json")
			var stored Result
			if err := json.Unmarshal(b, &stored); err != nil || stored.ParamsHash != res.ParamsHash {
				t.Errorf("result.json: %v, hash %s vs %s", err, stored.ParamsHash, res.ParamsHash)
			}
			infos, err := checkpoint.List(context.Background(), store, "trials/t/checkpoints")
			if err != nil || len(infos) != 3 {
				t.Errorf("%d checkpoints (%v), want steps 10, 20, 30", len(infos), err)
			}
		})
	}
}

// A run killed at any step and resumed ends bitwise identical to the run uninterrupted:
// final weights, every curve point and the test losses; also when the newest checkpoint
// is corrupt and the run resumes from the one before.
func TestResumeBitwise(t *testing.T) {
	for _, opt := range []string{SFAdamW, AdamW} {
		t.Run(opt, func(t *testing.T) {
			cfg := testConfig(opt)
			want, err := run(t, cfg, newStore(t), 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				name    string
				stopAt  int
				corrupt bool
				resumed int
			}{
				{"killed at 17", 17, false, 10},
				{"killed at 30, after its checkpoint", 30, false, 30},
				{"killed at 37, newest checkpoint corrupt", 37, true, 20},
			} {
				t.Run(tc.name, func(t *testing.T) {
					store := newStore(t)
					if _, err := run(t, cfg, store, tc.stopAt); !errors.Is(err, errKilled) {
						t.Fatalf("interrupted run: %v", err)
					}
					if tc.corrupt {
						k := checkpoint.Key("trials/t/checkpoints", 30)
						b, err := store.Get(context.Background(), k)
						if err != nil {
							t.Fatal(err)
						}
						b[len(b)/2] ^= 0x40
						store.Put(context.Background(), k, b)
					}
					got, err := run(t, cfg, store, 0)
					if err != nil {
						t.Fatal(err)
					}
					if got.Resumed != tc.resumed {
						t.Errorf("resumed from step %d, want %d", got.Resumed, tc.resumed)
					}
					if got.ParamsHash != want.ParamsHash {
						t.Error("final parameters differ from the uninterrupted run")
					}
					if !reflect.DeepEqual(got.Curves, want.Curves) || !reflect.DeepEqual(got.Test, want.Test) {
						t.Errorf("curves or test losses differ:\n%+v\n%+v", got.Curves, want.Curves)
					}
				})
			}
		})
	}
}

func TestResumeOtherConfigRefused(t *testing.T) {
	cfg := testConfig(SFAdamW)
	store := newStore(t)
	if _, err := run(t, cfg, store, 12); !errors.Is(err, errKilled) {
		t.Fatal(err)
	}
	cfg.Optimizer.LR = 1e-3
	_, err := run(t, cfg, store, 0)
	if err == nil || !strings.Contains(err.Error(), "belongs to config") {
		t.Fatalf("resume under another config: %v", err)
	}
}

// A learning rate far too high is a recorded result, diverged at a step, not an error.
func TestDiverged(t *testing.T) {
	cfg := testConfig(SFAdamW)
	cfg.Optimizer.LR = 1e6
	cfg.Optimizer.WarmupFrac = ptr(0)
	store := newStore(t)
	res, err := run(t, cfg, store, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != status.Diverged || res.DivergedAt < 1 || res.DivergedAt > 40 || res.Steps != res.DivergedAt {
		t.Fatalf("status %q at step %d after %d steps", res.Status, res.DivergedAt, res.Steps)
	}
	if _, err := store.Get(context.Background(), "trials/t/result.json"); err != nil {
		t.Error("no result.json for a diverged run:", err)
	}
}

func TestNewBatchesVocab(t *testing.T) {
	cfg := testConfig(SFAdamW)
	cfg.ModelConfig.Vocab = 128
	_, err := NewBatches(cfg, testCorpus(t))
	if err == nil || !strings.Contains(err.Error(), "vocab") {
		t.Fatalf("a token outside the vocabulary: %v", err)
	}
}
