package sfadamw

import "math"

// refSFAdamW is Algorithms 1 and 2 of the paper transcribed line by line in float64, with x,
// y and z all stored: the independent reference the optimizers are checked against.
type refSFAdamW struct {
	lr, b1, b2, eps, wd, C float64
	warmup                 int
	x, y, z, v             []float64
	t                      int
	sumSq                  float64
	lastC                  float64
}

func newRef(cfg Config, x1 []float64) *refSFAdamW {
	r := &refSFAdamW{lr: cfg.LR, b1: cfg.Beta1, b2: cfg.Beta2, eps: cfg.Eps, wd: cfg.WeightDecay, C: cfg.C, warmup: cfg.WarmupSteps}
	r.x = append([]float64(nil), x1...)
	r.z = append([]float64(nil), x1...) // z_1 = x_1
	r.v = make([]float64, len(x1))      // v_0 = 0
	r.y = make([]float64, len(x1))
	r.computeY()
	return r
}

// computeY is line 5: y_t = (1−β1) z_t + β1 x_t.
func (r *refSFAdamW) computeY() {
	for i := range r.y {
		r.y[i] = (1-r.b1)*r.z[i] + r.b1*r.x[i]
	}
}

// step runs lines 6–12 for the gradient g_t taken at y_t, then line 5 of the next step.
func (r *refSFAdamW) step(g []float64) {
	r.t++
	t := float64(r.t)
	gamma := r.lr
	if r.warmup > 0 {
		gamma = r.lr * math.Min(1, t/float64(r.warmup))
	}
	for i := range g {
		r.v[i] = r.b2*r.v[i] + (1-r.b2)*g[i]*g[i]
		vhat := r.v[i] / (1 - math.Pow(r.b2, t))
		r.z[i] = r.z[i] - gamma*g[i]/(math.Sqrt(vhat)+r.eps) - gamma*r.wd*r.y[i]
	}
	r.sumSq += gamma * gamma
	c := gamma * gamma / r.sumSq
	if r.C > 0 {
		c = math.Min(c*(1-r.b1)*r.C, 1)
	}
	r.lastC = c
	for i := range r.x {
		r.x[i] = (1-c)*r.x[i] + c*r.z[i]
	}
	r.computeY()
}

// testGrad is the gradient of a smooth nonconvex test function with curvature of both
// signs and several scales: f(w) = Σ_i a_i/2 w_i² + sin(w_i + i) + 0.1 w_i w_{i+1}.
func testGrad(w, g []float64) {
	n := len(w)
	for i := range w {
		a := 0.5 + float64(i%5)
		g[i] = a*w[i] + math.Cos(w[i]+float64(i))
		if i+1 < n {
			g[i] += 0.1 * w[i+1]
		}
		if i > 0 {
			g[i] += 0.1 * w[i-1]
		}
	}
}

func maxRelDiff(a, b []float64) float64 {
	var m float64
	for i := range a {
		d := math.Abs(a[i]-b[i]) / math.Max(1, math.Max(math.Abs(a[i]), math.Abs(b[i])))
		if d > m || math.IsNaN(d) {
			m = d
			if math.IsNaN(d) {
				return math.Inf(1)
			}
		}
	}
	return m
}

func initialPoint(n int) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = math.Sin(float64(3*i+1)) * 2
	}
	return w
}
