package data

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/fielderr"
)

// positions returns n tokens whose value is their index, so a row reveals its offset.
func positions(n int) []uint16 {
	t := make([]uint16, n)
	for i := range t {
		t[i] = uint16(i)
	}
	return t
}

func TestSamplerRows(t *testing.T) {
	const T, B = 16, 8
	data := positions(5000)
	s, err := NewSampler(data, T, 42)
	if err != nil {
		t.Fatal(err)
	}
	x, y := make([]int32, B*T), make([]int32, B*T)
	for step := range 50 {
		for micro := range 3 {
			s.Fill(step, micro, x, y)
			for r := range B {
				o := int(x[r*T])
				if o != s.Offset(step, micro, r) || o < 0 || o+T+1 > len(data) {
					t.Fatalf("step %d micro %d row %d: offset %d (Offset says %d), want in [0, %d]", step, micro, r, o, s.Offset(step, micro, r), len(data)-T-1)
				}
				for i := range T {
					if x[r*T+i] != int32(o+i) || y[r*T+i] != int32(o+i+1) {
						t.Fatalf("step %d row %d pos %d: token %d target %d, want data[%d] = %d and data[%d] = %d",
							step, r, i, x[r*T+i], y[r*T+i], o+i, o+i, o+i+1, o+i+1)
					}
				}
			}
		}
	}
}

func TestSamplerDeterministicAndSeekable(t *testing.T) {
	const T, B, k = 32, 4, 37
	data := positions(20000)
	fill := func(s *Sampler, step, micro int) []int32 {
		x, y := make([]int32, B*T), make([]int32, B*T)
		s.Fill(step, micro, x, y)
		return append(x, y...)
	}
	a, _ := NewSampler(data, T, 7)
	b, _ := NewSampler(data, T, 7)
	other, _ := NewSampler(data, T, 8)
	if !reflect.DeepEqual(fill(a, 3, 1), fill(b, 3, 1)) {
		t.Error("same seed, step and micro-batch: batches differ")
	}
	if reflect.DeepEqual(fill(a, 3, 1), fill(a, 4, 1)) {
		t.Error("steps 3 and 4 give the same batch")
	}
	if reflect.DeepEqual(fill(a, 3, 1), fill(a, 3, 2)) {
		t.Error("micro-batches 1 and 2 give the same batch")
	}
	if reflect.DeepEqual(fill(a, 3, 1), fill(other, 3, 1)) {
		t.Error("seeds 7 and 8 give the same batch")
	}
	// A run that went through steps 0..k-1 reads at step k what a resumed run reads first.
	for step := range k {
		for micro := range 2 {
			fill(a, step, micro)
		}
	}
	resumed, _ := NewSampler(data, T, 7)
	for micro := range 2 {
		if !reflect.DeepEqual(fill(a, k, micro), fill(resumed, k, micro)) {
			t.Errorf("step %d micro %d: continued and resumed samplers differ", k, micro)
		}
	}
	// The rows of one batch are distinct draws.
	seen := map[int]bool{}
	for r := range 64 {
		seen[a.Offset(0, 0, r)] = true
	}
	if len(seen) < 60 {
		t.Errorf("64 rows of one batch have %d distinct offsets out of %d", len(seen), len(data)-T)
	}
}

func TestNewSamplerShortSplit(t *testing.T) {
	_, err := NewSampler(positions(16), 16, 1)
	if err == nil || !strings.Contains(err.Error(), "16 tokens") || !strings.Contains(err.Error(), "17") {
		t.Errorf("NewSampler(16 tokens, seqLen 16) = %v, want an error naming 16 and 17", err)
	}
	var fe *fielderr.Error
	if _, err := NewSampler(positions(16), 0, 1); !errors.As(err, &fe) || fe.Field != "seq_len" {
		t.Errorf("NewSampler(seqLen 0) = %v", err)
	}
	// Exactly seqLen+1 tokens: one valid offset.
	s, err := NewSampler(positions(17), 16, 1)
	if err != nil {
		t.Fatal(err)
	}
	for step := range 100 {
		if o := s.Offset(step, step%3, step%5); o != 0 {
			t.Fatalf("offset %d with a single valid start", o)
		}
	}
}

// chiSquare returns Pearson's statistic of counts against a uniform expectation.
func chiSquare(counts []int) float64 {
	n := 0
	for _, c := range counts {
		n += c
	}
	e := float64(n) / float64(len(counts))
	x := 0.0
	for _, c := range counts {
		x += (float64(c) - e) * (float64(c) - e) / e
	}
	return x
}

// chiSquareQuantile is the Wilson–Hilferty approximation of the chi-square quantile with df
// degrees of freedom at standard-normal quantile z.
func chiSquareQuantile(df, z float64) float64 {
	a := 2 / (9 * df)
	return df * math.Pow(1-a+z*math.Sqrt(a), 3)
}

