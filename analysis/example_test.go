package analysis_test

import (
	"fmt"
	"math"

	"github.com/sfsweep/sfsweep/analysis"
)

// With β = 0 Schedule-Free's x is the plain running average of the y iterates: every
// weight is 1/T.
func ExampleWeights() {
	alpha, err := analysis.Weights(analysis.VanillaC(4), 0)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%.4f\n", alpha)
	// Output: [0.2500 0.2500 0.2500 0.2500]
}

// The refined method's weights approach the closed form (C/T)(t/T)^{C−1}.
func ExampleRefinedWeights() {
	s, err := analysis.RefinedWeights(5000, 0.9, 50)
	if err != nil {
		panic(err)
	}
	fmt.Printf("total-variation distance to the closed form below 0.005: %v\n", s.TV < 0.005)
	// Output: total-variation distance to the closed form below 0.005: true
}

// Lanczos gives the preconditioned sharpness λ₁(P⁻¹H) from Hessian-vector products.
func ExampleLanczos() {
	// H = [[2 1] [1 2]] has eigenvalues 3 and 1; with P = 2I those of P⁻¹H are 1.5 and 0.5.
	hvp := func(v, out []float64) {
		out[0] = 2*v[0] + v[1]
		out[1] = v[0] + 2*v[1]
	}
	plain, _ := analysis.Lanczos(hvp, 2, 2, nil)
	pre, _ := analysis.Lanczos(hvp, 2, 2, []float64{2, 2})
	fmt.Printf("%.6f %.6f\n", plain, pre)
	// Output: 3.000000 1.500000
}

// RunToy reproduces the paper's toy experiment: the y iterates, where gradients are
// taken, track the river even for a small β1, while the averaged x iterates lag behind.
func ExampleRunToy() {
	run, err := analysis.RunToy(analysis.DefaultToyConfig(0.1))
	if err != nil {
		panic(err)
	}
	s := run.Summary()
	fmt.Printf("y closer to the river than x: %v\n", s.MeanDistY < s.MeanDistX/3)
	// Output: y closer to the river than x: true
}

// EoS traces the preconditioned sharpness of SF-AdamW, which settles at the stability
// threshold 2/((1−β1)γ).
func ExampleEoS() {
	run, err := analysis.EoS(analysis.DefaultEoSConfig())
	if err != nil {
		panic(err)
	}
	last := run.Points[len(run.Points)-1]
	fmt.Printf("threshold %.1f, sharpness within 5%%: %v\n", last.Threshold, math.Abs(last.Sharpness/last.Threshold-1) < 0.05)
	// Output: threshold 666.7, sharpness within 5%: true
}

// The central-flow variance σ² of SF-ScalarAdam shrinks as β1 grows.
func ExampleToySigma2() {
	y := analysis.Vec2{5, 0.2} // a point on the river
	lo := analysis.ToySigma2(y, 0.1, 0.99, 0.03)
	hi := analysis.ToySigma2(y, 0.9, 0.99, 0.03)
	fmt.Printf("σ²(β1=0.9) < σ²(β1=0.1): %v\n", hi < lo)
	// Output: σ²(β1=0.9) < σ²(β1=0.1): true
}

// CentralFlow compares σ² with the oscillation SF-ScalarAdam actually makes.
func ExampleCentralFlow() {
	run, err := analysis.CentralFlow(analysis.DefaultCentralFlowConfig(0.5))
	if err != nil {
		panic(err)
	}
	s := run.Summary()
	fmt.Printf("measured/predicted within 10%%: %v\n", s.MinRatio > 0.9 && s.MaxRatio < 1.1)
	// Output: measured/predicted within 10%: true
}

// The river is the hyperbola w⁽¹⁾w⁽²⁾ = 1; (0, 0) is √2 from its nearest points (±1, ±1).
func ExampleRiverDistance() {
	fmt.Printf("%.12f\n", analysis.RiverDistance(analysis.Vec2{0, 0}))
	// Output: 1.414213562373
}
