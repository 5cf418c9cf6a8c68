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

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/training/backend"
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
		Setup:       Setup{ModelConfig: &model.Config{Arch: model.LLaMA, Vocab: 257, Dim: 32, Layers: 2, Heads: 2, Context: 32, Hidden: 64, Batch: 4}},
		Optimizer:   OptimizerConfig{Name: opt, LR: 3e-3, Beta1: 0.9, Beta2: 0.99},
		BatchTokens: 256, Loop: Loop{Steps: 40, EvalEvery: 10, EvalSeqs: 16, TestSeqs: 16,
			CheckpointEvery: 10}, Seed: 3,
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

// recorded trains cfg to its end with a memRecord, which it returns with the result.
func recorded(t *testing.T, cfg Config, store blob.Store) (*Result, *memRecord) {
	t.Helper()
	b, err := NewBatches(cfg, testCorpus(t))
	if err != nil {
		t.Fatal(err)
	}
	rec := &memRecord{}
	res, err := Run(context.Background(), cfg, Options{Store: store, Prefix: "trials/t", Record: rec, Data: b})
	if err != nil {
		t.Fatal(err)
	}
	return res, rec
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
			res, rec := recorded(t, cfg, store)
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
			if rec.config == nil || !reflect.DeepEqual(*rec.config, cfg.Canonical()) {
				t.Errorf("recorded config %+v, want the canonical config", rec.config)
			}
			if !reflect.DeepEqual(rec.curves, res.Curves) {
				t.Errorf("recorded curves %+v, want %+v", rec.curves, res.Curves)
			}
			if rec.result == nil || rec.result.ParamsHash != res.ParamsHash {
				t.Errorf("recorded result %+v, want hash %s", rec.result, res.ParamsHash)
			}
			infos, err := checkpoint.List(context.Background(), store, "trials/t/checkpoints")
			if err != nil || len(infos) != 3 {
				t.Errorf("%d checkpoints (%v), want steps 10, 20, 30", len(infos), err)
			}
			// the record goes to the Record, the store keeps only the checkpoints
			all, err := store.List(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != 2*len(infos) { // a checkpoint is two objects
				t.Errorf("the store holds %v", all)
			}
			for _, k := range all {
				if !strings.HasPrefix(k, "trials/t/checkpoints/") {
					t.Errorf("the run stored %s besides its checkpoints", k)
				}
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
	res, rec := recorded(t, cfg, newStore(t))
	if res.Status != status.Diverged || res.DivergedAt < 1 || res.DivergedAt > 40 || res.Steps != res.DivergedAt {
		t.Fatalf("status %q at step %d after %d steps", res.Status, res.DivergedAt, res.Steps)
	}
	if rec.result == nil || rec.result.Status != status.Diverged {
		t.Errorf("recorded result %+v for a diverged run", rec.result)
	}
	if rec.model != nil {
		t.Error("a diverged run recorded a model")
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

// A result and every checkpoint record the engine that produced them and the whole config;
// a checkpoint of another arithmetic is refused on resume (a *fielderr.Error naming both),
// one of the same arithmetic resumes.
func TestEngineProvenance(t *testing.T) {
	cfg := testConfig(SFAdamW)
	store := newStore(t)
	if _, err := run(t, cfg, store, 17); !errors.Is(err, errKilled) {
		t.Fatalf("interrupted run: %v", err)
	}
	ctx := context.Background()
	ck, _, err := checkpoint.Latest(ctx, store, "trials/t/checkpoints")
	if err != nil || ck == nil {
		t.Fatal(ck, err)
	}
	var ls loopState
	if err := json.Unmarshal(ck.State, &ls); err != nil {
		t.Fatal(err)
	}
	want := backend.ProvenanceOf("cpu")
	if ls.Engine == nil || *ls.Engine != want || want.Arithmetic == "" || want.Code == "" {
		t.Errorf("checkpoint engine %+v, want %+v", ls.Engine, want)
	}
	if ls.Config == nil || ls.Config.Hash() != cfg.Hash() || ls.Config.Optimizer.Beta1 != cfg.Optimizer.Beta1 {
		t.Errorf("checkpoint config %+v: not the run's", ls.Config)
	}
	// the same checkpoint, written by an engine of another arithmetic
	foreign := *ls.Engine
	foreign.Arithmetic = "cpu-fp32/0"
	ls.Engine = &foreign
	if ck.State, err = json.Marshal(ls); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.Save(ctx, store, "trials/t/checkpoints", ck); err != nil {
		t.Fatal(err)
	}
	_, err = run(t, cfg, store, 0)
	var ce *fielderr.Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "arithmetic cpu-fp32/0") || !strings.Contains(err.Error(), want.Arithmetic) {
		t.Fatalf("resume from a foreign arithmetic: %v, want a *fielderr.Error naming both", err)
	}
	ls.Engine.Arithmetic = want.Arithmetic
	ck.State, _ = json.Marshal(ls)
	if err := checkpoint.Save(ctx, store, "trials/t/checkpoints", ck); err != nil {
		t.Fatal(err)
	}
	res, err := run(t, cfg, store, 0)
	if err != nil || res.Resumed != int(ck.Step) || res.Engine != want {
		t.Fatalf("resume from the same arithmetic: %+v, %v", res, err)
	}
}

// A finished run records its model at the iterate it reports (x for SF-AdamW, w for
// AdamW) with a card: encoded as safetensors under the layout's PyTorch names and loaded
// into a fresh engine, it gives the run's test loss at that iterate exactly.
func TestFinalModel(t *testing.T) {
	for _, opt := range []string{SFAdamW, AdamW} {
		cfg := testConfig(opt)
		res, rec := recorded(t, cfg, newStore(t))
		if rec.model == nil || rec.card == nil {
			t.Fatalf("%s: no model recorded", opt)
		}
		b, err := rec.model.Encode()
		if err != nil {
			t.Fatal(err)
		}
		m, err := checkpoint.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		card := *rec.card
		if card.Iterate != res.Primary || card.Step != cfg.Steps || card.ConfigHash != cfg.Hash() || card.Engine != res.Engine || card.Model != m.Model {
			t.Fatalf("%s: card %+v", opt, card)
		}
		mc, _ := cfg.ResolveModel()
		eng, err := backend.New("cpu", mc, cfg.MicroBatch, cfg.SeqLen)
		if err != nil {
			t.Fatal(err)
		}
		if err := eng.WriteParams(m.Params); err != nil {
			t.Fatal(err)
		}
		data, err := NewBatches(cfg, testCorpus(t))
		if err != nil {
			t.Fatal(err)
		}
		n := cfg.MicroBatch * cfg.SeqLen
		loss, _, err := meanLoss(eng, data, "test", cfg.TestSeqs, make([]int32, n), make([]int32, n))
		if err != nil || loss != res.Test[res.Primary] {
			t.Errorf("%s: the model file's test loss %v (%v), the run's at %s %v", opt, loss, err, res.Primary, res.Test[res.Primary])
		}
	}
}

// A run paused at rungs (Until 10, then 30) and promoted to its end is bitwise the run
// trained without pause; a paused run writes no result, and one asked for a rung it is
// already past returns the curves at once.
func TestUntilRungs(t *testing.T) {
	cfg := testConfig(SFAdamW)
	whole, store, b := pausable(t, cfg)
	for _, until := range []int{10, 30, 10, 0} {
		rec := &memRecord{}
		res, err := Run(context.Background(), cfg, Options{Store: store, Prefix: "trials/t", Record: rec, Data: b, Until: until})
		if err != nil {
			t.Fatal(err)
		}
		if until == 0 {
			if rec.result == nil {
				t.Error("promoted to the end: no result recorded")
			}
			if res.Status != status.Completed || res.ParamsHash != whole.ParamsHash || !reflect.DeepEqual(res.Curves, whole.Curves) || !reflect.DeepEqual(res.Test, whole.Test) {
				t.Errorf("promoted to the end: %s %v, want %s %v", res.ParamsHash, res.Test, whole.ParamsHash, whole.Test)
			}
			if res.Resumed != 30 {
				t.Errorf("resumed from %d, want 30", res.Resumed)
			}
			continue
		}
		if res.Status != "" || rec.result != nil {
			t.Errorf("until %d: status %q, recorded result %+v: want a pause without a result", until, res.Status, rec.result)
		}
		want := max(until, 30*min(1, res.Resumed/30)) // the rung asked for, or the step already reached
		if res.Steps != want || len(res.Curves) != want/10 || !reflect.DeepEqual(res.Curves, whole.Curves[:want/10]) {
			t.Errorf("until %d: %d steps, curves %v; want %d steps and the whole run's first curves", until, res.Steps, len(res.Curves), want)
		}
	}
}

// A promotion killed midway (from the rung at 10, killed after step 25) and resumed ends
// bitwise the run trained without pause.
func TestPromotionKilledResumes(t *testing.T) {
	cfg := testConfig(AdamW)
	whole, store, b := pausable(t, cfg)
	opt := Options{Store: store, Prefix: "trials/t", Data: b, Until: 10}
	if _, err := Run(context.Background(), cfg, opt); err != nil {
		t.Fatal(err)
	}
	opt.Until, opt.AfterStep = 0, func(step int) error {
		if step == 25 {
			return errKilled
		}
		return nil
	}
	if _, err := Run(context.Background(), cfg, opt); !errors.Is(err, errKilled) {
		t.Fatalf("promotion: %v, want it killed", err)
	}
	opt.AfterStep = nil
	res, err := Run(context.Background(), cfg, opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.Resumed != 20 || res.ParamsHash != whole.ParamsHash || !reflect.DeepEqual(res.Test, whole.Test) {
		t.Errorf("resumed from %d: %s %v, want from 20: %s %v", res.Resumed, res.ParamsHash, res.Test, whole.ParamsHash, whole.Test)
	}
}

// pausable trains cfg uninterrupted, and returns its result with an empty store and the
// batches for the same run trained in pauses.
func pausable(t *testing.T, cfg Config) (*Result, *blob.Dir, Batches) {
	t.Helper()
	whole, err := run(t, cfg, newStore(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBatches(cfg, testCorpus(t))
	if err != nil {
		t.Fatal(err)
	}
	return whole, newStore(t), b
}
