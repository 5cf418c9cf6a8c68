package activities

import (
	"math"
	"testing"
	"time"
)

// A program's progress counts from its first line: the tokens its lines give, or its steps
// times batch_tokens, per second, and the time left at the rate so far.
func TestProgramRate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		name        string
		tokens      func(step int) int64
		batchTokens int
		wantTPS     float64
	}{
		{"tokens in the lines", func(step int) int64 { return int64(step) * 500 }, 0, 1000},
		{"batch_tokens", func(int) int64 { return 0 }, 250, 500},
		{"neither", func(int) int64 { return 0 }, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r programRate
			// a slow start (10 s before the first line at step 5), then 2 steps a second
			if tps, eta := r.at(t0.Add(10*time.Second), 5, tc.tokens(5), 105, tc.batchTokens); tps != 0 || eta != 0 {
				t.Errorf("first line: %v tok/s, ETA %v; want nothing known yet", tps, eta)
			}
			tps, eta := r.at(t0.Add(15*time.Second), 15, tc.tokens(15), 105, tc.batchTokens)
			if math.Abs(tps-tc.wantTPS) > 1e-9 {
				t.Errorf("%v tok/s, want %v", tps, tc.wantTPS)
			}
			if eta != 45*time.Second {
				t.Errorf("ETA %v, want 45s: 90 steps at 2 a second", eta)
			}
			// a program that started over (its own restart) counts afresh
			if tps, _ := r.at(t0.Add(20*time.Second), 1, tc.tokens(1), 105, tc.batchTokens); tps != 0 {
				t.Errorf("after starting over: %v tok/s", tps)
			}
		})
	}
}
