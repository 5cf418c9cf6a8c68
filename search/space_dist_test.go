package search

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mathext"
	"gonum.org/v1/gonum/stat/distuv"
)

// custom is a search over one parameter of each custom kind: W&B's q_uniform, normal,
// q_normal, log_normal, q_log_normal, beta, q_beta and q_log_uniform_values (with an
// integer q: batch sizes).
var custom = Space{
	{Name: "layers", Kind: Uniform, Min: 0.4, Max: 10, Q: 1},
	{Name: "normal", Kind: Normal, Mu: 1, Sigma: 2},
	{Name: "q_normal", Kind: Normal, Mu: 0, Sigma: 3, Q: 2},
	{Name: "log_normal", Kind: LogNormal, Mu: -1, Sigma: 0.5},
	{Name: "q_log_normal", Kind: LogNormal, Mu: 2, Sigma: 1, Q: 4},
	{Name: "beta", Kind: Beta, A: 2, B: 5},
	{Name: "q_beta", Kind: Beta, A: 0.5, B: 0.5, Q: 0.1},
	{Name: "batch_size", Kind: LogUniform, Min: 8, Max: 512, Q: 8},
}

// cdf is the reference distribution function of p, unquantized: W&B's (scipy's) norm,
// lognorm, beta, uniform and log-uniform.
func cdf(p Param, x float64) float64 {
	switch p.Kind {
	case Uniform:
		return min(max((x-p.Min)/(p.Max-p.Min), 0), 1)
	case LogUniform:
		if x <= 0 {
			return 0
		}
		return min(max(math.Log(x/p.Min)/math.Log(p.Max/p.Min), 0), 1)
	case Normal:
		return distuv.Normal{Mu: p.Mu, Sigma: p.Sigma}.CDF(x)
	case LogNormal:
		if x <= 0 {
			return 0
		}
		return distuv.LogNormal{Mu: p.Mu, Sigma: p.Sigma}.CDF(x)
	case Beta:
		return mathext.RegIncBeta(p.A, p.B, min(max(x, 0), 1))
	}
	panic(p.Kind)
}

// ksFrom is the Kolmogorov–Smirnov distance of xs from the distribution function F.
func ksFrom(xs []float64, F func(float64) float64) float64 {
	us := make([]float64, len(xs))
	for i, x := range xs {
		us[i] = F(x)
	}
	return ks(us)
}

// chiSquare tests the quantized sample xs of p against the lattice probabilities
// P(kQ) = F((k + ½)Q) − F((k − ½)Q): lattice points expected fewer than 5 times are
// pooled with their neighbours (in order), and it returns the statistic and the critical
// value of the 1% level for its degrees of freedom.
func chiSquare(p Param, xs []float64) (stat, crit float64, df int) {
	counts := map[float64]int{}
	for _, x := range xs {
		counts[x]++
	}
	lo, hi := p.Range()
	n := float64(len(xs))
	var obs, exp []float64
	var o, e float64
	for k := math.Round(lo / p.Q); k <= math.Round(hi/p.Q); k++ {
		v := p.quantize(k * p.Q)
		o += float64(counts[v])
		e += n * (cdf(p, (k+0.5)*p.Q) - cdf(p, (k-0.5)*p.Q))
		if e >= 5 {
			obs, exp = append(obs, o), append(exp, e)
			o, e = 0, 0
		}
	}
	if len(exp) > 0 { // the tail joins the last cell
		obs[len(obs)-1] += o
		exp[len(exp)-1] += e
	}
	for i := range obs {
		stat += (obs[i] - exp[i]) * (obs[i] - exp[i]) / exp[i]
	}
	df = len(obs) - 1
	return stat, distuv.ChiSquared{K: float64(df)}.Quantile(0.99), df
}

