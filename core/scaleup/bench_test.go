package scaleup

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/benchgen"
	"github.com/tidal-autoscaler/tidal/benchgen/benchload"
	"github.com/tidal-autoscaler/tidal/expander"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// The benchmarks run the scale-up decision on the bench-gen v1 clusters
// (benchgen.S1 to S5, see docs/performance.md) as tidal sees them in a real
// cluster: objects as the API server stores them and tidal's informers keep
// them, nodes and pods in lister order, a new order every iteration.
// Besides ns/op and allocations they report CPU time per operation
// (user+system, from getrusage) and the process's peak RSS so far.

var sizes = []struct {
	name string
	p    func() benchgen.Params
}{{"S1", benchgen.S1}, {"S2", benchgen.S2}, {"S3", benchgen.S3}, {"S4", benchgen.S4}, {"S5", benchgen.S5}}

// listerOrders is how many lister orders of the pending pods a benchmark
// cycles through (drawn before the timer starts).
const listerOrders = 4

// bench is a generated cluster ready for the decision.
type bench struct {
	c     *benchgen.Cluster
	in    Input
	keys  *simulator.EquivalenceKeys
	order [][]*corev1.Pod
	// r draws lister orders and tokens during the benchmark.
	r *rand.Rand
}

// newBench loads the cluster as the node loop holds it and builds the
// decision's input, pending pods grouped in the first lister order.
func newBench(tb testing.TB, c *benchgen.Cluster) *bench {
	r := benchload.Rand(1)
	checker := benchload.Checker(tb, benchload.Snapshot(tb, c, r))
	var groups []Group
	for i, t := range benchload.Templates(tb, c) {
		g := c.NodeGroups[i]
		groups = append(groups, Group{ID: g.ID, Template: t, Min: g.MinSize, Max: g.MaxSize, Target: g.TargetSize})
	}
	chain, _ := expander.ParseChain("least-waste")
	b := &bench{c: c, keys: simulator.NewEquivalenceKeys(), r: r}
	for range listerOrders {
		b.order = append(b.order, benchgen.ListerOrder(r, c.PendingPods))
	}
	b.in = Input{
		Checker: checker, Pending: b.keys.Group(b.order[0]), Groups: groups,
		Chain: chain, ExpanderContext: &expander.Context{Seed: 1},
		Limits: Limits{MaxNodesPerScaleUp: 1000},
	}
	return b
}

// BenchmarkSnapshotLoad is loading a cluster's nodes and running pods into
// a snapshot from scratch, in lister order (tidal does this once, then
// follows changes).
func BenchmarkSnapshotLoad(b *testing.B) {
	for _, s := range sizes {
		b.Run(s.name, func(b *testing.B) {
			c := benchload.Cluster(b, s.p())
			r := benchload.Rand(1)
			b.ReportAllocs()
			u := benchload.StartUsage()
			b.ResetTimer()
			for b.Loop() {
				benchload.Snapshot(b, c, r)
			}
			u.Report(b)
		})
	}
}

// BenchmarkScaleUp times the decision's steps: filtering pending pods
// against existing nodes, estimating every node group, and the whole
// decision as the node loop makes it every iteration: the pending pods,
// listed in a new order, split into equivalence groups (keys cached from
// the iterations before), then filter, estimates, expander, every round.
func BenchmarkScaleUp(b *testing.B) {
	for _, s := range sizes {
		b.Run(s.name, func(b *testing.B) {
			bn := newBench(b, benchload.Cluster(b, s.p()))
			ctx := context.Background()
			b.Run("filter", func(b *testing.B) {
				noGroups := bn.in
				noGroups.Groups = nil
				run(b, func() { mustDecide(b, ctx, noGroups) })
			})
			b.Run("estimate", func(b *testing.B) { benchEstimate(b, ctx, bn.in) })
			b.Run("decision", func(b *testing.B) {
				var plan *Plan
				i := 0
				run(b, func() {
					in := bn.in
					in.Pending = bn.keys.Group(bn.order[i%listerOrders])
					i++
					plan = mustDecide(b, ctx, in)
				})
				b.ReportMetric(float64(len(plan.ScaleUps)), "scale-ups")
				b.ReportMetric(float64(len(bn.in.Pending)), "pod-groups")
			})
		})
	}
}

func run(b *testing.B, f func()) {
	b.ReportAllocs()
	u := benchload.StartUsage()
	b.ResetTimer()
	for b.Loop() {
		f()
	}
	u.Report(b)
}

func mustDecide(b *testing.B, ctx context.Context, in Input) *Plan {
	plan, err := Decide(ctx, in)
	if err != nil {
		b.Fatal(err)
	}
	return plan
}

// benchEstimate times the estimate of every node group for the pods left
// after filtering (the filter itself runs once, untimed).
func benchEstimate(b *testing.B, ctx context.Context, in Input) {
	d := &decision{in: in, plan: &Plan{}, planned: map[string]int{}, start: time.Now()}
	snap := in.Checker.Snapshot()
	snap.Fork()
	defer snap.Revert()
	remaining, err := d.filterSchedulable(ctx)
	if err != nil {
		b.Fatal(err)
	}
	run(b, func() {
		work, err := d.checks(ctx, remaining)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := d.estimateAll(ctx, work, newReasons()); err != nil {
			b.Fatal(err)
		}
	})
}

// TestDecisionOnBenchClusters checks the decision's answers on the
// generated clusters, as the benchmarks see them, so the benchmarks time a
// decision that is right: every pending pod is either placed on existing
// nodes or helped by a scale-up.
func TestDecisionOnBenchClusters(t *testing.T) {
	for _, s := range sizes[:2] {
		bn := newBench(t, benchload.Cluster(t, s.p()))
		plan, err := Decide(context.Background(), bn.in)
		if err != nil {
			t.Fatal(err)
		}
		helped := 0
		for _, u := range plan.ScaleUps {
			helped += len(u.Pods)
			if u.To-u.From > 1000 {
				t.Errorf("%s: scale-up of %s by %d exceeds --max-nodes-per-scaleup", s.name, u.Group, u.To-u.From)
			}
		}
		if plan.FitExisting+helped != len(bn.c.PendingPods) || len(plan.NoScaleUp) != 0 || plan.Skipped != 0 {
			t.Fatalf("%s: %d fit existing + %d helped of %d pending (%d groups unhelped, %d skipped)",
				s.name, plan.FitExisting, helped, len(bn.c.PendingPods), len(plan.NoScaleUp), plan.Skipped)
		}
	}
}
