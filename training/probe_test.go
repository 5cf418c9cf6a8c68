package training

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/internal/probe"
	"github.com/sfsweep/sfsweep/training/checkpoint"
)

// weightsAt trains cfg to its end and returns the checkpoint at step.
func weightsAt(t *testing.T, cfg Config, step int) (*checkpoint.Checkpoint, Batches) {
	t.Helper()
	store := newStore(t)
	if _, err := run(t, cfg, store, 0); err != nil {
		t.Fatal(err)
	}
	ck, err := checkpoint.Load(context.Background(), store, "trials/t/checkpoints", int64(step))
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBatches(cfg, testCorpus(t))
	if err != nil {
		t.Fatal(err)
	}
	return ck, b
}

func TestDecayProbe(t *testing.T) {
	cfg := testConfig(AdamW)
	cfg.Optimizer.Schedule = "constant"
	ck, b := weightsAt(t, cfg, 30)
	pc := DefaultDecayProbe(30, 8, IterW)
	res, err := DecayProbe(context.Background(), cfg, ck.Params, b, pc)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Curve) != 8 || res.Curve[0].Step != 31 || res.Curve[7].Step != 38 {
		t.Fatalf("curve %+v", res.Curve)
	}
	// the LR falls linearly from the peak: γ_k = 1e-4·(1 − (k−1)/8)
	for k, p := range res.Curve {
		if want := 1e-4 * (1 - float64(k)/8); math.Abs(p.LR-want) > 1e-18 {
			t.Errorf("step %d: LR %g, want %g", p.Step, p.LR, want)
		}
	}
	if !(res.Before > 0) || !(res.After > 0) || res.Before == float64(res.After) || res.EvalSeqs != 16 {
		t.Errorf("before %v after %v over %d sequences", res.Before, res.After, res.EvalSeqs)
	}
	// the probe's first evaluation is the run's validation loss at w at step 30
	again, err := DecayProbe(context.Background(), cfg, ck.Params, b, pc)
	if err != nil || again.After != res.After {
		t.Errorf("the probe is not deterministic: %v vs %v (%v)", again.After, res.After, err)
	}
	if _, err := DecayProbe(context.Background(), cfg, ck.Params, b, DefaultDecayProbe(30, 0, IterW)); err == nil {
		t.Error("a probe of 0 steps was accepted")
	}
}

