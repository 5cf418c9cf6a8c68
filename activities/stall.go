package activities

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/workflows"
)

// ErrorStalled is the error type of a training attempt abandoned because its compute made
// no progress for the stall timeout: retried like any transient failure.
const ErrorStalled = "Stalled"

// ErrorDeviceFault is the error type of an attempt that failed with a device fault
// (backend.DeviceFaultError): retried, by another worker process, from the newest
// checkpoint.
const ErrorDeviceFault = "DeviceFault"

// watched runs run under training.Watch with the stall timeout stall (≤ 0:
// workflows.DefaultStallTimeout). An attempt abandoned as stuck fails with an ErrorStalled
// error, which Temporal retries (from the newest checkpoint, for training); it is logged and
// a.OnStall, if set, is told (a worker exits so that its supervisor restarts it with a fresh
// device). An attempt that fails with a device fault fails with an ErrorDeviceFault error,
// retried likewise, and a.OnDeviceFault, if set, is told first. where says how far the work
// got, for the error.
func watched[T any](ctx context.Context, a *Activities, stall time.Duration, where func() string, run func(context.Context) (T, error)) (T, error) {
	if stall <= 0 {
		stall = workflows.DefaultStallTimeout
	}
	v, err := training.Watch(ctx, stall, where, run)
	if backend.IsDeviceFault(err) {
		a.log().Error("device fault", "err", err)
		if a.OnDeviceFault != nil {
			a.OnDeviceFault(err)
		}
		return v, temporal.NewApplicationErrorWithCause(err.Error(), ErrorDeviceFault, err)
	}
	var se *training.StalledError
	if !errors.As(err, &se) {
		return v, err
	}
	a.log().Error("stalled", "err", err)
	if a.OnStall != nil {
		a.OnStall(err)
	}
	return v, temporal.NewApplicationError(err.Error(), ErrorStalled)
}
