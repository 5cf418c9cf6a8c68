package native

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Each op's backward against central differences of a scalar L = Σ g·op(x), with g random,
// in float64. The tolerances are those of the model check (fdAtol, fdRtol).

func randn(n int, std float64, rng *rand.Rand) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = std * rng.NormFloat64()
	}
	return v
}

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// fdCheck compares analytic, the gradient of loss with respect to x, with central
// differences, element by element.
func fdCheck(t *testing.T, name string, x, analytic []float64, loss func() float64) {
	t.Helper()
	fdCheckStep(t, name, x, analytic, loss, fdStep)
}

// fdCheckStep is fdCheck with the difference step h.
func fdCheckStep(t *testing.T, name string, x, analytic []float64, loss func() float64, h float64) {
	t.Helper()
	var worst float64
	for i := range x {
		orig := x[i]
		x[i] = orig + h
		lp := loss()
		x[i] = orig - h
		lm := loss()
		x[i] = orig
		num := (lp - lm) / (2 * h)
		diff := math.Abs(analytic[i] - num)
		worst = max(worst, diff)
		if diff > fdAtol+fdRtol*max(math.Abs(num), math.Abs(analytic[i])) {
			t.Errorf("%s[%d]: analytic %.12g, numerical %.12g", name, i, analytic[i], num)
			return
		}
	}
	t.Logf("%s: %d elements, max |analytic − numerical| = %.2g", name, len(x), worst)
}

func TestRMSNormBackward(t *testing.T) {
	const n, c, eps = 5, 7, 1e-5
	for _, tc := range []struct {
		name   string
		xScale float64 // typical |x|
		h      float64 // difference step
	}{
		{"unit rows", 1, fdStep},
		{"rows where ε matters", 3e-3, 1e-7}, // mean(x²) ≈ ε
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 1))
			x, w, g := randn(n*c, tc.xScale, rng), randn(c, 1, rng), randn(n*c, 1, rng)
			x[3] = 0
			out, rstd := make([]float64, n*c), make([]float64, n)
			loss := func() float64 { rmsnormForward(out, rstd, x, w, c, eps); return dot(g, out) }
			loss()
			dx, dw := randn(n*c, 1, rng), make([]float64, c)
			dx0 := append([]float64(nil), dx...)
			rmsnormBackward(dx, dw, g, x, w, rstd, c)
			for i := range dx {
				dx[i] -= dx0[i] // rmsnormBackward adds
			}
			fdCheckStep(t, "dx", x, dx, loss, tc.h)
			fdCheckStep(t, "dw", w, dw, loss, fdStep)
		})
	}
}

func TestRoPEBackward(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	const nt, c, nh, b = 6, 12, 3, 2
	cos, sin := ropeTables[float64](nt, c/nh, 10000)
	x, g := randn(b*nt*3*c, 1, rng), randn(b*nt*3*c, 1, rng)
	y := make([]float64, len(x))
	loss := func() float64 { copy(y, x); ropeForward(y, cos, sin, 0, nt, c, nh); return dot(g, y) }
	loss()
	dx := append([]float64(nil), g...)
	negSin := make([]float64, len(sin))
	for i, s := range sin {
		negSin[i] = -s
	}
	ropeBackward(dx, cos, negSin, 0, nt, c, nh)
	fdCheck(t, "dqkv", x, dx, loss)
	// v is untouched, and position 0 is the identity
	for i := 2 * c; i < 3*c; i++ {
		if y[i] != x[i] || y[i-2*c] != x[i-2*c] {
			t.Fatalf("RoPE changed v or position 0 at %d", i)
		}
	}
}

// TestRoPEMatchesRotateHalf checks one rotation against the PyTorch peer's formula written
// out: out = cat(x1·cos − x2·sin, x1·sin + x2·cos) with angle t·θ^(−2i/D).
func TestRoPEMatchesRotateHalf(t *testing.T) {
	const nt, d, theta = 5, 8, 10000.0
	cos, sin := ropeTables[float64](nt, d, theta)
	row := make([]float64, 3*d)
	for i := range row {
		row[i] = float64(i + 1)
	}
	const pos = 3
	qkv := make([]float64, nt*3*d)
	copy(qkv[pos*3*d:], row)
	ropeForward(qkv, cos, sin, 0, nt, d, 1)
	for i := range d / 2 {
		a := pos * math.Pow(theta, -float64(2*i)/d)
		x1, x2 := row[i], row[i+d/2]
		want1, want2 := x1*math.Cos(a)-x2*math.Sin(a), x1*math.Sin(a)+x2*math.Cos(a)
		got1, got2 := qkv[pos*3*d+i], qkv[pos*3*d+i+d/2]
		if math.Abs(got1-want1) > 1e-12 || math.Abs(got2-want2) > 1e-12 {
			t.Fatalf("pair %d: got (%g, %g), want (%g, %g)", i, got1, got2, want1, want2)
		}
	}
}

