package search

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/c-bata/goptuna"
)

// Kind of a parameter's distribution.
const (
	LogUniform = "log_uniform" // continuous in [Min, Max], uniform in log
	Uniform    = "uniform"     // continuous in [Min, Max]
	IntUniform = "int_uniform" // whole numbers in [Min, Max]
	Choice     = "choice"      // one of Choices
	Normal     = "normal"      // Gaussian of mean Mu and standard deviation Sigma
	LogNormal  = "log_normal"  // positive, its logarithm Normal(Mu, Sigma)
	Beta       = "beta"        // in [0, 1], Beta(A, B)
)

// Param is one searched parameter. Q > 0 quantizes a continuous kind (uniform,
// log_uniform, normal, log_normal, beta) as W&B does: a draw x becomes round(x/Q)·Q,
// rounded half to even (space_dist.go).
type Param struct {
	Name    string    `json:"name"`
	Kind    string    `json:"kind"`
	Min     float64   `json:"min,omitempty"`
	Max     float64   `json:"max,omitempty"`
	Mu      float64   `json:"mu,omitempty"`
	Sigma   float64   `json:"sigma,omitempty"`
	A       float64   `json:"a,omitempty"`
	B       float64   `json:"b,omitempty"`
	Q       float64   `json:"q,omitempty"`
	Choices []float64 `json:"choices,omitempty"`
}

// Space is the parameters of one optimizer's search, in a fixed order: the order in which
// a sampler draws them, so part of what a seed reproduces.
type Space []Param

// Point is a configuration: a value for each parameter of a Space, by name.
type Point map[string]float64

// Validate checks that the space can be searched: at least one parameter; names non-empty
// and unique; a known kind; finite bounds with Min < Max (Min > 0 for log_uniform, whole
// numbers for int_uniform); a finite Mu and Sigma > 0 for normal and log_normal; finite A,
// B > 0 for beta; a finite Q ≥ 0, for the continuous kinds only; for choice, at least one
// finite choice, none twice; and no field that the kind does not use.
func (s Space) Validate() error {
	if len(s) == 0 {
		return fmt.Errorf("search space has no parameters")
	}
	seen := make(map[string]bool, len(s))
	for i, p := range s {
		if p.Name == "" {
			return fmt.Errorf("search space: parameter %d has no name", i)
		}
		if seen[p.Name] {
			return fmt.Errorf("search space: parameter %q appears twice", p.Name)
		}
		seen[p.Name] = true
		if err := p.validate(); err != nil {
			return fmt.Errorf("search space: parameter %q: %w", p.Name, err)
		}
	}
	return nil
}

// Check checks p as Validate checks each parameter, its name aside: the error is the
// reason alone.
func (p Param) Check() error { return p.validate() }

func (p Param) validate() error {
	switch p.Kind {
	case LogUniform, Uniform, IntUniform:
	case Choice:
		return p.validateChoices()
	case Normal, LogNormal, Beta:
		return p.validateShape()
	default:
		return fmt.Errorf("kind %q is none of %s, %s, %s, %s, %s, %s, %s", p.Kind, LogUniform, Uniform, IntUniform, Choice, Normal, LogNormal, Beta)
	}
	if err := p.unused(p.Mu != 0 || p.Sigma != 0, "mu and sigma"); err != nil {
		return err
	}
	if err := p.unused(p.A != 0 || p.B != 0, "a and b"); err != nil {
		return err
	}
	if err := p.validateQ(); err != nil {
		return err
	}
	if len(p.Choices) > 0 {
		return fmt.Errorf("choices %v are for kind %s, not %s", p.Choices, Choice, p.Kind)
	}
	for _, b := range [...]struct {
		name string
		v    float64
	}{{"min", p.Min}, {"max", p.Max}} {
		if !finite(b.v) {
			return fmt.Errorf("%s %v is not finite", b.name, b.v)
		}
		if p.Kind == IntUniform && (b.v != math.Trunc(b.v) || math.Abs(b.v) > 1<<53) {
			return fmt.Errorf("%s %v is not a whole number (kind %s)", b.name, b.v, IntUniform)
		}
	}
	if !(p.Min < p.Max) {
		return fmt.Errorf("min %v is not below max %v", p.Min, p.Max)
	}
	if p.Kind == LogUniform && !(p.Min > 0) {
		return fmt.Errorf("min %v is not above 0 (kind %s samples its logarithm)", p.Min, LogUniform)
	}
	return p.validateRange()
}

func (p Param) validateChoices() error {
	if p.Min != 0 || p.Max != 0 {
		return fmt.Errorf("min %v and max %v are not used by kind %s: list the choices", p.Min, p.Max, Choice)
	}
	for _, u := range []struct {
		set    bool
		fields string
	}{{p.Mu != 0 || p.Sigma != 0, "mu and sigma"}, {p.A != 0 || p.B != 0, "a and b"}, {p.Q != 0, "q"}} {
		if err := p.unused(u.set, u.fields); err != nil {
			return err
		}
	}
	if len(p.Choices) == 0 {
		return fmt.Errorf("kind %s has no choices", Choice)
	}
	for i, v := range p.Choices {
		if !finite(v) {
			return fmt.Errorf("choice %v is not finite", v)
		}
		if slices.Contains(p.Choices[:i], v) {
			return fmt.Errorf("choice %v appears twice", v)
		}
	}
	return nil
}

// distribution is p's goptuna distribution (p valid).
func (p Param) distribution() any {
	if p.custom() {
		lo, hi := p.Range()
		return goptuna.UniformDistribution{Low: lo, High: hi}
	}
	switch p.Kind {
	case LogUniform:
		return goptuna.LogUniformDistribution{Low: p.Min, High: p.Max}
	case Uniform:
		return goptuna.UniformDistribution{Low: p.Min, High: p.Max}
	case IntUniform:
		return goptuna.IntUniformDistribution{Low: int(p.Min), High: int(p.Max)}
	default:
		return goptuna.CategoricalDistribution{Choices: p.labels()}
	}
}

// labels are the choices as goptuna's categories: the shortest decimal that parses back
// to the same float64.
func (p Param) labels() []string {
	ls := make([]string, len(p.Choices))
	for i, v := range p.Choices {
		ls[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return ls
}

// internal is v in goptuna's internal representation of p's distribution: the value
// itself, or the index of a choice. It fails if v is outside the distribution.
func (p Param) internal(v float64) (float64, error) {
	if p.custom() {
		return v, p.contains(v)
	}
	switch p.Kind {
	case Choice:
		if i := slices.Index(p.Choices, v); i >= 0 {
			return float64(i), nil
		}
		return 0, fmt.Errorf("%s = %v is none of the choices %v", p.Name, v, p.Choices)
	case IntUniform:
		if v != math.Trunc(v) {
			return 0, fmt.Errorf("%s = %v is not a whole number", p.Name, v)
		}
	}
	if !(p.Min <= v && v <= p.Max) {
		return 0, fmt.Errorf("%s = %v is outside [%v, %v]", p.Name, v, p.Min, p.Max)
	}
	return v, nil
}

func finite(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }
