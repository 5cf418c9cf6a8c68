package backend

import (
	"errors"
	"fmt"
	"strings"
	"sync"
)

// ErrUnavailable matches (errors.Is) every *UnavailableError.
var ErrUnavailable = errors.New("backend not in this build")

// UnavailableError is the error of a backend the catalog lists but this build does not
// carry: an invalid configuration for this binary, which no retry can mend.
type UnavailableError struct {
	Backend Info
	Have    []string // the backends this build carries
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("backend = %q: %s", e.Backend.Name, e.Reason())
}

// Reason is the error without the backend's name: why it cannot run and how to build it in.
func (e *UnavailableError) Reason() string {
	return fmt.Sprintf("not in this build of sfsweep (it has %s); to train on it, %s", strings.Join(e.Have, ", "), e.Backend.Build)
}

// Is makes errors.Is(err, ErrUnavailable) hold.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// OutOfMemoryError is the error of an engine that could not allocate what a trial needs
// on its device. Need is what the trial needs (parameters, gradients, optimizer state
// and activations of one micro-batch), Total the device's memory and Free what was free
// when the engine was made, in bytes.
type OutOfMemoryError struct {
	Backend           string
	Need, Total, Free int64
	// What describes the trial's shape (model, micro-batch).
	What string
	Err  error // the device's own error
}

func (e *OutOfMemoryError) Error() string {
	verdict := "other processes hold the rest"
	if !e.Fits() {
		verdict = "the trial does not fit on this device: lower micro_batch (the batch is accumulated) or use a larger device"
	}
	return fmt.Sprintf("%s: out of device memory: %s needs %s, the device has %s of which %s free: %s (%v)",
		e.Backend, e.What, GiB(e.Need), GiB(e.Total), GiB(e.Free), verdict, e.Err)
}

func (e *OutOfMemoryError) Unwrap() error { return e.Err }

// Fits tells whether the trial would fit on an empty device of this size.
func (e *OutOfMemoryError) Fits() bool { return e.Need <= e.Total }

// GiB formats a byte count in GiB.
func GiB(n int64) string { return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30)) }

// DeviceFaultError is an error that leaves the process's device context unusable: an
// illegal address, a failed launch, an uncorrectable ECC error, an illegal or misaligned
// instruction, a hardware stack error, a device-side assert. Every later call on the device
// fails the same way, so no retry in the process can mend it: the process must end, and the
// trial resume from its checkpoint in a fresh one.
type DeviceFaultError struct {
	Backend string
	Err     error // the device's own error
}

func (e *DeviceFaultError) Error() string {
	return fmt.Sprintf("%s: device fault, the process's device context is lost: %v", e.Backend, e.Err)
}

func (e *DeviceFaultError) Unwrap() error { return e.Err }

// faultClasses are the tests of device faults that engines register (RegisterFault).
var faultClasses struct {
	sync.Mutex
	tests []func(error) bool
}

// RegisterFault adds a test of the device faults of an engine's own error values, such as
// the CUDA driver's sticky result codes, for IsDeviceFault.
func RegisterFault(isFault func(error) bool) {
	faultClasses.Lock()
	defer faultClasses.Unlock()
	faultClasses.tests = append(faultClasses.tests, isFault)
}

// IsDeviceFault reports whether err holds a *DeviceFaultError or an error a registered
// engine classes as a device fault.
func IsDeviceFault(err error) bool {
	if err == nil {
		return false
	}
	var df *DeviceFaultError
	if errors.As(err, &df) {
		return true
	}
	faultClasses.Lock()
	defer faultClasses.Unlock()
	for _, isFault := range faultClasses.tests {
		if isFault(err) {
			return true
		}
	}
	return false
}
