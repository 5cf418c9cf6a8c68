package sfadamw_test

import (
	"fmt"

	"github.com/sfsweep/sfsweep/sfadamw"
)

// Minimise f(w) = ½‖w‖² with SF-AdamW. The parameters hold y, where gradients are taken;
// X gives the averaged iterate x, where the paper evaluates the model.
func ExampleNew() {
	w := []float32{1, -2, 3}
	cfg := sfadamw.DefaultConfig() // γ = 2e-3, (β1, β2) = (0.95, 0.99), λ = 0.1
	cfg.LR, cfg.WarmupSteps = 0.1, 10
	opt, err := sfadamw.New(cfg, w)
	if err != nil {
		panic(err)
	}
	grad := make([]float32, len(w))
	for range 300 {
		copy(grad, w) // ∇f(y) = y
		opt.Step(grad)
	}
	x := make([]float32, len(w))
	opt.X(x)
	fmt.Printf("steps %d, |y| < 0.05: %v, |x| < 0.05: %v\n", opt.Steps(), maxAbs(w) < 0.05, maxAbs(x) < 0.05)
	// Output: steps 300, |y| < 0.05: true, |x| < 0.05: true
}

// Refined SF-AdamW decouples the averaging window from β1 through C. C = 1/(1−β1) is vanilla
// SF-AdamW, and Canonical maps it to the vanilla configuration so the two are one run.
func ExampleConfig_Canonical() {
	cfg := sfadamw.DefaultConfig()
	cfg.C = 1 / (1 - cfg.Beta1) // 20 for β1 = 0.95
	fmt.Println(cfg.IsVanilla(), cfg.Canonical().C)
	cfg.C = 200
	fmt.Println(cfg.IsVanilla(), cfg.Canonical().C)
	// Output:
	// true 0
	// false 200
}

// AdamW with the paper's large-batch schedule: 5% warmup, cosine to 10% of the peak.
func ExampleSchedule() {
	s := sfadamw.DefaultAdamWConfig(1000).Schedule
	for _, t := range []int{25, 50, 525, 1000} {
		fmt.Printf("γ_%d = %.2e\n", t, s.At(t))
	}
	// Output:
	// γ_25 = 5.00e-04
	// γ_50 = 1.00e-03
	// γ_525 = 5.50e-04
	// γ_1000 = 1.00e-04
}

// Out-of-range hyperparameters are rejected with the field and the valid range.
func ExampleConfig_Validate() {
	cfg := sfadamw.DefaultConfig()
	cfg.Beta1 = 1
	fmt.Println(cfg.Validate())
	// Output: beta1 = 1: must be in [0, 1)
}

func maxAbs(v []float32) float32 {
	var m float32
	for _, x := range v {
		m = max(m, x, -x)
	}
	return m
}
