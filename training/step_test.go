package training

import (
	"context"
	"reflect"
	"testing"

	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/checkpoint"
)

// A probe's training step is the run's: continued from the run's checkpoint at step 20
// with the run's own optimizer (SF-AdamW's γ set each step, as an LR-decay branch does, to
// the run's), a probe's ten steps end on the weights the run checkpointed at step 30, bit
// for bit, with the run's training loss at step 30.
func TestProbeStepIsRunStep(t *testing.T) {
	for _, opt := range []string{AdamW, SFAdamW} {
		t.Run(opt, func(t *testing.T) {
			cfg := testConfig(opt)
			store := newStore(t)
			res, err := run(t, cfg, store, 0)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			c20, err1 := checkpoint.Load(ctx, store, "trials/t/checkpoints", 20)
			c30, err2 := checkpoint.Load(ctx, store, "trials/t/checkpoints", 30)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			st, err := c20.Optimizer(StateOptimizer)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := NewBatches(cfg, testCorpus(t))
			p, err := newProbe(ctx, cfg, c20.Params, b)
			if err != nil {
				t.Fatal(err)
			}
			defer p.eng.Close()
			sched := sfadamw.Schedule{Kind: sfadamw.Constant, Peak: cfg.Optimizer.LR} // SF-AdamW past its warmup
			if opt == AdamW {
				sched = cfg.AdamWConfig().Schedule
			}
			o, err := branchOptimizer(cfg, p.w, st, sched)
			if err != nil {
				t.Fatal(err)
			}
			curve, diverged, err := p.train(ctx, o, sched, 20, 10)
			if err != nil || diverged != 0 || len(curve) != 10 {
				t.Fatalf("probe: %d steps, diverged at %d, %v", len(curve), diverged, err)
			}
			if got, want := hashFloats(p.w), hashFloats(c30.Params); got != want {
				t.Errorf("the probe's weights after step 30 (%.12s) are not the run's (%.12s)", got, want)
			}
			if got, want := curve[9].TrainLoss, res.Curves[2].TrainLoss; got != want || res.Curves[2].Step != 30 {
				t.Errorf("the probe's training loss at step 30 is %v, the run's %v (at step %d)", got, want, res.Curves[2].Step)
			}
		})
	}
}

// deviceMemory hides that an engine's memory is the host's, as an engine with memory of
// its own does: the step then reads the gradients and writes back the host's copy.
type deviceMemory struct{ backend.Engine }

// A run on an engine with memory of its own gives bitwise the run on the host engine, the
// host's copy of the parameters kept through the steps, the evaluations, an interruption
// and a resume.
func TestRunHostCopyBitwise(t *testing.T) {
	for _, opt := range []string{SFAdamW, AdamW} {
		t.Run(opt, func(t *testing.T) {
			cfg := testConfig(opt)
			b, err := NewBatches(cfg, testCorpus(t))
			if err != nil {
				t.Fatal(err)
			}
			host, err := Run(context.Background(), cfg, Options{Data: b})
			if err != nil {
				t.Fatal(err)
			}
			store := newStore(t)
			o := Options{Store: store, Prefix: "t", Data: b, WrapEngine: func(e backend.Engine) backend.Engine {
				if _, ok := e.(backend.HostEngine); !ok {
					t.Fatal("the cpu engine is not a host engine")
				}
				return deviceMemory{e}
			}}
			killed := o
			killed.AfterStep = func(s int) error {
				if s == 25 {
					return errKilled
				}
				return nil
			}
			if _, err := Run(context.Background(), cfg, killed); err != errKilled {
				t.Fatalf("interrupted run: %v", err)
			}
			copied, err := Run(context.Background(), cfg, o)
			if err != nil {
				t.Fatal(err)
			}
			if copied.Resumed != 20 || copied.ParamsHash != host.ParamsHash || !reflect.DeepEqual(copied.Curves, host.Curves) || !reflect.DeepEqual(copied.Test, host.Test) {
				t.Errorf("the run with a host copy (resumed from %d) differs: params %.12s vs %.12s, test %v vs %v",
					copied.Resumed, copied.ParamsHash, host.ParamsHash, copied.Test, host.Test)
			}
		})
	}
}
