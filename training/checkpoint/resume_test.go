package checkpoint

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training/model"
	"github.com/sfsweep/sfsweep/training/native"
)

// loopState is what a training loop keeps beside the tensors: here the data sampler's RNG.
type loopState struct {
	RNG []byte `json:"rng"` // rand.PCG state, MarshalBinary
}

// trainer is a small training loop on the native engine: micro-llama, SF-AdamW, an EWA of
// the parameters, random batches; it checkpoints every `every` steps.
type trainer struct {
	cfg  model.Config
	m    *native.Model[float32]
	opt  *sfadamw.SFAdamW[float32]
	ewa  *sfadamw.EWA[float32]
	rng  *rand.PCG
	step int64
}

func newTrainer(t *testing.T) *trainer {
	cfg := mustPreset(t, "micro-llama")
	m, err := native.New[float32](cfg, cfg.Batch, cfg.Context)
	if err != nil {
		t.Fatal(err)
	}
	model.Init(cfg, 1, m.Params())
	opt, err := sfadamw.New(sfadamw.Config{LR: 1e-2, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1, WarmupSteps: 3}, m.Params())
	if err != nil {
		t.Fatal(err)
	}
	ewa, err := sfadamw.NewEWA[float32](cfg.NumParams(), 0.9)
	if err != nil {
		t.Fatal(err)
	}
	return &trainer{cfg: cfg, m: m, opt: opt, ewa: ewa, rng: rand.NewPCG(5, 6)}
}

func (tr *trainer) checkpoint(t *testing.T) *Checkpoint {
	rng, err := tr.rng.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	st, err := json.Marshal(loopState{RNG: rng})
	if err != nil {
		t.Fatal(err)
	}
	c := &Checkpoint{Step: tr.step, Model: tr.cfg, Params: tr.m.Params(), State: st}
	if err := c.PutOptimizer("opt", tr.opt.State()); err != nil {
		t.Fatal(err)
	}
	if err := c.PutOptimizer("ewa", tr.ewa.State()); err != nil {
		t.Fatal(err)
	}
	return c
}

func (tr *trainer) restore(t *testing.T, c *Checkpoint) {
	if c.Model != tr.cfg {
		t.Fatalf("checkpoint of model %+v", c.Model)
	}
	if err := tr.m.WriteParams(c.Params); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]interface {
		Restore(sfadamw.State[float32]) error
	}{"opt": tr.opt, "ewa": tr.ewa} {
		st, err := c.Optimizer(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Restore(st); err != nil {
			t.Fatal(err)
		}
	}
	var ls loopState
	if err := json.Unmarshal(c.State, &ls); err != nil {
		t.Fatal(err)
	}
	if err := tr.rng.UnmarshalBinary(ls.RNG); err != nil {
		t.Fatal(err)
	}
	tr.step = c.Step
}

// train runs until step `until`, saving a checkpoint after every `every` steps.
func (tr *trainer) train(t *testing.T, store blob.Store, until, every int64) {
	n := tr.cfg.Batch * tr.cfg.Context
	tokens, targets := make([]int32, n), make([]int32, n)
	r := rand.New(tr.rng)
	for ; tr.step < until; tr.step++ {
		for i := range tokens {
			tokens[i], targets[i] = int32(r.IntN(tr.cfg.Vocab)), int32(r.IntN(tr.cfg.Vocab))
		}
		tr.m.ZeroGrad()
		if _, err := tr.m.Forward(tokens, targets); err != nil {
			t.Fatal(err)
		}
		tr.m.Backward()
		tr.opt.Step(tr.m.Grads())
		tr.ewa.Update(tr.m.Params())
		if (tr.step+1)%every == 0 {
			tr.step++
			err := Save(context.Background(), store, run, tr.checkpoint(t))
			tr.step--
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestResumeBitwise trains 12 steps straight, and again killed after step 10 (its last
// checkpoint at step 8, and a save of step 12 that never got its sidecar) and resumed in a
// fresh process from Latest: the parameters, the optimizer and the EWA must end bitwise
// identical.
func TestResumeBitwise(t *testing.T) {
	straight := newTrainer(t)
	straight.train(t, saved(t), 12, 4)

	store := saved(t)
	killed := newTrainer(t)
	killed.train(t, store, 10, 4)
	partial, err := killed.checkpoint(t).Encode()
	if err != nil {
		t.Fatal(err)
	}
	putKey(t, store, Key(run, 12), partial)

	c, skipped, err := Latest(context.Background(), store, run)
	if err != nil {
		t.Fatal(err)
	}
	if c == nil || c.Step != 8 || len(skipped) != 1 || skipped[0].Step != 12 {
		t.Fatalf("Latest = %v, skipped %v; want step 8, skipping step 12", c, skipped)
	}
	resumed := newTrainer(t)
	resumed.restore(t, c)
	resumed.train(t, store, 12, 4)

	want, got := straight.checkpoint(t), resumed.checkpoint(t)
	if err := sameCheckpoint(got, want); err != nil {
		t.Fatalf("resumed run differs from the straight one: %v", err)
	}
	// the check can fail: the run killed at step 10 is not where the straight run ends
	if err := sameCheckpoint(killed.checkpoint(t), want); err == nil {
		t.Fatal("a run 2 steps short compares equal")
	}
}
