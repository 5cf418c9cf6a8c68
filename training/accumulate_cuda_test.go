//go:build cuda

package training

import (
	"reflect"
	"testing"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/training/backend"
)

// deviceLoopOnly hides that a device engine is a backend.Accumulator and keeps its device
// loop: the step reads each micro-batch's loss after its Forward, and the update stays on
// the device.
type deviceLoopOnly struct {
	backend.Engine
	backend.DeviceLoop
}

// A run on the cuda backend whose steps read their losses once, at the step's end (with
// SFSWEEP_CUDA_FAST=graph, replayed from the micro-batch graph), is bitwise the run that
// reads each micro-batch's loss after its Forward: curves, test losses, final parameters
// and checkpoints, through a kill and a resume, in float32 and bf16, with three
// micro-batches a step.
func TestRunCUDAAccumulatedBitwise(t *testing.T) {
	ds := deviceCorpus(t)
	for _, be := range []string{"cuda", "cuda-bf16"} {
		t.Run(be, func(t *testing.T) {
			cfg := accumConfig(t, SFAdamW)
			cfg.Backend = be
			b, err := NewBatches(cfg, ds)
			if err != nil {
				t.Fatal(err)
			}
			var res [2]*Result
			var stores [2]*blob.Dir
			for i, queued := range []bool{false, true} {
				stores[i], _ = blob.NewDir(t.TempDir())
				o := Options{Store: stores[i], Prefix: "t", Data: b}
				if !queued {
					o.WrapEngine = func(e backend.Engine) backend.Engine {
						if _, ok := e.(backend.Accumulator); !ok {
							t.Fatal("the cuda engine is not an Accumulator")
						}
						return deviceLoopOnly{e, e.(backend.DeviceLoop)}
					}
				}
				res[i] = runKilledAt(t, cfg, o, true)
			}
			p, q := res[0], res[1]
			if q.Resumed != 20 || p.ParamsHash != q.ParamsHash || !reflect.DeepEqual(p.Curves, q.Curves) || !reflect.DeepEqual(p.Test, q.Test) {
				t.Errorf("the run reading its losses at each step's end (resumed from %d) differs: params %.12s vs %.12s, test %v vs %v",
					q.Resumed, q.ParamsHash, p.ParamsHash, q.Test, p.Test)
			}
			sameStore(t, be, stores[0], stores[1])
			t.Logf("%s: losses read per micro-batch and per step agree bitwise; test loss %v", be, q.Test)
		})
	}
}
