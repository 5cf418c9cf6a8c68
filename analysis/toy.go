// Package analysis reproduces the analytical figures of "Through the River: Understanding the
// Benefit of Schedule-Free Methods for Language Model Training": the two-dimensional
// river-valley toy model and Schedule-Free AdamW runs on it, the implicit averaging weights
// α_t of Schedule-Free methods (vanilla and refined), the (preconditioned) sharpness at the
// Edge of Stability, and the central-flow prediction of the oscillation variance of
// SF-ScalarAdam.
//
// All computations are in float64 and deterministic: the same inputs give byte-identical
// JSON and CSV outputs.
package analysis

import (
	"math"

	"gonum.org/v1/gonum/mat"
)

// Vec2 is a point (w⁽¹⁾, w⁽²⁾) of the toy model's two-dimensional parameter space.
type Vec2 = [2]float64

// softplus returns log(1+eˣ) without overflow or loss of precision for large |x|.
func softplus(x float64) float64 {
	if x > 0 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}

// sigmoid returns 1/(1+e^{-x}) without overflow.
func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// ToyLoss is the river-valley objective of the paper's toy model (sec. 3.1),
//
//	f(w) = ½(w⁽¹⁾w⁽²⁾ − 1)² + log(1 + exp(−w⁽¹⁾)).
//
// The curve w⁽¹⁾w⁽²⁾ = 1 is the river; along it the loss decreases slowly as w⁽¹⁾ grows.
func ToyLoss(w Vec2) float64 {
	r := w[0]*w[1] - 1
	return 0.5*r*r + softplus(-w[0])
}

// ToyGrad returns the gradient ∇f(w) of ToyLoss.
func ToyGrad(w Vec2) Vec2 {
	r := w[0]*w[1] - 1
	return Vec2{r*w[1] - sigmoid(-w[0]), r * w[0]}
}

// ToyHessian returns the Hessian ∇²f(w) of ToyLoss as a row-major 2×2 matrix.
func ToyHessian(w Vec2) [2]Vec2 {
	a, b := w[0], w[1]
	p, q := sigmoid(-a), sigmoid(a)
	off := 2*a*b - 1
	return [2]Vec2{{b*b + p*q, off}, {off, a * a}}
}

// ToyThird returns the third-derivative tensor of ToyLoss: ToyThird(w)[k] is ∂ₖ∇²f(w),
// the derivative of the Hessian along coordinate k.
func ToyThird(w Vec2) [2][2]Vec2 {
	a, b := w[0], w[1]
	p, q := sigmoid(-a), sigmoid(a)
	return [2][2]Vec2{
		{{p * q * (p - q), 2 * b}, {2 * b, 2 * a}},
		{{2 * b, 2 * a}, {2 * a, 0}},
	}
}

// sym2Top returns the largest eigenvalue of the symmetric 2×2 matrix h and a unit
// eigenvector for it. The eigenvector's sign is fixed so that its largest-magnitude
// component is positive.
func sym2Top(h [2]Vec2) (float64, Vec2) {
	a, b, d := h[0][0], h[0][1], h[1][1]
	half := 0.5 * (a - d)
	rad := math.Hypot(half, b)
	lam := 0.5*(a+d) + rad
	// Of the two equivalent forms of the eigenvector pick the better conditioned one.
	var u Vec2
	if half >= 0 {
		u = Vec2{half + rad, b}
	} else {
		u = Vec2{b, rad - half}
	}
	n := math.Hypot(u[0], u[1])
	if n == 0 { // h is a multiple of the identity; any direction is an eigenvector
		return lam, Vec2{1, 0}
	}
	u[0], u[1] = u[0]/n, u[1]/n
	lead := u[0]
	if math.Abs(u[1]) > math.Abs(u[0]) {
		lead = u[1]
	}
	if lead < 0 {
		u[0], u[1] = -u[0], -u[1]
	}
	return lam, u
}

