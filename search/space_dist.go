package search

// The distributions that the samplers draw themselves (custom): normal, log_normal, beta,
// and every quantized kind. Each is W&B's (wandb/sweeps' params.py): a draw is the
// distribution's quantile function at a uniform u, then, with Q > 0, round(x/Q)·Q with
// ties to even (numpy's round).
//
// u is a multiple of 2⁻⁵³ in [2⁻⁵³, 1 − 2⁻⁵³] (math/rand's Float64, 0 drawn again), so a
// draw lies between the quantiles of those two: for a normal, within Zmax ≈ 8.3 standard
// deviations of its mean. Range is that interval, exactly what can be drawn, which makes
// an unbounded kind's range finite and lets a manifest check every value it can take.
//
// Arithmetic that multiplies and then adds converts the product to float64 first: the Go
// spec lets a compiler fuse x*y + z (arm64 does), which would change the last bit on one
// architecture and not another.

import (
	"fmt"
	"math"
	"math/rand"

	"gonum.org/v1/gonum/mathext"
)

// The least and greatest uniform draw.
const (
	uMin = 1.0 / (1 << 53)
	uMax = 1 - uMin
)

// custom reports whether the samplers draw p themselves, rather than through goptuna.
func (p Param) custom() bool {
	return p.Q > 0 || p.Kind == Normal || p.Kind == LogNormal || p.Kind == Beta
}

// logScale reports whether p is modelled in log space.
func (p Param) logScale() bool { return p.Kind == LogUniform || p.Kind == LogNormal }

// unused fails if set, naming fields that kind p.Kind does not take.
func (p Param) unused(set bool, fields string) error {
	if set {
		return fmt.Errorf("%s are not used by kind %s", fields, p.Kind)
	}
	return nil
}

// validateQ checks Q: finite and ≥ 0; only continuous kinds are quantized.
func (p Param) validateQ() error {
	if !finite(p.Q) || p.Q < 0 {
		return fmt.Errorf("q %v is not a finite number ≥ 0", p.Q)
	}
	if p.Q > 0 && (p.Kind == IntUniform || p.Kind == Choice) {
		return fmt.Errorf("q %v quantizes a continuous kind, not %s", p.Q, p.Kind)
	}
	return nil
}

// validateShape checks normal, log_normal and beta.
func (p Param) validateShape() error {
	if err := p.unused(p.Min != 0 || p.Max != 0, "min and max"); err != nil {
		return err
	}
	if len(p.Choices) > 0 {
		return fmt.Errorf("choices %v are for kind %s, not %s", p.Choices, Choice, p.Kind)
	}
	if err := p.validateQ(); err != nil {
		return err
	}
	if p.Kind == Beta {
		if err := p.unused(p.Mu != 0 || p.Sigma != 0, "mu and sigma"); err != nil {
			return err
		}
		if !finite(p.A) || !finite(p.B) || !(p.A > 0) || !(p.B > 0) {
			return fmt.Errorf("a %v and b %v are not both finite and above 0", p.A, p.B)
		}
		return p.validateRange()
	}
	if err := p.unused(p.A != 0 || p.B != 0, "a and b"); err != nil {
		return err
	}
	if !finite(p.Mu) {
		return fmt.Errorf("mu %v is not finite", p.Mu)
	}
	if !finite(p.Sigma) || !(p.Sigma > 0) {
		return fmt.Errorf("sigma %v is not a finite number above 0", p.Sigma)
	}
	return p.validateRange()
}

// validateRange checks that a custom p's values are finite: a normal far from 0 may
// overflow, and so may x/Q for a tiny Q.
func (p Param) validateRange() error {
	if !p.custom() {
		return nil
	}
	if lo, hi := p.Range(); !finite(lo) || !finite(hi) {
		return fmt.Errorf("%s reaches [%v, %v]: not finite", p, lo, hi)
	}
	return nil
}

// quantize is x rounded to a multiple of Q (x itself when Q is 0).
func (p Param) quantize(x float64) float64 {
	if p.Q == 0 {
		return x
	}
	return math.RoundToEven(x/p.Q) * p.Q
}

// ppf is p's quantile function, unquantized, at u in (0, 1).
func (p Param) ppf(u float64) float64 {
	switch p.Kind {
	case Uniform:
		return p.Min + float64(u*(p.Max-p.Min))
	case LogUniform:
		lo := math.Log(p.Min)
		return math.Exp(lo + float64(u*(math.Log(p.Max)-lo)))
	case Normal:
		return p.Mu + float64(p.Sigma*normalPPF(u))
	case LogNormal:
		return math.Exp(p.Mu + float64(p.Sigma*normalPPF(u)))
	case Beta:
		return mathext.InvRegIncBeta(p.A, p.B, u)
	}
	panic("search: no quantile function for kind " + p.Kind)
}

// normalPPF is the standard normal's quantile function: −√2 erfc⁻¹(2u), accurate in the
// lower tail, where 2u − 1 would cancel.
func normalPPF(u float64) float64 { return -math.Sqrt2 * math.Erfcinv(2*u) }

// draw is one value of custom p from rng.
func (p Param) draw(rng *rand.Rand) float64 {
	u := rng.Float64()
	for u == 0 {
		u = rng.Float64()
	}
	return p.quantize(p.ppf(u))
}

// Range is the least and greatest value p can take: [Min, Max] for the bounded kinds
// unquantized; otherwise the (quantized) quantiles of the least and greatest uniform
// draw. Every quantile function here is nondecreasing, and so is rounding.
func (p Param) Range() (lo, hi float64) {
	switch {
	case p.Kind == Choice:
		return minMax(p.Choices)
	case !p.custom():
		return p.Min, p.Max
	}
	return p.quantize(p.ppf(uMin)), p.quantize(p.ppf(uMax))
}

func minMax(xs []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

// contains checks that custom p can take v: within Range, and on the lattice of Q.
func (p Param) contains(v float64) error {
	lo, hi := p.Range()
	if !(lo <= v && v <= hi) {
		return fmt.Errorf("%s = %v is outside [%v, %v], the values of %s", p.Name, v, lo, hi, p.String())
	}
	if p.quantize(v) != v {
		return fmt.Errorf("%s = %v is not a multiple of q = %v", p.Name, v, p.Q)
	}
	return nil
}

// String is p's distribution as a manifest's plan and errors write it:
// normal(mu 0, sigma 1) quantized by 2, log_uniform[8, 512].
func (p Param) String() string {
	var s string
	switch p.Kind {
	case Normal, LogNormal:
		s = fmt.Sprintf("%s(mu %v, sigma %v)", p.Kind, p.Mu, p.Sigma)
	case Beta:
		s = fmt.Sprintf("beta(a %v, b %v)", p.A, p.B)
	default:
		s = fmt.Sprintf("%s[%v, %v]", p.Kind, p.Min, p.Max)
	}
	if p.Q != 0 {
		s += fmt.Sprintf(" quantized by %v", p.Q)
	}
	return s
}
