package training

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// StalledError is the error of work that Watch abandoned because its compute made no
// progress for Stall.
type StalledError struct {
	Stall time.Duration // the stall timeout that elapsed
	Where string        // how far the work got, e.g. "after step 120"
}

func (e *StalledError) Error() string {
	return fmt.Sprintf("no forward or backward pass returned for %v %s: the compute is stuck; attempt abandoned", e.Stall, e.Where)
}

// Watch runs run under a watchdog and returns what it returns. run's context carries an
// alive function (WithAlive) that Run and the probes call once their engine exists and
// after every forward and backward pass that returns. Once it has been called, run going
// without a call for stall is abandoned: its context is cancelled and Watch returns a
// *StalledError at once, whose Where is where() at that moment. Before the first call
// (the engine not yet built, data being prepared) run is never abandoned, nor with stall
// ≤ 0. A hung device call cannot be interrupted, so the goroutine of an abandoned run is
// left behind with its context cancelled; its result is discarded.
func Watch[T any](ctx context.Context, stall time.Duration, where func() string, run func(context.Context) (T, error)) (T, error) {
	if stall <= 0 {
		return run(ctx)
	}
	var beats atomic.Int64
	runCtx, cancel := context.WithCancel(WithAlive(ctx, func() { beats.Add(1) }))
	type outcome struct {
		v   T
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		v, err := run(runCtx)
		done <- outcome{v, err}
	}()
	check := time.NewTicker(max(min(stall/4, time.Second), time.Millisecond))
	defer check.Stop()
	seen, since := beats.Load(), time.Now()
	for {
		select {
		case o := <-done:
			cancel()
			return o.v, o.err
		case <-check.C:
		}
		if b := beats.Load(); b != seen || b == 0 {
			seen, since = b, time.Now()
			continue
		}
		if time.Since(since) < stall {
			continue
		}
		cancel()
		var zero T
		return zero, &StalledError{Stall: stall, Where: where()}
	}
}
