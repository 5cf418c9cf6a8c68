package checkpoint_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training/checkpoint"
	"github.com/sfsweep/sfsweep/training/model"
)

// Save a checkpoint with its optimizer state every few steps, then resume from the newest
// valid one.
func Example() {
	dir, _ := os.MkdirTemp("", "ckpt")
	defer os.RemoveAll(dir)
	store, _ := blob.NewDir(dir)
	ctx := context.Background()

	cfg, _ := model.Preset("micro-llama")
	params := make([]float32, cfg.NumParams())
	model.Init(cfg, 1, params)
	opt, _ := sfadamw.New(sfadamw.DefaultConfig(), params)
	grad := make([]float32, len(params))
	for step := int64(1); step <= 6; step++ {
		for i := range grad {
			grad[i] = params[i] // the gradient of ½‖w‖²
		}
		opt.Step(grad)
		if step%2 == 0 {
			c := &checkpoint.Checkpoint{Step: step, Model: cfg, Params: params, State: json.RawMessage(`{"next_batch":` + fmt.Sprint(step) + `}`)}
			if err := c.PutOptimizer("opt", opt.State()); err != nil {
				panic(err)
			}
			if err := checkpoint.Save(ctx, store, "runs/demo", c); err != nil {
				panic(err)
			}
			checkpoint.Prune(ctx, store, "runs/demo", 2)
		}
	}

	c, skipped, err := checkpoint.Latest(ctx, store, "runs/demo")
	if err != nil || c == nil {
		panic(err)
	}
	resumed, _ := sfadamw.New(sfadamw.DefaultConfig(), c.Params)
	st, _ := c.Optimizer("opt")
	if err := resumed.Restore(st); err != nil {
		panic(err)
	}
	infos, _ := checkpoint.List(ctx, store, "runs/demo")
	fmt.Println("resume at step", c.Step, "with state", string(c.State), "skipped", len(skipped))
	fmt.Println("kept", len(infos), "checkpoints, the oldest of step", infos[0].Step)
	// Output:
	// resume at step 6 with state {"next_batch":6} skipped 0
	// kept 2 checkpoints, the oldest of step 4
}
