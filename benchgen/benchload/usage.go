package benchload

import (
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Usage measures CPU time and peak RSS around a benchmark loop.
type Usage struct{ startCPU time.Duration }

// processPeakKiB is the process's peak RSS before the last restart of the
// kernel's count (StartUsage): like that count, one per process.
var processPeakKiB atomic.Int64

// StartUsage starts measuring. It notes the process's peak RSS so far (the
// set-up's), collects the set-up's garbage and gives its memory back to
// the system, then restarts the process's peak RSS from what it holds now
// (Linux's clear_refs), so that the loop's peak Report gives is what the
// benchmark holds (the cluster, the snapshot) plus what the measured code
// adds.
func StartUsage() *Usage {
	u := &Usage{}
	notePeak()
	forgetPeak()
	u.startCPU, _, _ = processUsage()
	return u
}

// Report adds to b's results the CPU time (user + system) per operation
// since StartUsage, cpu-ms/op; the peak RSS since then, peak-RSS-MiB (the
// process's peak so far where Linux's VmHWM is not available); and the
// whole process's peak, set-up included, process-peak-RSS-MiB: what the
// process held at most, loading the informers' objects or in the loop. On a
// system that counts neither CPU time nor peak RSS per process it reports
// none of them, and says so in the benchmark's log.
func (u *Usage) Report(b *testing.B) {
	endCPU, peakKiB, ok := processUsage()
	if !ok {
		b.Logf("no CPU time or peak RSS reported: %s does not count them per process here", goruntime.GOOS)
		return
	}
	cpu := (endCPU - u.startCPU) / time.Duration(b.N)
	b.ReportMetric(float64(cpu.Microseconds())/1000, "cpu-ms/op")
	if hwm, ok := vmHWM(); ok {
		peakKiB = hwm
	}
	b.ReportMetric(float64(peakKiB)/1024, "peak-RSS-MiB")
	notePeak()
	b.ReportMetric(float64(processPeakKiB.Load())/1024, "process-peak-RSS-MiB")
}

// forgetPeak gives the garbage of what came before back to the system and
// restarts the kernel's count of the process's peak RSS without noting it
// in processPeakKiB, so that what the process held before is no part of
// process-peak-RSS-MiB. It returns the peak it forgot (KiB), if the
// system counts one.
func forgetPeak() (int64, bool) {
	hwm, ok := vmHWM()
	goruntime.GC()
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	return hwm, ok
}

// notePeak adds the kernel's peak RSS count to processPeakKiB.
func notePeak() {
	if hwm, ok := vmHWM(); ok && hwm > processPeakKiB.Load() {
		processPeakKiB.Store(hwm)
	}
}

// vmHWM is the process's peak RSS in KiB, from /proc/self/status.
func vmHWM() (int64, bool) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kib, err == nil
		}
	}
	return 0, false
}
