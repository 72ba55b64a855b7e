//go:build !unix

package benchload

import "time"

// processUsage reports nothing where getrusage(2) does not exist: the
// benchmarks then give no CPU time or peak RSS rather than made-up ones.
func processUsage() (cpu time.Duration, peakKiB int64, ok bool) {
	return 0, 0, false
}