// Offsets are uniform over the valid starts whichever counter varies, and consecutive rows
// are independent. The bound is the 1 − 1e-6 quantile (z = 4.753): a uniform, independent
// hash passes, a biased or correlated one fails (checked below on deliberately bad draws).
func TestSamplerUniform(t *testing.T) {
	const K = 50 // bins
	const N = 100000
	data := positions(30011) // starts = 30011 − 64, not a power of two
	s, _ := NewSampler(data, 64, 2024)
	starts := len(data) - 64
	bound := chiSquareQuantile(K-1, 4.753)
	bin := func(o int) int { return o * K / starts }
	draws := map[string]func(i int) int{
		"step":  func(i int) int { return s.Offset(i, 0, 0) },
		"micro": func(i int) int { return s.Offset(0, i, 0) },
		"row":   func(i int) int { return s.Offset(5, 1, i) },
		"mixed": func(i int) int { return s.Offset(i/64, i%3, i%64) },
	}
	for name, draw := range draws {
		counts := make([]int, K)
		for i := range N {
			counts[bin(draw(i))]++
		}
		if x := chiSquare(counts); x > bound {
			t.Errorf("%s: chi-square %.1f > bound %.1f (df %d)", name, x, bound, K-1)
		}
	}
	// Pairs of consecutive rows: an 8×8 table of (bin of row r, bin of row r+1).
	pairs := make([]int, 64)
	for i := range N {
		a, b := s.Offset(i, 0, 0)*8/starts, s.Offset(i, 0, 1)*8/starts
		pairs[a*8+b]++
	}
	if x, pb := chiSquare(pairs), chiSquareQuantile(63, 4.753); x > pb {
		t.Errorf("consecutive rows: chi-square %.1f > bound %.1f (df 63)", x, pb)
	}
	// The same test fails draws that favour the first half of the split, and a row that
	// repeats the previous one.
	counts := make([]int, K)
	for i := range N {
		o := s.Offset(i, 0, 0)
		if i%10 == 0 {
			o /= 2
		}
		counts[bin(o)]++
	}
	if x := chiSquare(counts); x <= bound {
		t.Errorf("biased draws pass: chi-square %.1f ≤ bound %.1f", x, bound)
	}
	for i := range pairs {
		pairs[i] = 0
	}
	for i := range N {
		a := s.Offset(i, 0, 0) * 8 / starts
		b := a
		if i%4 != 0 {
			b = s.Offset(i, 0, 1) * 8 / starts
		}
		pairs[a*8+b]++
	}
	if x := chiSquare(pairs); x <= chiSquareQuantile(63, 4.753) {
		t.Errorf("correlated rows pass: chi-square %.1f", x)
	}
}

func TestWindows(t *testing.T) {
	const T = 10
	data := positions(1000) // (1000−1)/10 = 99 windows fit
	w, err := Windows(data, T, 40)
	if err != nil {
		t.Fatal(err)
	}
	if w.N != 40 || w.Fit != 99 || w.Capped() {
		t.Errorf("Windows(n=40): N %d, Fit %d, Capped %v; want 40, 99, false", w.N, w.Fit, w.Capped())
	}
	const B = 16
	if w.Batches(B) != 3 {
		t.Errorf("Batches(16) = %d, want 3", w.Batches(B))
	}
	x, y := make([]int32, B*T), make([]int32, B*T)
	next := int32(0) // the inputs of consecutive windows tile the split
	for i := range w.Batches(B) {
		for j := range x {
			x[j], y[j] = -1, -1
		}
		rows := w.Fill(i, x, y)
		if want := min(B, 40-i*B); rows != want {
			t.Errorf("batch %d: %d rows, want %d", i, rows, want)
		}
		for j := range rows * T {
			if x[j] != next || y[j] != next+1 {
				t.Fatalf("batch %d pos %d: token %d target %d, want %d, %d", i, j, x[j], y[j], next, next+1)
			}
			next++
		}
		for j := rows * T; j < len(x); j++ {
			if x[j] != -1 {
				t.Fatalf("batch %d: row past the set written", i)
			}
		}
	}
	if next != 40*T {
		t.Errorf("windows cover %d tokens, want %d", next, 40*T)
	}
	// Asking for more than fit: capped, reported, not an error; the last window's target is
	// the split's last token.
	w, err = Windows(positions(991), T, 3200)
	if err != nil || w.N != 99 || !w.Capped() || w.Requested != 3200 {
		t.Fatalf("Windows(991 tokens, n=3200) = %+v, %v; want 99 windows, capped", w, err)
	}
	x, y = make([]int32, T), make([]int32, T)
	w.Fill(98, x, y)
	if x[0] != 980 || y[T-1] != 990 {
		t.Errorf("last window starts at %d and ends with target %d, want 980 and 990", x[0], y[T-1])
	}
	if w, _ := Windows(positions(990), T, 3200); w.N != 98 {
		t.Errorf("Windows(990 tokens) holds %d windows, want 98", w.N)
	}
	if _, err := Windows(positions(10), T, 1); err == nil {
		t.Error("Windows of a split shorter than seqLen+1: no error")
	}
	if _, err := Windows(data, T, 0); err == nil {
		t.Error("Windows(n = 0): no error")
	}
}

func BenchmarkFill(b *testing.B) {
	const T, B = 128, 16 // tiny-llama's batch
	data := positions(1 << 16)
	for i := range data {
		data[i] = uint16(i * 2654435761 >> 7)
	}
	s, _ := NewSampler(data, T, 1)
	x, y := make([]int32, B*T), make([]int32, B*T)
	b.Run("hashed", func(b *testing.B) {
		b.SetBytes(B * T * 2)
		step := 0
		for b.Loop() {
			s.Fill(step, 0, x, y)
			step++
		}
	})
	// Baseline: the same rows read from fixed, consecutive offsets.
	b.Run("sequential", func(b *testing.B) {
		b.SetBytes(B * T * 2)
		for b.Loop() {
			for r := range B {
				fillRow(data[r*T:], x[r*T:(r+1)*T], y[r*T:(r+1)*T])
			}
		}
	})
}
