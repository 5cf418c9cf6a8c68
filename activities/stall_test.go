package activities

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/sfsweep/sfsweep/training"
)

// watched maps a stalled attempt (training.Watch's *training.StalledError, here returned
// by the run itself) to a retryable error of type ErrorStalled with the same message, and
// tells a.OnStall; any other outcome passes through untold.
func TestWatchedStall(t *testing.T) {
	var told []error
	a := &Activities{OnStall: func(err error) { told = append(told, err) }}
	where := func() string { return "in the test" }
	v, err := watched(context.Background(), a, time.Minute, where, func(context.Context) (int, error) { return 1, nil })
	if v != 1 || err != nil || len(told) != 0 {
		t.Fatalf("a run that returns: %v, %v (told %v)", v, err, told)
	}
	stalled := &training.StalledError{Stall: time.Minute, Where: "after step 3"}
	_, err = watched(context.Background(), a, 0, where, func(context.Context) (int, error) { return 0, stalled })
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || ae.Type() != ErrorStalled || ae.NonRetryable() || ae.Message() != stalled.Error() {
		t.Fatalf("a stalled attempt: %v, want a retryable %s error", err, ErrorStalled)
	}
	if len(told) != 1 || told[0] != error(stalled) {
		t.Errorf("OnStall told %v, want %v", told, stalled)
	}
}