// drawCustom is n points of custom at random (indices 0 to n−1, no history), each value
// by parameter.
func drawCustom(t *testing.T, n int, seed int64) map[string][]float64 {
	t.Helper()
	s := newSampler(t, MethodRandom, custom, seed)
	xs := map[string][]float64{}
	for i := range n {
		pt, err := s.Suggest(i, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range custom {
			xs[p.Name] = append(xs[p.Name], pt[p.Name])
		}
	}
	return xs
}

// TestCustomDistributions draws 4000 points at random. Every value lies in its Range and,
// quantized, on its lattice (round(v/q)·q = v; whole numbers for a whole q). Unquantized,
// each kind passes a Kolmogorov–Smirnov test against its reference distribution at the 1%
// level (D < 1.63/√n), which the same sample fails against the reference shifted by a
// fifth of its spread; quantized, a chi-square test of the lattice frequencies against
// the reference's bin masses at the 1% level.
func TestCustomDistributions(t *testing.T) {
	const n = 4000
	xs := drawCustom(t, n, 11)
	crit := 1.63 / math.Sqrt(n)
	for _, p := range custom {
		lo, hi := p.Range()
		for _, v := range xs[p.Name] {
			if v < lo || v > hi {
				t.Fatalf("%s = %v outside its range [%v, %v]", p.Name, v, lo, hi)
			}
			if p.Q > 0 && (p.quantize(v) != v || (p.Q == math.Trunc(p.Q) && v != math.Trunc(v))) {
				t.Fatalf("%s = %v is off the lattice of q = %v", p.Name, v, p.Q)
			}
		}
		if p.Q > 0 {
			stat, c, df := chiSquare(p, xs[p.Name])
			if df < 2 || stat >= c {
				t.Errorf("%s: chi-square %.2f ≥ %.2f (%d degrees of freedom, 1%% level)", p.Name, stat, c, df)
			}
			continue
		}
		if d := ksFrom(xs[p.Name], func(x float64) float64 { return cdf(p, x) }); d >= crit {
			t.Errorf("%s: KS distance %.4f ≥ %.4f", p.Name, d, crit)
		}
		shifted := p
		switch p.Kind {
		case Normal, LogNormal:
			shifted.Mu += p.Sigma / 5
		case Beta:
			shifted.A *= 1.2
		}
		if d := ksFrom(xs[p.Name], func(x float64) float64 { return cdf(shifted, x) }); d < crit {
			t.Errorf("%s against %s: KS distance %.4f < %.4f: the test cannot tell them apart", p.Name, shifted.String(), d, crit)
		}
	}
}

// TestChiSquareDetects: the chi-square test refuses a quantized sample drawn from another
// distribution (q_normal's sample against a σ 20% wider), so its passing means something.
func TestChiSquareDetects(t *testing.T) {
	xs := drawCustom(t, 4000, 11)
	p := custom[2]
	p.Sigma *= 1.2
	if stat, c, _ := chiSquare(p, xs["q_normal"]); stat < c {
		t.Errorf("q_normal against %s: chi-square %.2f < %.2f", p.String(), stat, c)
	}
}

// TestRange: the values a draw can take. Quantized uniform rounds as W&B's does, so
// [0.4, 10] by 1 reaches 0; a normal reaches ±Zmax σ, with Zmax
// the normal quantile of 2⁻⁵³; a log-uniform batch by 8 stays in [8, 512].
func TestRange(t *testing.T) {
	zmax := -normalPPF(uMin)
	if math.Abs(zmax-8.2095) > 1e-3 {
		t.Errorf("Zmax = %v, want 8.2095 (the normal quantile of 2⁻⁵³)", zmax)
	}
	for _, c := range []struct {
		p      Param
		lo, hi float64
	}{
		{custom[0], 0, 10},
		{custom[1], 1 - 2*zmax, 1 + 2*zmax},
		{custom[7], 8, 512},
		{Param{Kind: LogNormal, Mu: 0, Sigma: 1, Q: 1}, 0, math.RoundToEven(math.Exp(zmax))},
		{Param{Kind: Uniform, Min: 0, Max: 1}, 0, 1},
		{Param{Kind: Choice, Choices: []float64{3, 1, 2}}, 1, 3},
	} {
		lo, hi := c.p.Range()
		if math.Abs(lo-c.lo) > 1e-9*max(1, math.Abs(c.lo)) || math.Abs(hi-c.hi) > 1e-9*max(1, math.Abs(c.hi)) {
			t.Errorf("%s: range [%v, %v], want [%v, %v]", c.p.String(), lo, hi, c.lo, c.hi)
		}
	}
	// W&B's own example: round(2.5) is 2, round(3.5) is 4
	p := Param{Kind: Uniform, Min: 0, Max: 10, Q: 1}
	if got := []float64{p.quantize(2.5), p.quantize(3.5), p.quantize(-0.5)}; !slices.Equal(got, []float64{2, 4, 0}) {
		t.Errorf("quantized 2.5, 3.5, −0.5: %v, want [2 4 0]", got)
	}
}

// TestCustomReproducible: the same (seed, index, history) gives the same custom point,
// random and TPE; and adding custom parameters to a space leaves the others' draws as
// they were (they come from their own stream).
func TestCustomReproducible(t *testing.T) {
	for _, method := range []string{MethodRandom, MethodTPE} {
		s := newSampler(t, method, custom, 42)
		h := customHistory(t, s, 30)
		want, err := s.Suggest(30, h)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := newSampler(t, method, custom, 42).Suggest(30, h); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: Suggest(30) = %v, then %v", method, want, got)
		}
	}
	both := append(slices.Clone(space), custom...)
	for i := range 20 {
		a, _ := newSampler(t, MethodRandom, space, 3).Suggest(i, nil)
		b, _ := newSampler(t, MethodRandom, both, 3).Suggest(i, nil)
		for _, p := range space {
			if a[p.Name] != b[p.Name] {
				t.Fatalf("index %d: %s = %v alone, %v beside custom parameters", i, p.Name, a[p.Name], b[p.Name])
			}
		}
	}
}

