package analysis

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/sfsweep/sfsweep/fielderr"
)

// Weights returns the implicit averaging weights α₁..α_T of a Schedule-Free method with
// momentum β and averaging coefficients c₁..c_T (c[t-1] holds c_t), so that
//
//	x_T = Σ_{t=1}^{T} α_t y_t,
//	α_t = c_t/((1−c_t)(1−β)+c_t) · Π_{s=t+1}^{T} (1−c_s)(1−β)/((1−c_s)(1−β)+c_s)
//
// (paper sec. 5). Because x₁ = y₁, c₁ must be 1; every other c_t must lie in [0, 1]. The
// weights are non-negative and sum to one. They are computed in O(T) from suffix sums of
// logarithms, so long products underflow only to the true (negligible) value 0.
func Weights(c []float64, beta float64) ([]float64, error) {
	if err := checkBeta("beta", beta); err != nil {
		return nil, fmt.Errorf("analysis: weights: %w", err)
	}
	if len(c) == 0 {
		return nil, fmt.Errorf("analysis: weights: empty c sequence")
	}
	if c[0] != 1 {
		return nil, fmt.Errorf("analysis: weights: c_1 = %v, want 1 (x_1 = y_1)", c[0])
	}
	for i, ct := range c {
		if !(ct >= 0 && ct <= 1) {
			return nil, fmt.Errorf("analysis: weights: c_%d = %v outside the valid range [0, 1]", i+1, ct)
		}
	}
	alpha := make([]float64, len(c))
	// logTail is log Π_{s>t} r_s; zeroTail records that some r_s = 0 (c_s = 1) follows t.
	logTail, zeroTail := 0.0, false
	for t := len(c) - 1; t >= 0; t-- {
		den := (1-c[t])*(1-beta) + c[t]
		if !zeroTail {
			alpha[t] = c[t] / den * math.Exp(logTail)
		}
		num := (1 - c[t]) * (1 - beta)
		if num == 0 {
			zeroTail = true
		} else {
			logTail += math.Log(num / den)
		}
	}
	return alpha, nil
}

// VanillaC returns the averaging coefficients c_t = 1/t, t = 1..T, of vanilla Schedule-Free
// methods with a constant learning rate.
func VanillaC(T int) []float64 {
	c := make([]float64, T)
	for t := range c {
		c[t] = 1 / float64(t+1)
	}
	return c
}

// RefinedC returns the averaging coefficients c_t = min((1−β)C/t, 1), t = 1..T, of the
// refined Schedule-Free method with decoupling parameter C (paper sec. 5, Alg. 2). c₁ is
// set to 1 whatever (1−β)C is, since x₁ = y₁.
func RefinedC(T int, beta, C float64) []float64 {
	c := make([]float64, T)
	for t := range c {
		c[t] = math.Min((1-beta)*C/float64(t+1), 1)
	}
	if T > 0 {
		c[0] = 1
	}
	return c
}

// ApproxWeights returns the closed-form approximation α_t ≈ (C/T)(t/T)^{C−1}, t = 1..T, of
// the refined method's averaging weights (paper appendix C.4). Vanilla Schedule-Free with
// momentum β corresponds to C = 1/(1−β).
func ApproxWeights(T int, C float64) []float64 {
	a := make([]float64, T)
	for t := range a {
		r := float64(t+1) / float64(T)
		a[t] = C / float64(T) * math.Pow(r, C-1)
	}
	return a
}

// TotalVariation returns the total-variation distance ½Σ|p_i − q_i| between two weight
// vectors of equal length.
func TotalVariation(p, q []float64) float64 {
	if len(p) != len(q) {
		panic(fmt.Sprintf("analysis: TotalVariation of lengths %d and %d", len(p), len(q)))
	}
	var s float64
	for i := range p {
		s += math.Abs(p[i] - q[i])
	}
	return s / 2
}

// checkBeta reports whether beta is a valid momentum in [0, 1).
func checkBeta(name string, beta float64) error {
	if !(beta >= 0 && beta < 1) {
		return &fielderr.Error{Field: name, Value: beta, Reason: "must be in [0, 1)"}
	}
	return nil
}