// The sqrt shape decays as 1 − sqrt of the progress, from the same checkpoint and batches:
// γ_k = 1e-4·(1 − sqrt((k−1)/8)), a different end than the linear probe's.
func TestDecayProbeSqrt(t *testing.T) {
	cfg := testConfig(AdamW)
	cfg.Optimizer.Schedule = "constant"
	ck, b := weightsAt(t, cfg, 30)
	pc := DecayProbeFrom(30, probe.Decay{Steps: 8, Iterate: IterW, Shape: probe.ShapeSqrt})
	res, err := DecayProbe(context.Background(), cfg, ck.Params, b, pc)
	if err != nil {
		t.Fatal(err)
	}
	for k, p := range res.Curve {
		if want := 1e-4 * (1 - math.Sqrt(float64(k)/8)); math.Abs(p.LR-want) > 1e-18 {
			t.Errorf("step %d: LR %g, want %g", p.Step, p.LR, want)
		}
	}
	linear, err := DecayProbe(context.Background(), cfg, ck.Params, b, DecayProbeFrom(30, probe.Decay{Steps: 8, Iterate: IterW}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Shape != probe.ShapeSqrt || linear.Shape != "" || res.Before != linear.Before || res.After == linear.After {
		t.Errorf("sqrt %q before %v after %v; linear %q before %v after %v", res.Shape, res.Before, res.After, linear.Shape, linear.Before, linear.After)
	}
}

// The LR-decay branch of AdamW continues the run's optimizer from its checkpoint with the
// LR linear from the schedule's value to zero.
func TestDecayBranch(t *testing.T) {
	cfg := testConfig(AdamW)
	cfg.Optimizer.Schedule = "constant"
	ck, b := weightsAt(t, cfg, 20)
	st, err := ck.Optimizer(StateOptimizer)
	if err != nil {
		t.Fatal(err)
	}
	res, err := LRDecay(context.Background(), cfg, ck.Params, st, 20, 0.5, b)
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 10 || res.StartLR != cfg.Optimizer.LR || len(res.Curve) != 10 {
		t.Fatalf("branch %+v", res)
	}
	for k, p := range res.Curve {
		if want := cfg.Optimizer.LR * (1 - float64(k+1)/10); math.Abs(p.LR-want) > 1e-15 {
			t.Errorf("step %d: LR %g, want %g", p.Step, p.LR, want)
		}
	}
	other := cfg
	other.Optimizer.Name = "lion"
	if _, err := LRDecay(context.Background(), other, ck.Params, st, 20, 0.5, b); err == nil || !strings.Contains(err.Error(), "optimizer.name") {
		t.Errorf("a decay branch of a lion run: %v", err)
	}
	// the same branch by its length, with the weights it ends with: their loss is the
	// branch's final loss, to the bit
	again, final, err := LRDecayWeights(context.Background(), cfg, ck.Params, st, 20, 10, b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, res) || len(final) != len(ck.Params) {
		t.Fatalf("branch by length %+v (%d weights), want %+v", again, len(final), res)
	}
	pts, err := Interpolate(context.Background(), cfg, ck.Params, final, []float64{0}, b)
	if err != nil || pts[0].Loss != res.After {
		t.Errorf("loss at the branch's final weights %+v (%v), want %v", pts, err, res.After)
	}
}

// The LR-decay branch of SF-AdamW continues the run's y, z and v from its checkpoint with
// γ linear from the run's to zero, and reads the loss at x: before the branch it is the
// run's Val[x] at that step, to the bit; after it, the loss at the x it returns.
func TestDecayBranchSFAdamW(t *testing.T) {
	cfg := testConfig(SFAdamW)
	store := newStore(t)
	run1, err := run(t, cfg, store, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ck, err := checkpoint.Load(ctx, store, "trials/t/checkpoints", 20)
	if err != nil {
		t.Fatal(err)
	}
	st, err := ck.Optimizer(StateOptimizer)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewBatches(cfg, testCorpus(t))
	res, err := LRDecay(ctx, cfg, ck.Params, st, 20, 0.5, b)
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 10 || res.StartLR != cfg.Optimizer.LR || len(res.Curve) != 10 || res.DivergedAt != 0 {
		t.Fatalf("branch %+v", res)
	}
	for k, p := range res.Curve {
		if want := cfg.Optimizer.LR * (1 - float64(k+1)/10); math.Abs(p.LR-want) > 1e-15 {
			t.Errorf("step %d: γ %g, want %g", p.Step, p.LR, want)
		}
	}
	if at20 := run1.Curves[1]; at20.Step != 20 || res.Before != at20.Val[IterX] {
		t.Errorf("loss before the branch %v, the run's Val[x] at step %d %v", res.Before, at20.Step, at20.Val[IterX])
	}
	if !(res.After > 0) || float64(res.After) == res.Before {
		t.Errorf("loss after the branch %v, before %v", res.After, res.Before)
	}
	again, x, err := LRDecayWeights(ctx, cfg, ck.Params, st, 20, 10, b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, res) {
		t.Fatalf("the branch is not deterministic: %+v, then %+v", again, res)
	}
	pts, err := Interpolate(ctx, cfg, x, ck.Params, []float64{1}, b)
	if err != nil || pts[0].Loss != res.After {
		t.Errorf("loss at the branch's final x %+v (%v), want %v", pts, err, res.After)
	}
}

// An LR-decay branch that ends on a step its run does not evaluate carries the run's own
// validation loss at that step, continued from the checkpoint: to the bit the Val of a run
// of the same config that evaluates more often (evaluation changes no training step).
func TestLRDecayControl(t *testing.T) {
	for _, opt := range []string{SFAdamW, AdamW} {
		t.Run(opt, func(t *testing.T) {
			cfg := testConfig(opt)
			cfg.Optimizer.Schedule = ""
			if opt == AdamW {
				cfg.Optimizer.Schedule = "constant"
			}
			cfg = cfg.WithDefaults()
			ck, b := weightsAt(t, cfg, 20)
			st, err := ck.Optimizer(StateOptimizer)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			res, err := LRDecay(ctx, cfg, ck.Params, st, 20, 0.25, b) // ends at 25
			if err != nil {
				t.Fatal(err)
			}
			if res.Steps != 5 || res.Constant == nil {
				t.Fatalf("branch of %d steps, control %v", res.Steps, res.Constant)
			}
			dense := cfg
			dense.EvalEvery = 5
			run2, err := run(t, dense, newStore(t), 0)
			if err != nil {
				t.Fatal(err)
			}
			iter := IterW
			if opt == SFAdamW {
				iter = IterX
			}
			var want float64
			for _, p := range run2.Curves {
				if p.Step == 25 {
					want = p.Val[iter]
				}
			}
			if float64(*res.Constant) != want || want == 0 {
				t.Errorf("control at step 25 %v, the run's Val[%s] there %v", *res.Constant, iter, want)
			}
			if float64(res.After) == want {
				t.Errorf("the decayed branch ends at the control's loss %v", want)
			}
			// on the run's evaluation grid there is no control: the curve has the step
			on, err := LRDecay(ctx, cfg, ck.Params, st, 20, 0.5, b)
			if err != nil || on.Constant != nil {
				t.Errorf("branch ending at 30: control %v, %v", on.Constant, err)
			}
		})
	}
}

// Interpolation at α = 1 and α = 0 is the loss at each checkpoint; in between it is a
// loss too.
func TestInterpolate(t *testing.T) {
	cfg := testConfig(SFAdamW)
	store := newStore(t)
	if _, err := run(t, cfg, store, 0); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c1, err1 := checkpoint.Load(ctx, store, "trials/t/checkpoints", 10)
	c2, err2 := checkpoint.Load(ctx, store, "trials/t/checkpoints", 30)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	b, _ := NewBatches(cfg, testCorpus(t))
	pts, err := Interpolate(ctx, cfg, c1.Params, c2.Params, []float64{1, 0.5, 0}, b)
	if err != nil {
		t.Fatal(err)
	}
	p1, err := newProbe(context.Background(), cfg, c1.Params, b)
	if err != nil {
		t.Fatal(err)
	}
	l1, _, _ := p1.valLoss(cfg.EvalSeqs)
	p2, _ := newProbe(context.Background(), cfg, c2.Params, b)
	l2, _, _ := p2.valLoss(cfg.EvalSeqs)
	if float64(pts[0].Loss) != l1 || float64(pts[2].Loss) != l2 || !(pts[1].Loss > 0) {
		t.Errorf("interpolation %+v; endpoints %v, %v", pts, l1, l2)
	}
	if l2 >= l1 {
		t.Errorf("the step-30 weights (%v) are no better than the step-10 ones (%v)", l2, l1)
	}
}

// A diverged probe's loss is null in JSON and NaN again when read; a finite one is exact.
func TestLossJSON(t *testing.T) {
	for _, l := range []Loss{Loss(math.NaN()), Loss(math.Inf(1)), Loss(math.Inf(-1)), 3.0000000000000004, 0} {
		b, err := json.Marshal(LRDecayResult{After: l})
		if err != nil {
			t.Fatalf("%v: %v", l, err)
		}
		var back LRDecayResult
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		finite := !math.IsNaN(float64(l)) && !math.IsInf(float64(l), 0)
		if finite && back.After != l || !finite && (!math.IsNaN(float64(back.After)) || !strings.Contains(string(b), `"val_after":null`)) {
			t.Errorf("%v → %s → %v", l, b, back.After)
		}
	}
}
