package peak

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadTime is the CPU time of the calling OS thread.
func threadTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return time.Since(epoch)
	}
	return time.Duration(ts.Nano())
}

var epoch = time.Now()
