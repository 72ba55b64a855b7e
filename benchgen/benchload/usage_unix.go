//go:build unix

package benchload

import (
	goruntime "runtime"
	"syscall"
	"time"
)

// processUsage is the process's CPU time so far (user + system) and its
// peak RSS in KiB, as getrusage(2) counts them.
func processUsage() (cpu time.Duration, peakKiB int64, ok bool) {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0, 0, false
	}
	peakKiB = int64(u.Maxrss)
	if goruntime.GOOS == "darwin" || goruntime.GOOS == "ios" {
		peakKiB /= 1024 // these count bytes, not KiB
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()), peakKiB, true
}
