package core

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tidal-autoscaler/tidal/core/act"
	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

// starting names the group's registered nodes still starting (counted as
// upcoming by the cluster state: not yet ready, within the provision time)
// that are not being removed, in name order: the nodes its upcoming copies
// stand for first, to which pods planned there are nominated.
func (o *observation) starting(view clusterstate.GroupView) []string {
	var out []string
	for _, name := range view.Starting {
		ni := o.snapshot.NodeInfo(name)
		if ni != nil && ni.Node() != nil && !beingDeleted(ni.Node()) {
			out = append(out, name)
		}
	}
	return out
}

// nominationTargets are the nodes a nomination may stand on: those that
// can take pods now and those still starting.
func (d *Decider) nominationTargets(o *observation) map[string]bool {
	out := d.startingNodes(o)
	for name, obs := range o.observed {
		if obs.Ready {
			out[name] = true
		}
	}
	return out
}

// startingNodes are the groups' registered nodes still starting.
func (d *Decider) startingNodes(o *observation) map[string]bool {
	out := map[string]bool{}
	for _, g := range o.groups {
		for _, name := range o.starting(d.state.Group(g.group.Id())) {
			out[name] = true
		}
	}
	return out
}

// stranded are the pods nominated to a node in the snapshot that can
// neither take pods nor is still starting (it went NotReady, is being
// removed, or is past its provision time), that would be pending but for
// the nomination: they wait for a node like any other, in this iteration.
// (A pod nominated to a node the cluster no longer has is pending already:
// nominatedToMissing.)
func (d *Decider) stranded(o *observation, targets map[string]bool) []*corev1.Pod {
	var out []*corev1.Pod
	for _, ni := range o.snapshot.Infos() {
		if targets[ni.Node().Name] {
			continue
		}
		for _, pi := range ni.GetPods() {
			if p := pi.GetPod(); p.Spec.NodeName == "" && pendingButForNomination(p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// beingDeleted reports whether a node is on its way out: deleted, or
// tainted for deletion.
func beingDeleted(n *corev1.Node) bool {
	return n.DeletionTimestamp != nil ||
		slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == scaledown.ToBeDeletedTaint })
}

// cancelStarting removes the starting nodes no plan needs any more: the
// scheduler bound the pods planned for them on other nodes while they
// started, and they would come up empty (scaledown.UnneededStarting
// decides; the actuator removes them as it removes empty nodes: the
// ToBeDeleted taint first, the node's pods read again from the API server,
// bound and nominated, then the cloud deletes it). Only after a scale-up
// decision made in this iteration without error.
func (d *Decider) cancelStarting(ctx context.Context, o *observation, report *Iteration) {
	if !d.opts.ScaleDown.Enabled || !d.opts.ScaleDown.StartingEnabled {
		return
	}
	in := scaledown.StartingInput{Groups: map[string]scaledown.StartingGroup{}, Unsettled: unsettled(report)}
	planned := map[string]bool{}
	if report.plan != nil {
		for _, node := range report.plan.AwaitingOn {
			planned[node] = true
		}
	}
	for _, g := range o.groups {
		id := g.group.Id()
		minSize, _ := d.sched.effectiveSize(g)
		in.Groups[id] = scaledown.StartingGroup{Target: g.target, Min: minSize,
			Held: d.sched.triggeredWithin(id, o.now, d.opts.groupOptions(o, id).MaxNodeProvisionTime)}
		for _, name := range o.starting(d.state.Group(id)) {
			in.Nodes = append(in.Nodes, scaledown.StartingNode{Name: name, Group: id,
				Pods: occupants(o.snapshot.NodeInfo(name)), Planned: planned[name]})
		}
	}
	dec := scaledown.UnneededStarting(in)
	logger := klog.FromContext(ctx)
	for name, why := range dec.Kept {
		logger.V(4).Info("Starting node with no pod stays", "node", name, "reason", why)
	}
	if len(dec.Cancel) == 0 {
		return
	}
	nodes := nodesByName(o.nodes)
	removals := make([]act.Removal, 0, len(dec.Cancel))
	for _, n := range dec.Cancel {
		logger.Info("Removing a starting node no plan needs: the pods planned for it went to other nodes", "node", n.Name, "nodeGroup", n.Group)
		removals = append(removals, act.Removal{Name: n.Name, Node: nodes[n.Name], Group: o.group(n.Group).group, Kind: scaledown.KindEmpty})
	}
	d.actuator.Remove(d.lifetime, removals)
}

// unsettled says why this iteration's scale-up decision cannot tell which
// starting nodes the pending pods need ("" when it can).
func unsettled(report *Iteration) string {
	switch {
	case report.young > 0:
		return "pods younger than --new-pod-scale-up-delay wait for a scale-up decision"
	case report.plan != nil && report.plan.Skipped > 0:
		return "the scale-up decision ran out of time (--max-binpacking-time)"
	}
	return ""
}

// occupants counts the pods bound or nominated to a node, DaemonSet and
// mirror pods aside.
func occupants(ni *framework.NodeInfo) int {
	n := 0
	for _, pi := range ni.GetPods() {
		if p := pi.GetPod(); !scaledown.IsDaemonSetPod(p) && !scaledown.IsMirror(p) {
			n++
		}
	}
	return n
}
