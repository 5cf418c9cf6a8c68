package analysis

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// randSym returns a random symmetric n×n matrix: Wigner-like when spd is false, and
// AᵀA/n + 0.1 I (positive definite) when it is true. spike adds a rank-one term s·vvᵀ.
func randSym(rng *rand.Rand, n int, spd bool, spike float64) *mat.SymDense {
	a := mat.NewDense(n, n, nil)
	for i := range n {
		for j := range n {
			a.Set(i, j, rng.NormFloat64())
		}
	}
	s := mat.NewSymDense(n, nil)
	if spd {
		var ata mat.Dense
		ata.Mul(a.T(), a)
		for i := range n {
			for j := i; j < n; j++ {
				s.SetSym(i, j, ata.At(i, j)/float64(n))
			}
			s.SetSym(i, i, s.At(i, i)+0.1)
		}
	} else {
		for i := range n {
			for j := i; j < n; j++ {
				s.SetSym(i, j, (a.At(i, j)+a.At(j, i))/2)
			}
		}
	}
	if spike != 0 {
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		scale(v, 1/norm(v))
		for i := range n {
			for j := i; j < n; j++ {
				s.SetSym(i, j, s.At(i, j)+spike*v[i]*v[j])
			}
		}
	}
	return s
}

func symHVP(h *mat.SymDense) HVP {
	return func(v, out []float64) {
		var r mat.VecDense
		r.MulVec(h, mat.NewVecDense(len(v), v))
		copy(out, r.RawVector().Data)
	}
}

// refSharpness returns λ₁(P⁻¹H) from gonum's dense eigensolvers, both through the
// symmetric form P^{-1/2}HP^{-1/2} (EigenSym) and the non-symmetric P⁻¹H (Eigen).
func refSharpness(t *testing.T, h *mat.SymDense, p []float64) (sym, nonsym float64) {
	n := h.SymmetricDim()
	ms := mat.NewSymDense(n, nil)
	mn := mat.NewDense(n, n, nil)
	for i := range n {
		for j := range n {
			pi, pj := 1.0, 1.0
			if p != nil {
				pi, pj = p[i], p[j]
			}
			if j >= i {
				ms.SetSym(i, j, h.At(i, j)/math.Sqrt(pi*pj))
			}
			mn.Set(i, j, h.At(i, j)/pi)
		}
	}
	var es mat.EigenSym
	if !es.Factorize(ms, false) {
		t.Fatal("EigenSym failed")
	}
	vals := es.Values(nil)
	sym = vals[len(vals)-1]
	var e mat.Eigen
	if !e.Factorize(mn, mat.EigenNone) {
		t.Fatal("Eigen failed")
	}
	nonsym = math.Inf(-1)
	for _, c := range e.Values(nil) {
		nonsym = math.Max(nonsym, real(c))
	}
	return sym, nonsym
}

// TestLanczos compares Lanczos with gonum's dense eigensolvers. With k = n the Krylov space
// is the whole space and the result must be exact to rounding (measured ≤ 1e-13 relative);
// with k < n it must converge for a matrix whose top eigenvalue is separated (a spike).
func TestLanczos(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	tests := []struct {
		name    string
		n, k    int
		spd     bool
		spike   float64
		precond bool
		tol     float64
	}{
		{"spd full", 40, 40, true, 0, false, 1e-11},
		{"spd full precond", 40, 40, true, 0, true, 1e-11},
		{"indefinite full", 60, 60, false, 0, false, 1e-11},
		{"indefinite full precond", 60, 60, false, 0, true, 1e-11},
		{"indefinite spike k=25", 200, 25, false, 40, true, 1e-10},
		{"spd spike k=20", 150, 20, true, 30, true, 1e-10},
		{"negative definite", 30, 30, false, -100, false, 1e-11},
		{"n=1", 1, 5, true, 0, true, 1e-14},
		{"n=2", 2, 2, false, 0, true, 1e-13},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := randSym(rng, tt.n, tt.spd, tt.spike)
			if tt.name == "negative definite" {
				h.ScaleSym(-1, randSym(rng, tt.n, true, 0))
			}
			var p []float64
			if tt.precond {
				p = make([]float64, tt.n)
				for i := range p {
					p[i] = math.Exp(rng.NormFloat64()) // spans about two orders of magnitude
				}
			}
			got, err := Lanczos(symHVP(h), tt.n, tt.k, p)
			if err != nil {
				t.Fatal(err)
			}
			sym, nonsym := refSharpness(t, h, p)
			if math.Abs(sym-nonsym) > 1e-9*math.Abs(sym) {
				t.Fatalf("references disagree: EigenSym %v, Eigen %v", sym, nonsym)
			}
			rel := math.Abs(got-sym) / math.Abs(sym)
			t.Logf("relative error %.2g", rel)
			if rel > tt.tol {
				t.Errorf("Lanczos = %.15g, EigenSym = %.15g (relative error %.2g > %.0g)", got, sym, rel, tt.tol)
			}
		})
	}
}

func TestPowerIteration(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	h := randSym(rng, 80, true, 25)
	p := make([]float64, 80)
	for i := range p {
		p[i] = 0.5 + rng.Float64()
	}
	sym, _ := refSharpness(t, h, p)
	got, err := PowerIteration(symHVP(h), 80, 2000, 1e-14, p)
	if err != nil {
		t.Fatal(err)
	}
	if rel := math.Abs(got-sym) / sym; rel > 1e-10 {
		t.Errorf("PowerIteration = %.15g, EigenSym = %.15g (relative error %.2g)", got, sym, rel)
	}
	// Without a spectral gap and with too few iterations it must say so.
	h2 := randSym(rng, 80, true, 0)
	if _, err := PowerIteration(symHVP(h2), 80, 3, 1e-15, nil); !errors.Is(err, ErrNotConverged) {
		t.Errorf("3 iterations: error %v, want ErrNotConverged", err)
	}
}

func TestSharpnessInvalid(t *testing.T) {
	h := symHVP(mat.NewSymDense(2, []float64{1, 0, 0, 1}))
	tests := []struct {
		name string
		n, k int
		p    []float64
	}{
		{"k zero", 2, 0, nil},
		{"n zero", 0, 1, nil},
		{"precond length", 2, 2, []float64{1}},
		{"precond zero", 2, 2, []float64{1, 0}},
		{"precond NaN", 2, 2, []float64{1, math.NaN()}},
	}
	for _, tt := range tests {
		if _, err := Lanczos(h, tt.n, tt.k, tt.p); err == nil {
			t.Errorf("%s: Lanczos accepted it", tt.name)
		}
	}
	if _, err := PowerIteration(h, 2, 10, 1e-9, []float64{-1, 1}); err == nil {
		t.Error("PowerIteration accepted a negative preconditioner")
	}
}
