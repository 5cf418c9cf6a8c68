package activities

import "time"

// programRate is a program attempt's throughput and time left, as the progress of an
// engine's attempt gives them (training.Progress), from its metrics lines: counted from
// the attempt's first line, so that the program's start (its imports, its data, a compile)
// is not in the rate. Tokens are the lines' own (tokens), else the steps times the trial's
// batch_tokens, else unknown (0).
type programRate struct {
	started bool
	step0   int
	tokens0 int64
	t0      time.Time
}

// at is the rate after a line of step (and tokens, 0 where the line gives none) at now, of
// a trial of steps steps of batchTokens tokens (0: not known).
func (r *programRate) at(now time.Time, step int, tokens int64, steps, batchTokens int) (tokensPerSec float64, eta time.Duration) {
	if tokens == 0 && batchTokens > 0 {
		tokens = int64(step) * int64(batchTokens)
	}
	if !r.started || step < r.step0 { // the first line, or a program that started over
		r.started, r.step0, r.tokens0, r.t0 = true, step, tokens, now
		return 0, 0
	}
	dt := now.Sub(r.t0).Seconds()
	if dt <= 0 || step == r.step0 {
		return 0, 0
	}
	if tokens > r.tokens0 {
		tokensPerSec = float64(tokens-r.tokens0) / dt
	}
	perStep := dt / float64(step-r.step0)
	eta = time.Duration(float64(max(steps-step, 0)) * perStep * float64(time.Second))
	return tokensPerSec, eta
}
