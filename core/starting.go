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
	"github.com/tidal-autoscaler/tidal/core/scaleup"
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

// removeUnusedNew removes the new nodes no plan needs: the scheduler bound
// the pods planned for them on other nodes while they started, and they
// would wait empty for scale-down (scaledown.UnusedNewNodes decides; the
// actuator removes them as it removes empty nodes: the ToBeDeleted taint
// first, the node's pods read again from the API server, bound and
// nominated, then the cloud deletes it). unsettled says why this
// iteration's scale-up decision cannot tell which nodes its pods need (""
// when it can): nothing goes then, and the new nodes are still followed.
func (d *Decider) removeUnusedNew(ctx context.Context, o *observation, report *Iteration, unsettled string) {
	if !d.opts.ScaleDown.Enabled || !d.opts.ScaleDown.UnusedNewNodesEnabled {
		d.mem.unused = nil
		return
	}
	if unsettled == "" {
		unsettled = unsettledPlan(report)
	}
	in := scaledown.UnusedInput{Groups: map[string]scaledown.NewNodeGroup{}, Unused: d.mem.unused, Unsettled: unsettled,
		Nodes: d.newNodes(o, plannedNodes(report.plan))}
	for _, g := range o.groups {
		id := g.group.Id()
		minSize, _ := d.sched.effectiveSize(g)
		held := d.sched.triggeredWithin(id, o.now, d.opts.groupOptions(o, id).MaxNodeProvisionTime)
		if f := d.mem.consolidation.InFlight; f != nil && f.Group == id {
			// A replacement's new nodes take their pods once the old
			// nodes drain, after they are ready.
			held = "a consolidation's replacement nodes are coming"
		}
		in.Groups[id] = scaledown.NewNodeGroup{Target: g.target, Min: minSize, Held: held}
	}
	dec := scaledown.UnusedNewNodes(in)
	d.mem.unused = dec.Unused
	logger := klog.FromContext(ctx)
	for name, why := range dec.Kept {
		logger.V(4).Info("New node with no pod stays", "node", name, "reason", why)
	}
	if len(dec.Remove) == 0 {
		return
	}
	nodes := nodesByName(o.nodes)
	removals := make([]act.Removal, 0, len(dec.Remove))
	for _, n := range dec.Remove {
		logger.Info("Removing a new node no plan needs: the pods planned for it went to other nodes while it started",
			"node", n.Name, "nodeGroup", n.Group, "ready", n.Ready)
		removals = append(removals, act.Removal{Name: n.Name, Node: nodes[n.Name], Group: o.group(n.Group).group, Kind: scaledown.KindEmpty})
	}
	d.actuator.Remove(d.lifetime, removals)
}

// newNodes are the groups' starting nodes and the ready ones tidal saw
// starting and unused since (d.mem.unused), none being removed, with their
// pods and whether planned holds pods for them.
func (d *Decider) newNodes(o *observation, planned map[string]bool) []scaledown.NewNode {
	var out []scaledown.NewNode
	add := func(name, group string, ready bool) {
		ni := o.snapshot.NodeInfo(name)
		if ni == nil || ni.Node() == nil || beingDeleted(ni.Node()) {
			return
		}
		n := scaledown.NewNode{Name: name, Group: group, Ready: ready, Planned: planned[name]}
		n.Bound, n.Nominated = occupants(ni)
		if why, off := scaledown.Disabled(ni.Node()); off {
			n.Held = why
		}
		out = append(out, n)
	}
	for _, g := range o.groups {
		for _, name := range o.starting(d.state.Group(g.group.Id())) {
			add(name, g.group.Id(), false)
		}
	}
	for name := range d.mem.unused {
		if obs, ok := o.observed[name]; ok && obs.Ready && o.groupOfNode[name] != "" {
			add(name, o.groupOfNode[name], true)
		}
	}
	return out
}

// plannedNodes are the nodes the scale-up plan placed pending pods on:
// ready ones and starting ones.
func plannedNodes(plan *scaleup.Plan) map[string]bool {
	out := map[string]bool{}
	if plan == nil {
		return out
	}
	for _, node := range plan.AwaitingOn {
		out[node] = true
	}
	for _, pl := range plan.OnExisting {
		out[pl.Node] = true
	}
	return out
}

// unsettledPlan says why this iteration's scale-up decision cannot tell
// which new nodes the pending pods need ("" when it can).
func unsettledPlan(report *Iteration) string {
	switch {
	case report.young > 0:
		return "pods younger than --new-pod-scale-up-delay wait for a scale-up decision"
	case report.plan != nil && report.plan.Skipped > 0:
		return "the scale-up decision ran out of time (--max-binpacking-time)"
	}
	return ""
}

// occupants counts the pods bound to a node and the pending pods
// nominated to it, DaemonSet and mirror pods aside.
func occupants(ni *framework.NodeInfo) (bound, nominated int) {
	for _, pi := range ni.GetPods() {
		p := pi.GetPod()
		switch {
		case scaledown.IsDaemonSetPod(p) || scaledown.IsMirror(p):
		case p.Spec.NodeName != "":
			bound++
		default:
			nominated++
		}
	}
	return bound, nominated
}
