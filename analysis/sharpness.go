package analysis

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// HVP computes out = Hv for a symmetric linear operator H on ℝⁿ, typically a
// Hessian-vector product. It must not retain v or out.
type HVP func(v, out []float64)

// ErrNotConverged reports an iterative eigenvalue method that did not reach its tolerance.
var ErrNotConverged = errors.New("not converged")

// precondOp returns the symmetric operator A = P^{-1/2} H P^{-1/2}, whose eigenvalues are
// those of P⁻¹H, for a diagonal preconditioner P (nil means the identity).
func precondOp(hvp HVP, n int, precond []float64) (HVP, error) {
	if n < 1 {
		return nil, fmt.Errorf("dimension n = %d, must be ≥ 1", n)
	}
	if precond == nil {
		return hvp, nil
	}
	if len(precond) != n {
		return nil, fmt.Errorf("preconditioner has length %d, want %d", len(precond), n)
	}
	s := make([]float64, n)
	for i, p := range precond {
		if !(p > 0) || math.IsInf(p, 0) {
			return nil, fmt.Errorf("preconditioner entry %d = %v, must be finite and > 0", i, p)
		}
		s[i] = 1 / math.Sqrt(p)
	}
	tmp := make([]float64, n)
	return func(v, out []float64) {
		for i := range v {
			tmp[i] = s[i] * v[i]
		}
		hvp(tmp, out)
		for i := range out {
			out[i] *= s[i]
		}
	}, nil
}

// startVector returns a deterministic pseudo-random unit vector of length n.
func startVector(n int) []float64 {
	rng := rand.New(rand.NewPCG(0x5eed, uint64(n)))
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	scale(v, 1/norm(v))
	return v
}

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func norm(a []float64) float64 { return math.Sqrt(dot(a, a)) }

func scale(a []float64, s float64) {
	for i := range a {
		a[i] *= s
	}
}

// axpy sets y ← y + a·x.
func axpy(a float64, x, y []float64) {
	for i := range x {
		y[i] += a * x[i]
	}
}

// Lanczos returns the largest algebraic eigenvalue of P⁻¹H, the (preconditioned) sharpness
// λ₁(P⁻¹H), by k steps of the Lanczos method with full reorthogonalisation applied to the
// symmetric form P^{-1/2} H P^{-1/2}. hvp computes Hv on ℝⁿ; precond is the diagonal of P
// (nil for the identity, giving λ₁(H)). The start vector is a fixed pseudo-random vector, so
// results are deterministic. k is capped at n; the iteration stops early, exactly, when it
// finds an invariant subspace.
func Lanczos(hvp HVP, n, k int, precond []float64) (float64, error) {
	if k < 1 {
		return 0, fmt.Errorf("analysis: lanczos: k = %d, must be ≥ 1", k)
	}
	op, err := precondOp(hvp, n, precond)
	if err != nil {
		return 0, fmt.Errorf("analysis: lanczos: %w", err)
	}
	k = min(k, n)
	qs := make([][]float64, 0, k)
	alpha := make([]float64, 0, k)
	beta := make([]float64, 0, k) // beta[j] couples q_j and q_{j+1}
	q := startVector(n)
	w := make([]float64, n)
	var scaleEst float64 // running estimate of ‖A‖ for the breakdown test
	for j := range k {
		qs = append(qs, q)
		op(q, w)
		a := dot(q, w)
		alpha = append(alpha, a)
		axpy(-a, q, w)
		if j > 0 {
			axpy(-beta[j-1], qs[j-1], w)
		}
		// Full reorthogonalisation, twice ("twice is enough").
		for range 2 {
			for _, p := range qs {
				axpy(-dot(p, w), p, w)
			}
		}
		b := norm(w)
		scaleEst = math.Max(scaleEst, math.Abs(a)+b)
		if math.IsNaN(a) || math.IsNaN(b) {
			return math.NaN(), fmt.Errorf("analysis: lanczos: NaN in the Hessian-vector product")
		}
		if j == k-1 || b <= 1e-12*scaleEst {
			break // done, or Krylov space invariant: the Ritz values are exact
		}
		beta = append(beta, b)
		q = make([]float64, n)
		copy(q, w)
		scale(q, 1/b)
	}
	return tridiagMax(alpha, beta[:len(alpha)-1]), nil
}

// tridiagMax returns the largest eigenvalue of the symmetric tridiagonal matrix with
// diagonal a and off-diagonal b by Sturm-sequence bisection.
func tridiagMax(a, b []float64) float64 {
	m := len(a)
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range a { // Gershgorin discs
		r := 0.0
		if i > 0 {
			r += math.Abs(b[i-1])
		}
		if i < m-1 {
			r += math.Abs(b[i])
		}
		lo, hi = math.Min(lo, a[i]-r), math.Max(hi, a[i]+r)
	}
	// below returns the number of eigenvalues smaller than x.
	below := func(x float64) int {
		cnt := 0
		d := 1.0
		for i := range a {
			off := 0.0
			if i > 0 {
				off = b[i-1] * b[i-1] / d
			}
			d = a[i] - x - off
			if d == 0 {
				d = -1e-300 * (1 + math.Abs(x))
			}
			if d < 0 {
				cnt++
			}
		}
		return cnt
	}
	for range 200 {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if below(mid) == m {
			hi = mid
		} else {
			lo = mid
		}
	}
	return lo + (hi-lo)/2
}

// PowerIteration estimates the eigenvalue of largest magnitude of P⁻¹H by power iteration on
// P^{-1/2} H P^{-1/2}, returning the Rayleigh quotient once it changes by less than
// tol·|λ| between iterations. It equals the sharpness λ₁(P⁻¹H) when the dominant eigenvalue
// is positive, as at the Edge of Stability. If the tolerance is not met within iters
// iterations it returns the last estimate and an error wrapping ErrNotConverged.
func PowerIteration(hvp HVP, n, iters int, tol float64, precond []float64) (float64, error) {
	op, err := precondOp(hvp, n, precond)
	if err != nil {
		return 0, fmt.Errorf("analysis: power iteration: %w", err)
	}
	v := startVector(n)
	w := make([]float64, n)
	lam := math.NaN()
	for range iters {
		op(v, w)
		next := dot(v, w)
		nw := norm(w)
		if nw == 0 {
			return 0, nil // H v = 0 for a start vector in the null space
		}
		copy(v, w)
		scale(v, 1/nw)
		if math.Abs(next-lam) <= tol*math.Abs(next) {
			return next, nil
		}
		lam = next
	}
	return lam, fmt.Errorf("analysis: power iteration: %d iterations: %w", iters, ErrNotConverged)
}