// WeightSet is one sequence of averaging weights with its closed-form approximation, the
// data behind one panel of the paper's weight histograms (fig:weights_histogram, fig:modified_weights_histogram, fig:modified_weights_histogram_T5000).
type WeightSet struct {
	Kind   string    `json:"kind"` // "vanilla" (c_t = 1/t) or "refined" (c_t = min((1−β)C/t, 1))
	Beta   float64   `json:"beta"`
	C      float64   `json:"c"` // decoupling parameter; 1/(1−β) for vanilla
	T      int       `json:"T"`
	Alpha  []float64 `json:"alpha"`  // α_1..α_T
	Approx []float64 `json:"approx"` // (C/T)(t/T)^{C−1}
	TV     float64   `json:"tv"`     // total-variation distance between Alpha and Approx
}

// VanillaWeights returns the averaging weights of vanilla Schedule-Free with momentum beta
// over T steps, compared with the closed form at C = 1/(1−β).
func VanillaWeights(T int, beta float64) (WeightSet, error) {
	if err := checkSteps("T", T); err != nil {
		return WeightSet{}, fmt.Errorf("analysis: vanilla weights: %w", err)
	}
	return newWeightSet("vanilla", VanillaC(T), beta, 1/(1-beta))
}

// RefinedWeights returns the averaging weights of refined Schedule-Free with momentum beta
// and decoupling parameter C over T steps, compared with the closed form.
func RefinedWeights(T int, beta, C float64) (WeightSet, error) {
	if err := checkSteps("T", T); err != nil {
		return WeightSet{}, fmt.Errorf("analysis: refined weights: %w", err)
	}
	if !(C > 0) || math.IsInf(C, 0) {
		return WeightSet{}, fmt.Errorf("analysis: refined weights: %w", &fielderr.Error{Field: "c", Value: C, Reason: "must be a finite number > 0"})
	}
	return newWeightSet("refined", RefinedC(T, beta, C), beta, C)
}

func newWeightSet(kind string, c []float64, beta, C float64) (WeightSet, error) {
	a, err := Weights(c, beta)
	if err != nil {
		return WeightSet{}, fmt.Errorf("analysis: %s weights: %w", kind, err)
	}
	ap := ApproxWeights(len(c), C)
	return WeightSet{Kind: kind, Beta: beta, C: C, T: len(c), Alpha: a, Approx: ap, TV: TotalVariation(a, ap)}, nil
}

// WriteWeightsJSON writes the weight sets as indented JSON.
func WriteWeightsJSON(w io.Writer, sets []WeightSet) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	if err := enc.Encode(sets); err != nil {
		return fmt.Errorf("analysis: write weights JSON: %w", err)
	}
	return nil
}

// WriteWeightsCSV writes the weight sets in long form, one row per set and step, with
// columns kind, beta, c, T, t, alpha, approx.
func WriteWeightsCSV(w io.Writer, sets []WeightSet) error {
	buf := []byte("kind,beta,c,T,t,alpha,approx\n")
	for _, s := range sets {
		for t := range s.Alpha {
			buf = append(buf, s.Kind...)
			for _, v := range []float64{s.Beta, s.C, float64(s.T), float64(t + 1), s.Alpha[t], s.Approx[t]} {
				buf = append(buf, ',')
				buf = strconv.AppendFloat(buf, v, 'g', -1, 64)
			}
			buf = append(buf, '\n')
		}
		if _, err := w.Write(buf); err != nil {
			return fmt.Errorf("analysis: write weights CSV: %w", err)
		}
		buf = buf[:0]
	}
	if len(buf) > 0 {
		if _, err := w.Write(buf); err != nil {
			return fmt.Errorf("analysis: write weights CSV: %w", err)
		}
	}
	return nil
}

// checkSteps reports whether a step count is at least 1.
func checkSteps(name string, n int) error {
	if n < 1 {
		return &fielderr.Error{Field: name, Value: n, Reason: "must be ≥ 1"}
	}
	return nil
}
