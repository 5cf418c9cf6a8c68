package training

import "time"

// throughput is a run's speed as its progress reports it. The first step an attempt
// times pays what later steps do not (an engine's first use of its kernels and libraries,
// page faults, caches filling), which on a GPU is a few seconds: so the rate is steady
// state, over the steps after that first one, and the first step's own rate only until
// there is a second. The ETA counts every step timed.
type throughput struct {
	tokensPerStep int64
	steps         int       // the run's last step
	start         time.Time // when the attempt's first step began
	first         time.Time // when it ended
	timed         int       // steps timed so far
}

func newThroughput(tokensPerStep int64, steps int, start time.Time) *throughput {
	return &throughput{tokensPerStep: tokensPerStep, steps: steps, start: start}
}

// step records that step ended at now, and returns the tokens per second and the time
// left to the run's last step.
func (t *throughput) step(step int, now time.Time) (tokensPerSec float64, eta time.Duration) {
	t.timed++
	if t.timed == 1 {
		t.first = now
	}
	from, n := t.first, t.timed-1
	if n == 0 {
		from, n = t.start, 1
	}
	if d := now.Sub(from); d > 0 {
		tokensPerSec = float64(int64(n)*t.tokensPerStep) / d.Seconds()
	}
	eta = time.Duration(float64(now.Sub(t.start)) / float64(t.timed) * float64(t.steps-step))
	return tokensPerSec, eta
}
