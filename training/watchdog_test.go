package training

import (
	"context"
	"errors"
	"testing"
	"time"
)

// beat reports progress to the watchdog of ctx, as an engine's passes do.
func beat(ctx context.Context) { ctx.Value(aliveKey{}).(func())() }

func TestWatch(t *testing.T) {
	const stall = 50 * time.Millisecond
	where := func() string { return "after step 3" }
	ctx := context.Background()

	t.Run("beating", func(t *testing.T) {
		v, err := Watch(ctx, stall, where, func(ctx context.Context) (int, error) {
			for end := time.Now().Add(6 * stall); time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
				beat(ctx)
			}
			return 42, nil
		})
		if v != 42 || err != nil {
			t.Fatalf("a run that beats for 6 stall timeouts: %v, %v", v, err)
		}
	})

	t.Run("stuck", func(t *testing.T) {
		cancelled := make(chan struct{})
		start := time.Now()
		v, err := Watch(ctx, stall, where, func(ctx context.Context) (int, error) {
			for range 3 {
				beat(ctx)
			}
			<-ctx.Done() // a hung device call, which returns once abandoned
			close(cancelled)
			return 7, ctx.Err()
		})
		elapsed := time.Since(start)
		var se *StalledError
		if !errors.As(err, &se) || v != 0 {
			t.Fatalf("a run that stops beating: %v, %v; want a *StalledError", v, err)
		}
		if se.Stall != stall || se.Where != "after step 3" {
			t.Errorf("stalled error %+v", se)
		}
		if want := "no forward or backward pass returned for 50ms after step 3: the compute is stuck; attempt abandoned"; err.Error() != want {
			t.Errorf("error %q, want %q", err, want)
		}
		if elapsed < stall || elapsed > 100*stall {
			t.Errorf("abandoned after %v, stall timeout %v", elapsed, stall)
		}
		select {
		case <-cancelled:
		case <-time.After(10 * time.Second):
			t.Error("the abandoned run's context was not cancelled")
		}
	})

	t.Run("no engine yet", func(t *testing.T) {
		// before its first beat (data being prepared) a run is never abandoned
		v, err := Watch(ctx, stall, where, func(ctx context.Context) (int, error) {
			time.Sleep(4 * stall)
			return 5, nil
		})
		if v != 5 || err != nil {
			t.Fatalf("a run that returns before its first beat: %v, %v", v, err)
		}
	})

	t.Run("returns first", func(t *testing.T) {
		errRun := errors.New("run failed")
		v, err := Watch(ctx, stall, where, func(ctx context.Context) (string, error) {
			beat(ctx)
			return "partial", errRun
		})
		var se *StalledError
		if v != "partial" || !errors.Is(err, errRun) || errors.As(err, &se) {
			t.Fatalf("a run that returns: %q, %v", v, err)
		}
	})

	t.Run("unwatched", func(t *testing.T) {
		v, err := Watch(ctx, 0, where, func(ctx context.Context) (int, error) {
			time.Sleep(2 * stall)
			return 9, nil
		})
		if v != 9 || err != nil {
			t.Fatalf("stall 0: %v, %v", v, err)
		}
	})
}