// customHistory is history over custom, valued by the distance of each value from the
// middle of its range.
func customHistory(t testing.TB, s Sampler, n int) []Observation {
	t.Helper()
	return historyOf(t, s, n, func(p Point) float64 {
		var v float64
		for _, prm := range custom {
			lo, hi := prm.Range()
			v += math.Abs(p[prm.Name]-(lo+hi)/2) / (hi - lo)
		}
		return v
	})
}

// TestTPECustomConcentrates minimizes the distance of a parameter from a target with 40
// suggestions in turn, each told the ones before, for seeds 0 to 9: a normal prior
// (target 1.5σ from its mean: the unbounded model), a quantized log-uniform batch (target
// 61 of [8, 512] by 8: bin masses) and a beta (target 0.45 of Beta(2, 5): modelled
// through its distribution function). TPE's model-based suggestions (the last 30) must
// lie closer to the target on average than random search's for at least 7 seeds.
// Measured over seeds 0 to 29: TPE is closer on 30, 30 and 30.
func TestTPECustomConcentrates(t *testing.T) {
	const seeds = 10
	for _, c := range []struct {
		p      Param
		target float64
	}{
		{Param{Name: "x", Kind: Normal, Mu: 0, Sigma: 2}, 3},
		{Param{Name: "x", Kind: LogUniform, Min: 8, Max: 512, Q: 8}, 61},
		{Param{Name: "x", Kind: Beta, A: 2, B: 5}, 0.45},
	} {
		wins := 0
		for seed := range seeds {
			var mean [2]float64
			for m, method := range []string{MethodTPE, MethodRandom} {
				s := newSampler(t, method, Space{c.p}, int64(seed))
				var h []Observation
				for i := range 40 {
					pt, err := s.Suggest(i, h)
					if err != nil {
						t.Fatal(err)
					}
					d := math.Abs(pt["x"] - c.target)
					if i >= DefaultStartupTrials {
						mean[m] += d / 30
					}
					h = append(h, Observation{Point: pt, Outcome: Complete, Value: d})
				}
			}
			if mean[0] < mean[1] {
				wins++
			}
		}
		if wins < 7 {
			t.Errorf("%s: TPE closer than random search on %d of 10 seeds, want ≥ 7", c.p.String(), wins)
		}
	}
}

// TestSuggestCustomErrors: an observation off a custom parameter's lattice or range is an
// error that says so.
func TestSuggestCustomErrors(t *testing.T) {
	s := newSampler(t, MethodTPE, custom, 1)
	good := drawPoint(t, s)
	for _, c := range []struct {
		name string
		v    float64
		want string
	}{
		{"layers", 2.5, "not a multiple of q = 1"},
		{"layers", 12, "outside [0, 10]"},
		{"normal", 100, "normal(mu 1, sigma 2)"},
		{"batch_size", 4, "quantized by 8"},
	} {
		p := Point{}
		for k, v := range good {
			p[k] = v
		}
		p[c.name] = c.v
		h := []Observation{{Point: p, Outcome: Complete, Value: 1}}
		if _, err := s.Suggest(1, h); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s = %v: error %v, want one saying %s", c.name, c.v, err, c.want)
		}
	}
}

func drawPoint(t *testing.T, s Sampler) Point {
	t.Helper()
	p, err := s.Suggest(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
