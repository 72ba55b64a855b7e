package core

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

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
