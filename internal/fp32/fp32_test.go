package fp32

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// exactFMA is a·b + c rounded once to float32 through math/big: the product and sum exact
// then one rounding (big.Float rounds to nearest even when asked for 24 bits).
func exactFMA(a, b, c float32) float32 {
	if math.IsNaN(float64(a)) || math.IsNaN(float64(b)) || math.IsNaN(float64(c)) ||
		math.IsInf(float64(a), 0) || math.IsInf(float64(b), 0) || math.IsInf(float64(c), 0) {
		return float32(float64(a)*float64(b) + float64(c))
	}
	x := new(big.Float).SetPrec(0).SetMode(big.ToNearestEven)
	x.SetFloat64(float64(a))
	x.SetPrec(1000).Mul(x, big.NewFloat(float64(b)))
	x.Add(x, big.NewFloat(float64(c)))
	f, _ := x.Float32()
	if f == 0 && x.Sign() < 0 {
		return float32(math.Copysign(0, -1))
	}
	return f
}

// midpointCase returns a, b, c with a·b = 2^(e−24)·(1 − 2^−46) for c in [2^e, 2^(e+1)):
// half a float32 ulp of c less a sliver far below a float64 ulp, so that c + a·b rounded
// to float64 is the midpoint of two float32 values and the exact sum lies just below it.
// c has a random mantissa (odd or even) and exponent; the signs vary.
func midpointCase(rng *rand.Rand) (a, b, c float32) {
	e := rng.IntN(40) - 20
	c = float32(math.Ldexp(1+float64(rng.IntN(1<<23))*math.Exp2(-23), e))
	a = float32(math.Ldexp(1+math.Exp2(-23), e-24))
	b = float32(1 - math.Exp2(-23))
	if rng.IntN(2) == 0 {
		b = -b
		c = -c
	}
	return a, b, c
}

// FMA agrees bit for bit with the exact sum rounded once, on random operands of every
// magnitude, on sums that cancel, and on the double-rounding cases: a·b + c whose float64
// rounding lands exactly between two float32 values.
func TestFMA(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(a, b, c float32) {
		t.Helper()
		got, want := FMA(a, b, c), exactFMA(a, b, c)
		if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Fatalf("FMA(%g, %g, %g) = %g (%#08x), want %g (%#08x)", a, b, c, got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
	rnd := func(scale float64) float32 {
		return float32(rng.NormFloat64() * math.Exp2(float64(rng.IntN(60)-30)) * scale)
	}
	for range 200000 {
		a, b, c := rnd(1), rnd(1), rnd(1)
		check(a, b, c)
		check(a, b, -float32(float64(a)*float64(b))) // cancellation
	}
	// double rounding: c large, a·b just off a float32 half-ulp of c
	for range 200000 {
		a, b, c := midpointCase(rng)
		check(a, b, c)
		check(-a, b, c)
		check(a, b, -c)
	}
	for _, v := range [][3]float32{
		{1, 1, 0}, {0, 0, float32(math.Copysign(0, -1))}, {float32(math.Copysign(0, -1)), 1, 0},
		{math.MaxFloat32, 2, 0}, {math.MaxFloat32, 1, math.MaxFloat32}, {1e-30, 1e-30, 0}, {1e-20, 1e-20, 1e-45},
		{float32(math.Inf(1)), 0, 1}, {float32(math.NaN()), 1, 1}, {3, float32(math.Inf(-1)), 1},
	} {
		check(v[0], v[1], v[2])
	}
}

// The double-rounding correction matters: without it, plain float32(float64(a)·float64(b)
// + float64(c)) differs from the exact result on some of these operands.
func TestFMADoubleRoundingHappens(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	naive := 0
	for range 200000 {
		a, b, c := midpointCase(rng)
		if float32(float64(a)*float64(b)+float64(c)) != exactFMA(a, b, c) {
			naive++
		}
	}
	if naive == 0 {
		t.Error("no operand where rounding twice errs: the test of FMA's correction exercises nothing")
	}
	t.Logf("%d of 200000 operands round wrongly through float64", naive)
}
