package sfadamw

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// forDecay cuts a range into runs by the spans, in order, covering it once.
func TestForDecay(t *testing.T) {
	spans := []Span{{2, 5}, {7, 8}, {10, 20}}
	type run struct {
		lo, hi int
		d      bool
	}
	for _, c := range []struct {
		lo, hi int
		want   []run
	}{
		{0, 12, []run{{0, 2, false}, {2, 5, true}, {5, 7, false}, {7, 8, true}, {8, 10, false}, {10, 12, true}}},
		{3, 4, []run{{3, 4, true}}},
		{5, 7, []run{{5, 7, false}}},
		{15, 30, []run{{15, 20, true}, {20, 30, false}}},
	} {
		var got []run
		ForDecay(spans, c.lo, c.hi, func(lo, hi int, d bool) { got = append(got, run{lo, hi, d}) })
		if !slices.Equal(got, c.want) {
			t.Errorf("[%d, %d): %v, want %v", c.lo, c.hi, got, c.want)
		}
	}
	var all []bool
	ForDecay(nil, 0, 4, func(lo, hi int, d bool) { all = append(all, d) })
	if !slices.Equal(all, []bool{true}) {
		t.Errorf("nil spans: %v, want one decayed run", all)
	}
	for _, bad := range [][]Span{{{3, 3}}, {{4, 6}, {5, 8}}, {{-1, 2}}} {
		if err := (Config{LR: 1e-3, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, Decayed: bad}).Validate(); err == nil || !strings.Contains(err.Error(), "decayed[") {
			t.Errorf("spans %v: err = %v", bad, err)
		}
	}
	if _, err := New(Config{LR: 1e-3, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, Decayed: []Span{{0, 11}}}, make([]float32, 10)); err == nil {
		t.Error("a span beyond the buffer passed")
	}
}

// Weight decay on some runs only: every parameter a span covers moves bitwise as in a run
// that decays all, every other as in one that decays none, in float32 (the SIMD kernels)
// and float64, over a buffer the pool splits (the spans cross its chunks), for SF-AdamW
// (vanilla and refined) and AdamW.
func TestDecayedSpans(t *testing.T) {
	n := 3*grain + 123
	spans := []Span{{5, grain + 17}, {grain + 40, grain + 41}, {2*grain - 3, 3 * grain}}
	in := func(i int) bool {
		for _, s := range spans {
			if i >= s.Lo && i < s.Hi {
				return true
			}
		}
		return false
	}
	grad := func(step, i int) float64 { return math.Sin(float64(i)*0.37+float64(step)) * (1 + float64(i%7)) }
	check := func(name string, mk func(decayed []Span, wd float64, p []float32) func(g []float32)) {
		t.Helper()
		run := func(decayed []Span, wd float64) []float32 {
			p := make([]float32, n)
			for i := range p {
				p[i] = float32(math.Cos(float64(i)))
			}
			step := mk(decayed, wd, p)
			g := make([]float32, n)
			for s := range 6 {
				for i := range g {
					g[i] = float32(grad(s, i))
				}
				step(g)
			}
			return p
		}
		some, all, none := run(spans, 0.5), run(nil, 0.5), run(nil, 0)
		bad := 0
		for i := range some {
			want := none[i]
			if in(i) {
				want = all[i]
			}
			if math.Float32bits(some[i]) != math.Float32bits(want) {
				if bad < 3 {
					t.Errorf("%s: parameter %d (decayed %v) = %g, want %g", name, i, in(i), some[i], want)
				}
				bad++
			}
		}
		if slices.Equal(all, none) {
			t.Fatalf("%s: decay changes nothing: the test cannot tell", name)
		}
	}
	for _, c := range []float64{0, 50} {
		check("sfadamw", func(d []Span, wd float64, p []float32) func([]float32) {
			o, err := New(Config{LR: 1e-2, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: wd, WarmupSteps: 2, C: c, Decayed: d}, p)
			if err != nil {
				t.Fatal(err)
			}
			return o.Step
		})
	}
	check("adamw", func(d []Span, wd float64, p []float32) func([]float32) {
		o, err := NewAdamW(AdamWConfig{Schedule: Schedule{Kind: Cosine, Peak: 1e-2, WarmupSteps: 2, TotalSteps: 6, FinalFrac: 0.1},
			Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: wd, GradClip: 1, Decayed: d}, p)
		if err != nil {
			t.Fatal(err)
		}
		return o.Step
	})
}
