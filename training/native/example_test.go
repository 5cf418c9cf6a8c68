package native_test

import (
	"fmt"
	"math"

	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training/model"
	"github.com/sfsweep/sfsweep/training/native"
)

// A few steps of SF-AdamW on one repeated batch of micro-llama.
func Example() {
	cfg, _ := model.Preset("micro-llama")
	m, err := native.New[float32](cfg, cfg.Batch, cfg.Context)
	if err != nil {
		panic(err)
	}
	model.Init(cfg, 1, m.Params())
	opt, _ := sfadamw.New(sfadamw.Config{LR: 1e-2, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8}, m.Params())

	n := cfg.Batch * cfg.Context
	tokens, targets := make([]int32, n), make([]int32, n)
	for i := range tokens {
		tokens[i], targets[i] = int32(i*7%cfg.Vocab), int32((i*7+1)%cfg.Vocab)
	}
	var first, last float64
	for step := range 50 {
		m.ZeroGrad()
		loss, err := m.Forward(tokens, targets)
		if err != nil {
			panic(err)
		}
		m.Backward()
		opt.Step(m.Grads())
		if step == 0 {
			first = loss
		}
		last = loss
	}
	fmt.Printf("initial loss %.1f ≈ ln %d = %.1f\n", first, cfg.Vocab, math.Log(float64(cfg.Vocab)))
	fmt.Println("loss after 50 steps below 1:", last < 1)
	// Output:
	// initial loss 3.5 ≈ ln 32 = 3.5
	// loss after 50 steps below 1: true
}
