package scaledown

import (
	"context"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tidal-autoscaler/tidal/benchgen"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// The benchmarks plan scale-down on the bench-gen v1 clusters: eligibility
// and removal simulation for every node under the 0.5 threshold (the
// generator's pending pods play no part). They report CPU time per
// operation and the process's peak RSS so far.

var sizes = []struct {
	name string
	p    func() benchgen.Params
}{{"S1", benchgen.S1}, {"S2", benchgen.S2}, {"S3", benchgen.S3}}

func benchInput(tb testing.TB, c *benchgen.Cluster) Input {
	snap := simulator.NewSnapshot()
	for _, n := range c.Nodes {
		if _, err := snap.AddNode(n); err != nil {
			tb.Fatal(err)
		}
	}
	for _, pod := range c.RunningPods {
		pi, _ := framework.NewPodInfo(pod)
		if err := snap.AddPod(pi, pod.Spec.NodeName); err != nil {
			tb.Fatal(err)
		}
	}
	ctx := context.Background()
	// The informer factory serves the volume plugins' listers, empty here.
	factory := informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
	checker, err := simulator.NewChecker(ctx, snap, factory, nil)
	if err != nil {
		tb.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	groups := map[string]GroupSize{}
	groupOf := map[string]string{}
	for _, g := range c.NodeGroups {
		groups[g.ID] = GroupSize{Target: g.TargetSize, Min: g.MinSize}
	}
	var candidates []Candidate
	for _, n := range c.Nodes {
		groupOf[n.Name] = n.Labels[benchgen.LabelNodeGroup]
		candidates = append(candidates, Candidate{Name: n.Name, Group: groupOf[n.Name], Threshold: 0.5})
	}
	rs := map[string]bool{}
	for _, r := range c.ReplicaSets {
		rs[r.Namespace+"/"+r.Name] = true
	}
	return Input{
		Checker: checker, Candidates: candidates, Groups: groups, Now: time.Now(),
		Owners: func(ns string, ref metav1.OwnerReference) (bool, bool) {
			return rs[ns+"/"+ref.Name], ref.Kind == "ReplicaSet"
		},
		Rules:                       RuleOptions{SkipNodesWithSystemPods: true, SkipNodesWithLocalStorage: true, SkipNodesWithCustomControllerPods: true},
		IgnoreDaemonSetsUtilization: true,
	}
}

func BenchmarkScaleDownPlan(b *testing.B) {
	for _, s := range sizes {
		b.Run(s.name, func(b *testing.B) {
			in := benchInput(b, benchgen.Generate(s.p()))
			var plan *Plan
			b.ReportAllocs()
			var start, end syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &start)
			b.ResetTimer()
			for b.Loop() {
				var err error
				if plan, err = Decide(context.Background(), in); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &end)
			cpu := time.Duration(end.Utime.Nano()+end.Stime.Nano()-start.Utime.Nano()-start.Stime.Nano()) / time.Duration(b.N)
			b.ReportMetric(float64(cpu.Microseconds())/1000, "cpu-ms/op")
			b.ReportMetric(float64(end.Maxrss)/1024, "peak-RSS-MiB")
			under := 0
			for _, u := range plan.Unremovable {
				if u.Reason != NotUnderutilized {
					under++
				}
			}
			b.ReportMetric(float64(len(plan.Unneeded)+under), "candidates")
			b.ReportMetric(float64(len(plan.Unneeded)), "unneeded")
		})
	}
}

// BenchmarkScaleDownPlanUnchanged is the next loop when nothing changed:
// the planner returns the plan it made.
func BenchmarkScaleDownPlanUnchanged(b *testing.B) {
	for _, s := range sizes {
		b.Run(s.name, func(b *testing.B) {
			in := benchInput(b, benchgen.Generate(s.p()))
			var p Planner
			if _, _, err := p.Plan(context.Background(), in); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, reused, err := p.Plan(context.Background(), in); err != nil || !reused {
					b.Fatalf("plan not reused (err %v)", err)
				}
			}
		})
	}
}
