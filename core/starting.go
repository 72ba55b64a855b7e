package core

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

// starting names, in order, at most upcoming registered nodes of group
// that cannot take pods yet (unready, or behind a startup taint) and are
// not being removed: the nodes the group's upcoming copies stand for first,
// to which pods planned there are nominated.
func (o *observation) starting(group string, upcoming int) []string {
	var out []string
	for _, n := range o.nodes {
		if o.groupOfNode[n.Name] == group && !o.observed[n.Name].Ready && !beingDeleted(n) {
			out = append(out, n.Name)
		}
	}
	slices.Sort(out)
	return out[:min(len(out), upcoming)]
}

// beingDeleted reports whether a node is on its way out: deleted, or
// tainted for deletion.
func beingDeleted(n *corev1.Node) bool {
	return n.DeletionTimestamp != nil ||
		slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == scaledown.ToBeDeletedTaint })
}
