package scaleup

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/benchgen"
	"github.com/tidal-autoscaler/tidal/benchgen/benchload"
	"github.com/tidal-autoscaler/tidal/simulator/simtest"
)

// BenchmarkScaleUpOneChange is the scale-up decision of the iterations
// after a scale-up while its nodes are coming (as BenchmarkScaleUpUnchanged),
// one change apart: in turn a pending pod added (a new replica, with its
// own token volume), that pod gone, a running pod gone from its node, and
// that pod bound again. Each iteration lists the pending pods in a new
// order, sorts them from the last order and groups them as the node loop
// does, and decides:
// mode=incremental as the node loop does (Memory, the last decision's
// Reuse), mode=scratch from scratch (what every changed iteration cost
// before Reuse). reused-groups/op counts the pod groups whose placements
// were reused, resumed-groups/op those whose first placements were.
func BenchmarkScaleUpOneChange(b *testing.B) {
	for _, s := range sizes {
		b.Run(s.name, func(b *testing.B) {
			bn := newBench(b, benchload.Cluster(b, s.p()))
			ctx := context.Background()
			in := settled(b, ctx, bn)
			for _, mode := range []string{"incremental", "scratch"} {
				b.Run("mode="+mode, func(b *testing.B) {
					ch := &oneChange{bn: bn, pending: slices.Clone(bn.c.PendingPods)}
					var m Memory
					// The node loop sorts the pending pods from the last
					// iteration's order.
					var order PendingOrder
					order.sort(loopOrder(bn.c.PendingPods))
					if _, _, err := m.Decide(ctx, in); err != nil {
						b.Fatal(err)
					}
					reused, resumed := 0, 0
					run(b, func() {
						ch.next(b)
						next := in
						listed := benchgen.ListerOrder(bn.r, ch.pending)
						order.sort(listed)
						next.Pending = bn.keys.Group(listed)
						var plan *Plan
						var err error
						if mode == "incremental" {
							plan, _, err = m.Decide(ctx, next)
						} else {
							plan, err = Decide(ctx, next)
						}
						if err != nil {
							b.Fatal(err)
						}
						reused += plan.ReusedGroups
						resumed += plan.ResumedGroups
					})
					ch.undo(b)
					b.ReportMetric(float64(reused)/float64(b.N), "reused-groups/op")
					b.ReportMetric(float64(resumed)/float64(b.N), "resumed-groups/op")
				})
			}
		})
	}
}

// oneChange makes the benchmark's changes, one per iteration.
type oneChange struct {
	bn      *bench
	pending []*corev1.Pod
	i       int
	added   *corev1.Pod
	gone    *corev1.Pod
}

// next makes the next change.
func (o *oneChange) next(b *testing.B) {
	snap := o.bn.in.Checker.Snapshot()
	switch o.i % 4 {
	case 0:
		like := o.bn.c.PendingPods[(o.i/4)%len(o.bn.c.PendingPods)]
		o.added = simtest.NewReplica(like, o.i, o.bn.r)
		o.pending = append(o.pending, o.added)
	case 1:
		o.pending = slices.DeleteFunc(o.pending, func(p *corev1.Pod) bool { return p == o.added })
	case 2:
		o.gone = o.bn.c.RunningPods[(o.i/4*7919)%len(o.bn.c.RunningPods)]
		if err := snap.RemovePod(o.gone, o.gone.Spec.NodeName); err != nil {
			b.Fatal(err)
		}
	case 3:
		if err := snap.AddPod(podInfo(b, o.gone), o.gone.Spec.NodeName); err != nil {
			b.Fatal(err)
		}
		o.gone = nil
	}
	o.i++
}

// undo puts back a running pod the changes took away.
func (o *oneChange) undo(b *testing.B) {
	if o.gone != nil {
		if err := o.bn.in.Checker.Snapshot().AddPod(podInfo(b, o.gone), o.gone.Spec.NodeName); err != nil {
			b.Fatal(fmt.Errorf("put back %s: %w", o.gone.Name, err))
		}
	}
}
