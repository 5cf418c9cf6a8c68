package analysis

import (
	"math"
	"testing"
)

// toyPoints are test points on and off the river, including both branches of the hyperbola,
// the region of large w⁽¹⁾ the runs travel to and the saddle region near the origin.
var toyPoints = []Vec2{
	{2, 2}, {1, 1}, {0.5, 1.5}, {3.5, 0.2}, {8, 0.13}, {-1, 0.7}, {-2, -0.4},
	{0.1, -3}, {5, 0.3}, {1.3, 0.9}, {20, 0.04}, {-15, 2},
}

// centralDiff returns the central finite difference of f at w along coordinate k.
func centralDiff(f func(Vec2) float64, w Vec2, k int, h float64) float64 {
	wp, wm := w, w
	wp[k] += h
	wm[k] -= h
	return (f(wp) - f(wm)) / (2 * h)
}

func TestToyLossStable(t *testing.T) {
	tests := []struct {
		w    Vec2
		want float64
	}{
		{Vec2{1, 1}, math.Log1p(math.Exp(-1))},
		{Vec2{0, 5}, 0.5 + math.Ln2},
		{Vec2{2, 2}, 4.5 + math.Log1p(math.Exp(-2))},
		// exp(800) overflows: the stable softplus must still give the asymptote −w⁽¹⁾.
		{Vec2{-800, 0}, 0.5 + 800},
		{Vec2{800, 1.0 / 800}, 0},
	}
	for _, tt := range tests {
		got := ToyLoss(tt.w)
		if math.IsNaN(got) || math.IsInf(got, 0) || math.Abs(got-tt.want) > 1e-12*math.Max(1, math.Abs(tt.want)) {
			t.Errorf("ToyLoss(%v) = %v, want %v", tt.w, got, tt.want)
		}
	}
}

func TestToyDerivativesFiniteDifference(t *testing.T) {
	const h = 1e-5
	for _, w := range toyPoints {
		g := ToyGrad(w)
		hess := ToyHessian(w)
		third := ToyThird(w)
		scale := 1 + math.Abs(w[0]) + math.Abs(w[1])
		for k := range 2 {
			if fd := centralDiff(ToyLoss, w, k, h); math.Abs(fd-g[k]) > 1e-7*scale*scale {
				t.Errorf("∂%d f(%v) = %v, finite difference %v", k, w, g[k], fd)
			}
			for i := range 2 {
				gi := func(v Vec2) float64 { return ToyGrad(v)[i] }
				if fd := centralDiff(gi, w, k, h); math.Abs(fd-hess[i][k]) > 1e-7*scale*scale {
					t.Errorf("H[%d][%d](%v) = %v, finite difference %v", i, k, w, hess[i][k], fd)
				}
				for j := range 2 {
					hij := func(v Vec2) float64 { return ToyHessian(v)[i][j] }
					if fd := centralDiff(hij, w, k, h); math.Abs(fd-third[k][i][j]) > 1e-7*scale {
						t.Errorf("∂%d H[%d][%d](%v) = %v, finite difference %v", k, i, j, w, third[k][i][j], fd)
					}
				}
			}
		}
	}
}

func TestToySharpness(t *testing.T) {
	for _, w := range toyPoints {
		s, u := ToySharpness(w)
		h := ToyHessian(w)
		// Eigen-equation residual and the closed form of the 2×2 eigenvalue.
		for i := range 2 {
			if r := h[i][0]*u[0] + h[i][1]*u[1] - s*u[i]; math.Abs(r) > 1e-12*(1+math.Abs(s)) {
				t.Errorf("at %v: (Hu − Su)[%d] = %v", w, i, r)
			}
		}
		tr, det := h[0][0]+h[1][1], h[0][0]*h[1][1]-h[0][1]*h[1][0]
		if want := tr/2 + math.Sqrt(tr*tr/4-det); math.Abs(s-want) > 1e-9*(1+math.Abs(want)) {
			t.Errorf("S(%v) = %v, want %v", w, s, want)
		}
		if n := math.Hypot(u[0], u[1]); math.Abs(n-1) > 1e-14 {
			t.Errorf("|u(%v)| = %v", w, n)
		}
	}
}

func TestToySharpnessGradFiniteDifference(t *testing.T) {
	const h = 1e-6
	sharp := func(v Vec2) float64 { s, _ := ToySharpness(v); return s }
	for _, w := range toyPoints {
		g := ToySharpnessGrad(w)
		for k := range 2 {
			fd := centralDiff(sharp, w, k, h)
			if math.Abs(fd-g[k]) > 1e-6*(1+math.Abs(fd)) {
				t.Errorf("∂%d S(%v) = %v, finite difference %v", k, w, g[k], fd)
			}
		}
	}
}

// bruteRiverDistance minimises the distance to (s, 1/s) over a fine logarithmic grid of s on
// both branches, then refines with golden-section search around the best grid point.
func bruteRiverDistance(w Vec2) float64 {
	d := func(s float64) float64 { return math.Hypot(s-w[0], 1/s-w[1]) }
	best := math.Inf(1)
	for _, sgn := range []float64{-1, 1} {
		bestU := 0.0
		bu := math.Inf(1)
		const step = 1e-3
		for u := -12.0; u <= 12; u += step {
			if v := d(sgn * math.Exp(u)); v < bu {
				bu, bestU = v, u
			}
		}
		lo, hi := bestU-step, bestU+step
		g := (math.Sqrt(5) - 1) / 2
		for range 100 {
			m1, m2 := hi-g*(hi-lo), lo+g*(hi-lo)
			if d(sgn*math.Exp(m1)) < d(sgn*math.Exp(m2)) {
				hi = m2
			} else {
				lo = m1
			}
		}
		best = math.Min(best, math.Min(bu, d(sgn*math.Exp((lo+hi)/2))))
	}
	return best
}

func TestRiverDistance(t *testing.T) {
	pts := append([]Vec2{{1, 1}, {0, 0}, {-1, -1}, {3, 3}, {-3, 3}, {0.01, 50}, {1e-3, 0}}, toyPoints...)
	for _, w := range pts {
		got := RiverDistance(w)
		want := bruteRiverDistance(w)
		if math.Abs(got-want) > 1e-9*(1+want) {
			t.Errorf("RiverDistance(%v) = %.15g, brute force %.15g", w, got, want)
		}
		p, d := RiverPoint(w)
		if math.Abs(p[0]*p[1]-1) > 1e-12 || math.Abs(math.Hypot(p[0]-w[0], p[1]-w[1])-d) > 1e-12 {
			t.Errorf("RiverPoint(%v) = %v, %v: not on the river or inconsistent distance", w, p, d)
		}
	}
	// Points on the river have distance zero.
	for _, s := range []float64{0.2, 1, 4, -0.5, -7} {
		if d := RiverDistance(Vec2{s, 1 / s}); d > 1e-12 {
			t.Errorf("RiverDistance on the river at s=%v = %v", s, d)
		}
	}
}