func TestSoftmaxCausalBackward(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	const width, n, scale = 9, 6, 0.7
	s, g := randn(width, 2, rng), randn(width, 1, rng)
	p := make([]float64, width)
	loss := func() float64 { copy(p, s); softmaxCausal(p, n); return dot(g, p) }
	loss()
	for i := n; i < width; i++ {
		if p[i] != 0 {
			t.Fatalf("masked probability %d = %g", i, p[i])
		}
	}
	ds := append([]float64(nil), g...)
	softmaxCausalBackward(ds, p, n, scale)
	for i := range ds {
		ds[i] /= scale
	}
	fdCheck(t, "ds", s, ds, loss)
}

// TestAttentionBackward runs attention over more than one row block, with a sequence length
// that is not a multiple of the block.
func TestAttentionBackward(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	const b, nh, d = 2, 2, 4
	nt := attBlock + 5
	c := nh * d
	qkv, g := randn(b*nt*3*c, 1, rng), randn(b*nt*c, 1, rng)
	y, att := make([]float64, b*nt*c), make([]float64, b*nh*nt*nt)
	kvT := make([]float64, nt*d)
	loss := func() float64 { attentionForward(y, att, qkv, kvT, nt, c, nh, 0, b*nh); return dot(g, y) }
	loss()
	dqkv, datt := make([]float64, len(qkv)), make([]float64, nt*nt)
	attentionBackward(dqkv, datt, g, att, qkv, kvT, nt, c, nh, 0, b*nh)
	fdCheck(t, "dqkv", qkv, dqkv, loss)
}

// TestAttentionForward compares with a direct transcription of softmax(QKᵀ/√D + mask)·V.
func TestAttentionForward(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	const b, nh, d = 2, 3, 4
	nt := 2*attBlock + 3
	c := nh * d
	qkv := randn(b*nt*3*c, 1, rng)
	y, att := make([]float64, b*nt*c), make([]float64, b*nh*nt*nt)
	attentionForward(y, att, qkv, make([]float64, nt*d), nt, c, nh, 0, b*nh)
	var worst float64
	for bb := range b {
		for h := range nh {
			for i := range nt {
				q := qkv[(bb*nt+i)*3*c+h*d:][:d]
				w := make([]float64, i+1)
				var mx, sum float64 = math.Inf(-1), 0
				for j := range w {
					k := qkv[(bb*nt+j)*3*c+c+h*d:][:d]
					w[j] = dot(q, k) / math.Sqrt(d)
					mx = max(mx, w[j])
				}
				for j := range w {
					w[j] = math.Exp(w[j] - mx)
					sum += w[j]
				}
				for e := range d {
					var want float64
					for j := range w {
						want += w[j] / sum * qkv[(bb*nt+j)*3*c+2*c+h*d+e]
					}
					worst = max(worst, math.Abs(y[(bb*nt+i)*c+h*d+e]-want))
				}
			}
		}
	}
	if worst > 1e-13 {
		t.Fatalf("max |Δ| = %g from the direct formula", worst)
	}
}

func TestSwiGLUBackward(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	const n, f = 4, 9
	gu, g := randn(n*2*f, 3, rng), randn(n*f, 1, rng)
	out := make([]float64, n*f)
	loss := func() float64 { swigluForward(out, gu, f); return dot(g, out) }
	loss()
	dgu := make([]float64, len(gu))
	swigluBackward(dgu, g, gu, f)
	fdCheck(t, "dgu", gu, dgu, loss)
	// silu(x)·u written out
	x, u := gu[0], gu[f]
	if want := x / (1 + math.Exp(-x)) * u; math.Abs(out[0]-want) > 1e-15 {
		t.Fatalf("swiglu = %g, want %g", out[0], want)
	}
}

func TestCrossEntropyBackward(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	const n, v = 5, 11
	logits := randn(n*v, 3, rng)
	targets := randomTokens(n, v, 8)
	probs, losses := make([]float64, n*v), make([]float64, n)
	loss := func() float64 {
		copy(probs, logits)
		crossEntropyForward(probs, losses, targets, v)
		var s float64
		for _, l := range losses {
			s += l
		}
		return s / n
	}
	loss()
	// the loss written out: log Σ exp(z) − z[y]
	var want float64
	for r := range n {
		var s float64
		for _, z := range logits[r*v : (r+1)*v] {
			s += math.Exp(z)
		}
		want += (math.Log(s) - logits[r*v+int(targets[r])]) / n
	}
	if got := loss(); math.Abs(got-want) > 1e-14 {
		t.Fatalf("loss %.16g, want %.16g", got, want)
	}
	crossEntropyBackward(probs, targets, v, n)
	fdCheck(t, "dlogits", logits, append([]float64(nil), probs...), loss)
}

func TestEncoderBackward(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	const v, c = 6, 5
	tokens := []int32{1, 4, 1, 1, 0, 5}
	emb, g := randn(v*c, 1, rng), randn(len(tokens)*c, 1, rng)
	out := make([]float64, len(tokens)*c)
	loss := func() float64 { encoderForward(out, tokens, emb, c); return dot(g, out) }
	loss()
	demb := make([]float64, v*c)
	encoderBackward(demb, g, tokens, c, 0, 2)
	encoderBackward(demb, g, tokens, c, 2, c)
	fdCheck(t, "demb", emb, demb, loss)
}
