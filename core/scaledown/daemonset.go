package scaledown

import corev1 "k8s.io/api/core/v1"

// EnableDSEvictionAnnotation on a DaemonSet pod says whether a removal
// evicts it ("true") or leaves it to go with the node ("false"), whatever
// the flags; Cluster Autoscaler's name.
const EnableDSEvictionAnnotation = "cluster-autoscaler.kubernetes.io/enable-ds-eviction"

// DaemonSetEviction is whether removals evict DaemonSet pods before the
// node goes: --daemonset-eviction-for-occupied-nodes and
// --daemonset-eviction-for-empty-nodes.
type DaemonSetEviction struct {
	OccupiedNodes bool
	EmptyNodes    bool
}

// Evicts says whether the removal of a node, empty or not (no pods to
// move), evicts its DaemonSet pod p.
func (d DaemonSetEviction) Evicts(p *corev1.Pod, empty bool) bool {
	switch p.Annotations[EnableDSEvictionAnnotation] {
	case "true":
		return true
	case "false":
		return false
	}
	if empty {
		return d.EmptyNodes
	}
	return d.OccupiedNodes
}