// ToySharpness returns the sharpness S(w) = λ₁(∇²f(w)) of ToyLoss and the corresponding
// unit eigenvector u (the hill direction).
func ToySharpness(w Vec2) (s float64, u Vec2) {
	return sym2Top(ToyHessian(w))
}

// ToySharpnessGrad returns ∇S(w), the gradient of the sharpness, through the identity
// ∂ₖS = uᵀ(∂ₖ∇²f)u, valid where the top Hessian eigenvalue is simple.
func ToySharpnessGrad(w Vec2) Vec2 {
	_, u := ToySharpness(w)
	d := ToyThird(w)
	var g Vec2
	for k := range 2 {
		m := d[k]
		g[k] = u[0]*(m[0][0]*u[0]+m[0][1]*u[1]) + u[1]*(m[1][0]*u[0]+m[1][1]*u[1])
	}
	return g
}

// RiverPoint returns the point of the river {w⁽¹⁾w⁽²⁾ = 1} nearest to w, on either branch
// of the hyperbola, and its Euclidean distance from w.
//
// The nearest point (s, 1/s) is a real root of the stationarity condition
// s⁴ − w⁽¹⁾s³ + w⁽²⁾s − 1 = 0; the roots are the eigenvalues of the quartic's companion
// matrix, each polished by Newton's method on the squared distance.
//
// For a point with an infinite or NaN coordinate it returns NaNs.
func RiverPoint(w Vec2) (Vec2, float64) {
	a, b := w[0], w[1]
	if !finite(w) {
		return Vec2{math.NaN(), math.NaN()}, math.NaN()
	}
	// Companion matrix of s⁴ + c₃s³ + c₂s² + c₁s + c₀ with c₃ = −a, c₂ = 0, c₁ = b, c₀ = −1.
	comp := mat.NewDense(4, 4, []float64{
		0, 0, 0, 1,
		1, 0, 0, -b,
		0, 1, 0, 0,
		0, 0, 1, a,
	})
	var eig mat.Eigen
	var cands []float64
	if eig.Factorize(comp, mat.EigenNone) {
		for _, r := range eig.Values(nil) {
			// The real part of any root is a point of the hyperbola, so taking it as a
			// candidate can only over-estimate the distance; the true minimiser is one of
			// the real roots and is always among the candidates.
			cands = append(cands, real(r))
		}
	}
	// The points (a, 1/a) and (1/b, b) of the hyperbola guard against a failed
	// factorisation; they too can only over-estimate the distance.
	cands = append(cands, a)
	if b != 0 {
		cands = append(cands, 1/b)
	}
	best, bestD := Vec2{}, math.Inf(1)
	for _, s := range cands {
		if s == 0 || math.IsNaN(s) || math.IsInf(s, 0) {
			continue
		}
		s = polishRiver(a, b, s)
		p := Vec2{s, 1 / s}
		if d := math.Hypot(p[0]-a, p[1]-b); d < bestD {
			best, bestD = p, d
		}
	}
	return best, bestD
}

// polishRiver refines a stationary point s of φ(s) = (s−a)² + (1/s−b)² by safeguarded
// Newton steps: a step is accepted only if it does not increase φ and keeps the sign of s.
func polishRiver(a, b, s float64) float64 {
	phi := func(s float64) float64 { return (s-a)*(s-a) + (1/s-b)*(1/s-b) }
	for range 20 {
		s2, s3 := s*s, s*s*s
		d1 := 2*(s-a) - 2*(1/s-b)/s2       // φ'
		d2 := 2 + 2/(s2*s2) + 4*(1/s-b)/s3 // φ''
		if d2 <= 0 || d1 == 0 {
			return s
		}
		n := s - d1/d2
		if n*s <= 0 || phi(n) > phi(s) {
			return s
		}
		if n == s {
			return s
		}
		s = n
	}
	return s
}

// RiverDistance returns the Euclidean distance from w to the river {w⁽¹⁾w⁽²⁾ = 1}.
func RiverDistance(w Vec2) float64 {
	_, d := RiverPoint(w)
	return d
}
