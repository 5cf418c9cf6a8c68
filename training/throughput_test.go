package training

import (
	"testing"
	"time"
)

// The rate leaves the first step out once there is a second: a first step of 10 s and
// later ones of 1 s read 1,000 tokens/s from step 2 on, where counting the first would
// read 167 at step 3. The ETA counts every step.
func TestThroughputSteadyState(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tp := newThroughput(1000, 10, t0)
	for _, c := range []struct {
		step    int
		at      time.Duration
		rate    float64
		etaSecs float64
	}{
		{1, 10 * time.Second, 100, 90},  // only the first step: its own rate
		{2, 11 * time.Second, 1000, 44}, // 11 s over 2 steps, 8 left
		{3, 12 * time.Second, 1000, 28},
		{4, 14 * time.Second, 750, 21}, // 3 steps over the 4 s after the first
	} {
		rate, eta := tp.step(c.step, t0.Add(c.at))
		if diff := rate - c.rate; diff > 1e-9 || diff < -1e-9 {
			t.Errorf("step %d: %g tokens/s, want %g", c.step, rate, c.rate)
		}
		if got := eta.Seconds(); got-c.etaSecs > 1e-6 || got-c.etaSecs < -1e-6 {
			t.Errorf("step %d: ETA %v, want %gs", c.step, eta, c.etaSecs)
		}
	}
}
