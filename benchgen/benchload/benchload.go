// Package benchload puts bench-gen clusters where tidal's decisions find
// them, the way the node loop does in a real cluster, for benchmarks and
// tests: objects as the API server stores them and tidal's informers keep
// them, nodes and pods in the random order the loop receives them.
package benchload

import (
	"math/rand/v2"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tidal-autoscaler/tidal/benchgen"
	"github.com/tidal-autoscaler/tidal/simulator"
	"github.com/tidal-autoscaler/tidal/simulator/checkertest"
)

// Cluster generates the cluster of p as tidal's informers hold it: every
// object as the API server stores it (benchgen's Store: defaults,
// admission, statuses, managed fields), sent as JSON and decoded as
// client-go decodes a watch stream (so that every object has its own
// allocations, as in an informer's cache), then passed to tidal's informer
// transform (a trim.Sharer's: trimmed, pods sharing what replicas have in
// common), one object at a time as an informer does (see watch).
func Cluster(tb testing.TB, p benchgen.Params) *benchgen.Cluster {
	tb.Helper()
	c := benchgen.Generate(p)
	w := newWatch()
	if err := c.Store(benchgen.StoreOptions{Transform: w.send}); err != nil {
		tb.Fatalf("store the %d-node cluster: %v", p.N, err)
	}
	if err := w.into(c); err != nil {
		tb.Fatalf("the %d-node cluster as informers hold it: %v", p.N, err)
	}
	return c
}

// Rand returns a random source for lister orders, fixed by seed so that
// runs compare.
func Rand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x6c6973746572)) }

// Snapshot loads c's nodes and running pods into a new snapshot as the
// node loop's first iteration does: nodes, then pods, each in the random
// order the loop's map of recorded informer events yields, drawn from r.
func Snapshot(tb testing.TB, c *benchgen.Cluster, r *rand.Rand) *simulator.Snapshot {
	tb.Helper()
	snap := simulator.NewSnapshot()
	for _, n := range benchgen.ListerOrder(r, c.Nodes) {
		if _, err := snap.AddNode(n); err != nil {
			tb.Fatal(err)
		}
	}
	for _, pod := range benchgen.ListerOrder(r, c.RunningPods) {
		pi, err := framework.NewPodInfo(pod)
		if err != nil {
			tb.Fatalf("pod %s: %v", pod.Name, err)
		}
		if err := snap.AddPod(pi, pod.Spec.NodeName); err != nil {
			tb.Fatal(err)
		}
	}
	return snap
}

// Checker is the scheduler framework over snap, with no listers: the
// generated clusters have no volumes but the projected token volume, which
// the plugins do not look up.
func Checker(tb testing.TB, snap *simulator.Snapshot) *simulator.Checker {
	tb.Helper()
	return checkertest.Checker(tb, snap, nil)
}

// Templates are the node groups' templates, in group order.
func Templates(tb testing.TB, c *benchgen.Cluster) []*simulator.NodeTemplate {
	tb.Helper()
	out := make([]*simulator.NodeTemplate, len(c.NodeGroups))
	for i, g := range c.NodeGroups {
		t, err := simulator.NewNodeTemplate(g.ID, g.Template, nil)
		if err != nil {
			tb.Fatal(err)
		}
		out[i] = t
	}
	return out
}

// Usage measures CPU time and peak RSS around a benchmark loop.
type Usage struct{ start syscall.Rusage }

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
	goruntime.GC()
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &u.start)
	return u
}

// Report adds to b's results the CPU time (user + system) per operation
// since StartUsage, cpu-ms/op; the peak RSS since then, peak-RSS-MiB (the
// process's peak so far where Linux's VmHWM is not available); and the
// whole process's peak, set-up included, process-peak-RSS-MiB: what the
// process held at most, loading the informers' objects or in the loop.
func (u *Usage) Report(b *testing.B) {
	var end syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &end)
	cpu := time.Duration(end.Utime.Nano()+end.Stime.Nano()-u.start.Utime.Nano()-u.start.Stime.Nano()) / time.Duration(b.N)
	b.ReportMetric(float64(cpu.Microseconds())/1000, "cpu-ms/op")
	peakKiB := end.Maxrss
	if hwm, ok := vmHWM(); ok {
		peakKiB = hwm
	}
	b.ReportMetric(float64(peakKiB)/1024, "peak-RSS-MiB")
	notePeak()
	b.ReportMetric(float64(processPeakKiB.Load())/1024, "process-peak-RSS-MiB")
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
