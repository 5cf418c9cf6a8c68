package search

import (
	"math"

	"gonum.org/v1/gonum/mathext"
)

// model is the space in which TPE fits its Parzen estimators to a custom parameter, and
// the prior component there. Each kind is modelled where its prior is simplest:
//
//   - uniform and log_uniform (quantized) as unquantized: on [Min, Max], or its logarithm,
//     the prior uniform (Optuna's);
//   - normal on its range, the prior N(Mu, Sigma) itself, and log_normal likewise in log
//     space: hyperopt's treatment of its normal and lognormal priors (Bergstra et al.
//     2011), which keeps the widths in the parameter's units. The range is Range, ±8.3
//     standard deviations, so a suggestion is always a value a draw could give;
//   - beta through its distribution function F: u = F(x) is uniform on [0, 1] under the
//     prior, which no Gaussian fits, so there it is modelled as a uniform parameter.
//
// A quantized value v is modelled at v, and scored by the mass of its bin [v − Q/2,
// v + Q/2] (every draw that rounds to it) in the model's space, as whole numbers are;
// a candidate is drawn unquantized, then rounded.
type model struct {
	p         Param
	low, high float64 // the model space's range
	mu, sigma float64 // the prior
}

func newModel(p Param) model {
	m := model{p: p}
	switch p.Kind {
	case Uniform, LogUniform:
		m.low, m.high = m.to(p.Min), m.to(p.Max)
		m.mu, m.sigma = 0.5*(m.low+m.high), m.high-m.low
	case Normal, LogNormal:
		m.low, m.high = m.to(p.ppf(uMin)), m.to(p.ppf(uMax))
		m.mu, m.sigma = p.Mu, p.Sigma
	case Beta:
		m.low, m.high, m.mu, m.sigma = 0, 1, 0.5, 1
	}
	return m
}

// to maps a value to the model's space; a value outside the kind's support maps to the
// space's end (a log of 0 is −∞).
func (m model) to(x float64) float64 {
	switch {
	case m.p.logScale():
		return math.Log(max(x, 0))
	case m.p.Kind == Beta:
		return mathext.RegIncBeta(m.p.A, m.p.B, min(max(x, 0), 1))
	}
	return x
}

// from maps a point of the model's space back to a value, unquantized.
func (m model) from(y float64) float64 {
	switch {
	case m.p.logScale():
		return math.Exp(y)
	case m.p.Kind == Beta:
		return mathext.InvRegIncBeta(m.p.A, m.p.B, min(max(y, 0), 1))
	}
	return y
}

// point is observation v in the model's space, within its range. A quantized log-scale
// value of 0 (every draw below Q/2) sits at its bin's upper end, Q/2.
func (m model) point(v float64) float64 {
	if m.p.logScale() && v <= 0 {
		v = m.p.Q / 2
	}
	return min(max(m.to(v), m.low), m.high)
}

// bin is the model-space interval of the draws that round to v.
func (m model) bin(v float64) (lo, hi float64) {
	return m.to(v - m.p.Q/2), m.to(v + m.p.Q/2)
}

// value is the candidate y as a value of the parameter: rounded, kept within Range (a
// round trip through the model's space may leave it by an ulp).
func (m model) value(y float64) float64 {
	lo, hi := m.p.Range()
	return min(max(m.p.quantize(m.from(y)), lo), hi)
}
