package activities

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/training/backend"
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

// watched maps an attempt that fails with a device fault, however deep in the error, to a
// retryable error of type ErrorDeviceFault, and tells a.OnDeviceFault before it returns;
// a stall is not a fault, and an engine's own error a registered class tests is one.
func TestWatchedDeviceFault(t *testing.T) {
	var told []error
	a := &Activities{OnDeviceFault: func(err error) { told = append(told, err) }, OnStall: func(error) {}}
	where := func() string { return "in the test" }
	fault := fmt.Errorf("train: step 3: %w", &backend.DeviceFaultError{Backend: "cuda", Err: errors.New("CUDA_ERROR_ILLEGAL_ADDRESS")})
	_, err := watched(context.Background(), a, time.Minute, where, func(context.Context) (int, error) { return 0, fault })
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || ae.Type() != ErrorDeviceFault || ae.NonRetryable() || ae.Message() != fault.Error() {
		t.Fatalf("a faulted attempt: %v, want a retryable %s error", err, ErrorDeviceFault)
	}
	if len(told) != 1 || told[0] != fault {
		t.Errorf("OnDeviceFault told %v, want %v", told, fault)
	}
	_, _ = watched(context.Background(), a, 0, where, func(context.Context) (int, error) {
		return 0, &training.StalledError{Stall: time.Minute}
	})
	if len(told) != 1 {
		t.Errorf("a stall told OnDeviceFault: %v", told)
	}
	sticky := errors.New("the test engine's sticky error")
	backend.RegisterFault(func(err error) bool { return errors.Is(err, sticky) })
	_, err = watched(context.Background(), a, 0, where, func(context.Context) (int, error) { return 0, fmt.Errorf("engine: %w", sticky) })
	if !errors.As(err, &ae) || ae.Type() != ErrorDeviceFault || len(told) != 2 {
		t.Errorf("a registered class's error: %v (told %d)", err, len(told))
	}
	if backend.IsDeviceFault(errors.New("CUDA_ERROR_OUT_OF_MEMORY")) {
		t.Error("an error of no fault class is a device fault")
	}
}
