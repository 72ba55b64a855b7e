package scaledown

import (
	"context"
	"testing"
	"time"

	"github.com/tidal-autoscaler/tidal/benchgen"
	"github.com/tidal-autoscaler/tidal/benchgen/benchload"
)

// The benchmarks plan scale-down on the bench-gen v1 clusters as tidal sees
// them in a real cluster (objects as the API server stores them and tidal's
// informers keep them, nodes and pods in lister order): eligibility and
// removal simulation for every node under the 0.5 threshold (the
// generator's pending pods play no part). The candidates come in the
// nodes' lister order, a new one every iteration, as the node loop lists
// them. They report CPU time per operation and the process's peak RSS so
// far.

var sizes = []struct {
	name string
	p    func() benchgen.Params
}{{"S1", benchgen.S1}, {"S2", benchgen.S2}, {"S3", benchgen.S3}, {"S4", benchgen.S4}, {"S5", benchgen.S5}}

// listerOrders is how many lister orders of the candidates a benchmark
// cycles through.
const listerOrders = 4

// benchInputs returns the plan's input in listerOrders lister orders of
// the candidates; the snapshot is shared.
func benchInputs(tb testing.TB, c *benchgen.Cluster) []Input {
	r := benchload.Rand(1)
	checker := benchload.Checker(tb, benchload.Snapshot(tb, c, r))
	groups := map[string]GroupSize{}
	for _, g := range c.NodeGroups {
		groups[g.ID] = GroupSize{Target: g.TargetSize, Min: g.MinSize}
	}
	owners := Owners{Kinds: map[string]bool{"ReplicaSet": true}, Existing: map[OwnerKey]bool{}}
	for _, r := range c.ReplicaSets {
		owners.Existing[OwnerKey{Kind: "ReplicaSet", Namespace: r.Namespace, Name: r.Name}] = true
	}
	base := Input{
		Checker: checker, Groups: groups, Now: time.Now(),
		Owners: owners,
		Rules:  RuleOptions{SkipNodesWithSystemPods: true, SkipNodesWithLocalStorage: true, SkipNodesWithCustomControllerPods: true},
	}
	ins := make([]Input, listerOrders)
	for i := range ins {
		ins[i] = base
		for _, n := range benchgen.ListerOrder(r, c.Nodes) {
			ins[i].Candidates = append(ins[i].Candidates, Candidate{Name: n.Name, Group: n.Labels[benchgen.LabelNodeGroup], Threshold: 0.5,
				IgnoreDaemonSetsUtilization: true})
		}
	}
	return ins
}

func BenchmarkScaleDownPlan(b *testing.B) {
	for _, s := range sizes {
		b.Run(s.name, func(b *testing.B) {
			ins := benchInputs(b, benchload.Cluster(b, s.p()))
			var plan *Plan
			i := 0
			b.ReportAllocs()
			u := benchload.StartUsage()
			b.ResetTimer()
			for b.Loop() {
				var err error
				if plan, err = Decide(context.Background(), ins[i%listerOrders]); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.StopTimer()
			u.Report(b)
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

// BenchmarkScaleDownPlanUnchanged is the next iteration when nothing
// changed but the order the lister returns the nodes in: the planner should
// return the plan it made. reused/op is the share of iterations where it
// did (1 is the target).
func BenchmarkScaleDownPlanUnchanged(b *testing.B) {
	for _, s := range sizes {
		b.Run(s.name, func(b *testing.B) {
			ins := benchInputs(b, benchload.Cluster(b, s.p()))
			var p Planner
			if _, _, err := p.Plan(context.Background(), ins[0]); err != nil {
				b.Fatal(err)
			}
			i, reused := 1, 0
			b.ReportAllocs()
			u := benchload.StartUsage()
			b.ResetTimer()
			for b.Loop() {
				_, ok, err := p.Plan(context.Background(), ins[i%listerOrders])
				if err != nil {
					b.Fatal(err)
				}
				if ok {
					reused++
				}
				i++
			}
			b.StopTimer()
			u.Report(b)
			b.ReportMetric(float64(reused)/float64(b.N), "reused/op")
		})
	}
}
