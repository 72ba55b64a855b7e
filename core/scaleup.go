package core

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/estimator"
	"github.com/tidal-autoscaler/tidal/expander"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// GroupState is what the scale-up decision knows of a node group.
type GroupState struct {
	ID       string
	Template *corev1.Node
	Target   int
	Max      int
	// Upcoming counts requested nodes that have not registered and become
	// Ready yet.
	Upcoming int
}

// NodeState is a ready node and the pods bound to it.
type NodeState struct {
	Node *corev1.Node
	Pods []*corev1.Pod
}

// ScaleUpPlan is the outcome of a scale-up decision. Option is nil when no
// group should grow; Reason then says why.
type ScaleUpPlan struct {
	Option *expander.Option
	// Remaining are the pending pods that do not fit on existing nodes.
	Remaining []*corev1.Pod
	Reason    string
}

// PlanScaleUp decides which group to grow for the pending pods, and by how
// much. Pods that fit on the free capacity of ready nodes are dropped first;
// while requested nodes are still coming up nothing more is asked for.
func PlanScaleUp(pending []*corev1.Pod, nodes []NodeState, groups []GroupState, strategy expander.Strategy) ScaleUpPlan {
	remaining := dropSchedulable(pending, nodes)
	if len(remaining) == 0 {
		return ScaleUpPlan{Reason: "every pending pod fits on existing nodes"}
	}
	plan := ScaleUpPlan{Remaining: remaining}
	for _, g := range groups {
		if g.Upcoming > 0 {
			plan.Reason = fmt.Sprintf("waiting for %d upcoming node(s) of group %s", g.Upcoming, g.ID)
			return plan
		}
	}
	var options []expander.Option
	for _, g := range groups {
		if g.Target >= g.Max {
			continue
		}
		est := estimator.Naive(remaining, g.Template)
		if est.NodeCount == 0 {
			continue
		}
		options = append(options, expander.Option{
			NodeGroup: g.ID, NodeCount: min(est.NodeCount, g.Max-g.Target), Pods: est.Pods, Template: g.Template,
		})
	}
	if len(options) == 0 {
		plan.Reason = fmt.Sprintf("no node group can help %d pending pod(s)", len(remaining))
		return plan
	}
	best := strategy.BestOptions(options)
	plan.Option = &best[0]
	return plan
}

// dropSchedulable packs pending pods, largest first, onto the free capacity
// of ready nodes and returns those that do not fit.
func dropSchedulable(pending []*corev1.Pod, nodes []NodeState) []*corev1.Pod {
	free := make([]simulator.Resources, len(nodes))
	for i, n := range nodes {
		free[i] = simulator.Allocatable(n.Node)
		for _, p := range n.Pods {
			if !isTerminal(p) {
				free[i] = free[i].Sub(simulator.PodRequests(p))
			}
		}
	}
	sorted := append([]*corev1.Pod(nil), pending...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := simulator.PodRequests(sorted[i]), simulator.PodRequests(sorted[j])
		return a.MilliCPU > b.MilliCPU || (a.MilliCPU == b.MilliCPU && a.Memory > b.Memory)
	})
	var remaining []*corev1.Pod
	for _, p := range sorted {
		if i := firstFit(p, nodes, free); i >= 0 {
			free[i] = free[i].Sub(simulator.PodRequests(p))
			continue
		}
		remaining = append(remaining, p)
	}
	return remaining
}

func firstFit(p *corev1.Pod, nodes []NodeState, free []simulator.Resources) int {
	req := simulator.PodRequests(p)
	for i, n := range nodes {
		if !free[i].Covers(req) {
			continue
		}
		if ok, _ := simulator.NodeAccepts(p, n.Node); ok {
			return i
		}
	}
	return -1
}
