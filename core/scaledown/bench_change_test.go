package scaledown

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tidal-autoscaler/tidal/benchgen/benchload"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// BenchmarkScaleDownPlanOneChange is the scale-down plan of iterations one
// change apart, on the clusters and candidates of BenchmarkScaleDownPlan:
// in turn a running pod added to a node (a new replica of a pod there),
// that pod gone, a running pod gone from its node, and that pod bound
// again. mode=incremental plans as the node loop does (Planner, the last
// plan's Reuse), mode=scratch from scratch as the Planner did before Reuse
// on every changed iteration (equivalent pods sharing one PreFilter). reused-removals/op counts the removals taken again,
// simulated/op every removal simulated or taken again.
func BenchmarkScaleDownPlanOneChange(b *testing.B) {
	for _, s := range sizes {
		b.Run(s.name, func(b *testing.B) {
			ins := benchInputs(b, benchload.Cluster(b, s.p()))
			ctx := context.Background()
			for _, mode := range []string{"incremental", "scratch"} {
				b.Run("mode="+mode, func(b *testing.B) {
					ch := &downOneChange{snap: ins[0].Checker.Snapshot()}
					var p Planner
					keys := simulator.NewEquivalenceKeys()
					if _, _, err := p.Plan(ctx, ins[0]); err != nil {
						b.Fatal(err)
					}
					i, reused, simulated := 1, 0, 0
					b.ReportAllocs()
					u := benchload.StartUsage()
					b.ResetTimer()
					for b.Loop() {
						ch.next(b)
						in := ins[i%listerOrders]
						var plan *Plan
						var err error
						if mode == "incremental" {
							plan, _, err = p.Plan(ctx, in)
						} else {
							plan, err = decide(ctx, in, keys, nil)
						}
						if err != nil {
							b.Fatal(err)
						}
						reused += plan.ReusedRemovals
						simulated += len(plan.Unneeded)
						for _, u := range plan.Unremovable {
							if u.Reason == NoPlaceToMovePods {
								simulated++
							}
						}
						i++
					}
					b.StopTimer()
					u.Report(b)
					ch.undo(b)
					b.ReportMetric(float64(reused)/float64(b.N), "reused-removals/op")
					b.ReportMetric(float64(simulated)/float64(b.N), "simulated/op")
				})
			}
		})
	}
}

// downOneChange makes the benchmark's changes, one per iteration, on nodes
// spread over the cluster.
type downOneChange struct {
	snap  *simulator.Snapshot
	i     int
	added *corev1.Pod
	gone  *corev1.Pod
	node  string
}

func (o *downOneChange) next(b *testing.B) {
	infos := o.snap.Infos()
	ni := infos[(o.i*7919)%len(infos)].(*framework.NodeInfo)
	switch o.i % 4 {
	case 0:
		like := ni.Pods[0].GetPod()
		o.added = like.DeepCopy()
		o.added.Name, o.added.UID, o.added.ResourceVersion = fmt.Sprintf("%s-new-%d", like.Name, o.i), types.UID(fmt.Sprintf("uid-bench-%d", o.i)), fmt.Sprint(3_000_000+o.i)
		o.node = ni.Node().Name
		must(b, o.snap.AddPod(podInfoOf(b, o.added), o.node))
	case 1:
		must(b, o.snap.RemovePod(o.added, o.node))
		o.added = nil
	case 2:
		o.gone, o.node = ni.Pods[len(ni.Pods)-1].GetPod(), ni.Node().Name
		must(b, o.snap.RemovePod(o.gone, o.node))
	case 3:
		must(b, o.snap.AddPod(podInfoOf(b, o.gone), o.node))
		o.gone = nil
	}
	o.i++
}

// undo leaves the snapshot as it found it.
func (o *downOneChange) undo(b *testing.B) {
	if o.added != nil {
		must(b, o.snap.RemovePod(o.added, o.node))
	}
	if o.gone != nil {
		must(b, o.snap.AddPod(podInfoOf(b, o.gone), o.node))
	}
}

func must(b *testing.B, err error) {
	if err != nil {
		b.Fatal(err)
	}
}

func podInfoOf(b *testing.B, p *corev1.Pod) *framework.PodInfo {
	pi, err := framework.NewPodInfo(p)
	must(b, err)
	return pi
}
