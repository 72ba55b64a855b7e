// Package benchload puts bench-gen clusters where tidal's decisions find
// them, the way the node loop does in a real cluster, for benchmarks and
// tests: objects as the API server stores them and tidal's informers keep
// them, nodes and pods in the random order the loop receives them.
package benchload

import (
	"math/rand/v2"
	"testing"

	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tidal-autoscaler/tidal/benchgen"
	"github.com/tidal-autoscaler/tidal/simulator"
	"github.com/tidal-autoscaler/tidal/simulator/checkertest"
)

// Cluster generates the cluster of p as tidal's informers hold it: every
// object as the API server stores it (benchgen's Store: defaults,
// admission, statuses, managed fields), sent in Kubernetes' protobuf
// (tidal's default content type) and decoded as client-go decodes a watch
// stream (so that every object has its own
// allocations, as in an informer's cache), then passed to tidal's informer
// transform (a trim.Sharer's: trimmed, pods sharing what replicas have in
// common), one object at a time as an informer does (see watch).
//
// The generator's memory is the API server's side, not tidal's: the
// process's peak RSS is restarted once the stream is written and the
// generated objects are dropped (forgetPeak), so the whole-process peak
// the benchmarks report (process-peak-RSS-MiB) starts with the informers
// receiving the stream. The generator's own peak is logged.
func Cluster(tb testing.TB, p benchgen.Params) *benchgen.Cluster {
	tb.Helper()
	c := benchgen.Generate(p)
	w, err := newWatch()
	if err != nil {
		tb.Fatal(err)
	}
	defer w.close()
	if err := c.Store(benchgen.StoreOptions{Transform: w.send}); err != nil {
		tb.Fatalf("store the %d-node cluster: %v", p.N, err)
	}
	if peak, ok := forgetPeak(); ok {
		tb.Logf("generating and storing the %d-node cluster peaked at %d MiB (not counted in process-peak-RSS-MiB)", p.N, peak/1024)
	}
	if err := w.receive(c); err != nil {
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
