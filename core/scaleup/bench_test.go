package scaleup

import (
	"context"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tidal-autoscaler/tidal/benchgen"
	"github.com/tidal-autoscaler/tidal/expander"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// The benchmarks run the scale-up decision on the bench-gen v1 clusters
// (benchgen.S1/S2/S3, see docs/performance.md). Besides ns/op and
// allocations they report CPU time per operation (user+system, from
// getrusage) and the process's peak RSS so far.

var sizes = []struct {
	name string
	p    func() benchgen.Params
}{{"S1", benchgen.S1}, {"S2", benchgen.S2}, {"S3", benchgen.S3}}

// loadSnapshot puts the cluster's nodes and running pods in a snapshot.
func loadSnapshot(tb testing.TB, c *benchgen.Cluster) *simulator.Snapshot {
	snap := simulator.NewSnapshot()
	for _, n := range c.Nodes {
		if _, err := snap.AddNode(n); err != nil {
			tb.Fatal(err)
		}
	}
	for _, pod := range c.RunningPods {
		pi, err := framework.NewPodInfo(pod)
		if err != nil {
			tb.Fatal(err)
		}
		if err := snap.AddPod(pi, pod.Spec.NodeName); err != nil {
			tb.Fatal(err)
		}
	}
	return snap
}

// benchInput builds the decision's input for a generated cluster. The
// informer factory only serves the volume plugins' listers, empty here: the
// generated clusters have no volumes.
func benchInput(tb testing.TB, c *benchgen.Cluster) Input {
	snap := loadSnapshot(tb, c)
	ctx := context.Background()
	factory := informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
	checker, err := simulator.NewChecker(ctx, snap, factory, nil)
	if err != nil {
		tb.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	var groups []Group
	for _, g := range c.NodeGroups {
		t, err := simulator.NewNodeTemplate(g.ID, g.Template, nil)
		if err != nil {
			tb.Fatal(err)
		}
		groups = append(groups, Group{ID: g.ID, Template: t, Min: g.MinSize, Max: g.MaxSize, Target: g.TargetSize})
	}
	chain, _ := expander.ParseChain("least-waste")
	return Input{
		Checker: checker, Pending: simulator.NewEquivalenceKeys().Group(c.PendingPods), Groups: groups,
		Chain: chain, ExpanderContext: &expander.Context{Rand: rand.New(rand.NewPCG(1, 1))},
		Limits: Limits{MaxNodesPerScaleUp: 1000},
	}
}

// usage reports CPU time per op and peak RSS around a benchmark loop.
type usage struct{ start syscall.Rusage }

func startUsage() *usage {
	u := &usage{}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &u.start)
	return u
}

func (u *usage) report(b *testing.B) {
	var end syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &end)
	cpu := time.Duration(end.Utime.Nano()+end.Stime.Nano()-u.start.Utime.Nano()-u.start.Stime.Nano()) / time.Duration(b.N)
	b.ReportMetric(float64(cpu.Microseconds())/1000, "cpu-ms/op")
	b.ReportMetric(float64(end.Maxrss)/1024, "peak-RSS-MiB")
}

// BenchmarkSnapshotLoad is loading a cluster's nodes and running pods into
// a snapshot from scratch (tidal does this once, then follows changes).
func BenchmarkSnapshotLoad(b *testing.B) {
	for _, s := range sizes {
		b.Run(s.name, func(b *testing.B) {
			c := benchgen.Generate(s.p())
			b.ReportAllocs()
			u := startUsage()
			b.ResetTimer()
			for b.Loop() {
				loadSnapshot(b, c)
			}
			u.report(b)
		})
	}
}

// BenchmarkScaleUp times the decision's steps: filtering pending pods
// against existing nodes, estimating every node group, and the whole
// decision (filter, estimates, expander, every round).
func BenchmarkScaleUp(b *testing.B) {
	for _, s := range sizes {
		b.Run(s.name, func(b *testing.B) {
			in := benchInput(b, benchgen.Generate(s.p()))
			ctx := context.Background()
			b.Run("filter", func(b *testing.B) {
				noGroups := in
				noGroups.Groups = nil
				run(b, func() { mustDecide(b, ctx, noGroups) })
			})
			b.Run("estimate", func(b *testing.B) { benchEstimate(b, ctx, in) })
			b.Run("decision", func(b *testing.B) {
				var plan *Plan
				run(b, func() { plan = mustDecide(b, ctx, in) })
				b.ReportMetric(float64(len(plan.ScaleUps)), "scale-ups")
			})
		})
	}
}

func run(b *testing.B, f func()) {
	b.ReportAllocs()
	u := startUsage()
	b.ResetTimer()
	for b.Loop() {
		f()
	}
	u.report(b)
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
	d.in.Now = time.Now
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
// generated clusters, so the benchmarks time a decision that is right: every
// pending pod is either placed on existing nodes or helped by a scale-up.
func TestDecisionOnBenchClusters(t *testing.T) {
	for _, s := range sizes[:2] {
		c := benchgen.Generate(s.p())
		plan, err := Decide(context.Background(), benchInput(t, c))
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
		if plan.FitExisting+helped != len(c.PendingPods) || len(plan.NoScaleUp) != 0 || plan.Skipped != 0 {
			t.Fatalf("%s: %d fit existing + %d helped of %d pending (%d groups unhelped, %d skipped)",
				s.name, plan.FitExisting, helped, len(c.PendingPods), len(plan.NoScaleUp), plan.Skipped)
		}
	}
}
