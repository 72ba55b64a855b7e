package core

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// schedulingChanged tells whether a node update changes what the
// simulations read: what the scheduler counts as a change of a node's
// scheduling properties (unschedulable, allocatable, labels, taints,
// condition statuses, annotations, declared features), and capacity. A
// status update that only renews heartbeat times, images or volumes in use
// (at 5,000 nodes many a second) changes nothing, so plans made on the
// snapshot still hold.
func schedulingChanged(old, n *corev1.Node) bool {
	return old.Spec.Unschedulable != n.Spec.Unschedulable ||
		!equality.Semantic.DeepEqual(old.Status.Allocatable, n.Status.Allocatable) ||
		!equality.Semantic.DeepEqual(old.Status.Capacity, n.Status.Capacity) ||
		!maps.Equal(old.Labels, n.Labels) ||
		!maps.Equal(old.Annotations, n.Annotations) ||
		!equality.Semantic.DeepEqual(old.Spec.Taints, n.Spec.Taints) ||
		!maps.Equal(conditionStatuses(old), conditionStatuses(n)) ||
		!slices.Equal(old.Status.DeclaredFeatures, n.Status.DeclaredFeatures)
}

func conditionStatuses(n *corev1.Node) map[corev1.NodeConditionType]corev1.ConditionStatus {
	out := make(map[corev1.NodeConditionType]corev1.ConditionStatus, len(n.Status.Conditions))
	for _, c := range n.Status.Conditions {
		out[c.Type] = c.Status
	}
	return out
}

// simulationChanged tells whether a pod update (on the same node) changes
// what the simulations and the drain rules read: the spec (its generation
// moves with every spec change), labels, annotations (safe-to-evict, mirror
// pods), controllers, deletion, and the resources a resize has allocated
// or applied. Readiness, IPs and container states do not count.
func simulationChanged(old, p *corev1.Pod) bool {
	return old.Generation != p.Generation ||
		!maps.Equal(old.Labels, p.Labels) ||
		!maps.Equal(old.Annotations, p.Annotations) ||
		!equality.Semantic.DeepEqual(old.OwnerReferences, p.OwnerReferences) ||
		!equality.Semantic.DeepEqual(old.DeletionTimestamp, p.DeletionTimestamp) ||
		!equality.Semantic.DeepEqual(old.DeletionGracePeriodSeconds, p.DeletionGracePeriodSeconds) ||
		!equality.Semantic.DeepEqual(resizeState(old), resizeState(p))
}

// resized is what the scheduler reads from a pod's status to compute its
// requests while it is being resized in place.
// Its fields are exported for equality.Semantic, which compares
// quantities by value.
type resized struct {
	Pod        *corev1.ResourceRequirements
	Allocated  corev1.ResourceList
	Containers []containerResources
	Pending    string
}

type containerResources struct {
	Name      string
	Resources *corev1.ResourceRequirements
	Allocated corev1.ResourceList
}

func resizeState(p *corev1.Pod) resized {
	r := resized{Pod: p.Status.Resources, Allocated: p.Status.AllocatedResources}
	for _, statuses := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range statuses {
			if cs.Resources != nil || cs.AllocatedResources != nil {
				r.Containers = append(r.Containers, containerResources{cs.Name, cs.Resources, cs.AllocatedResources})
			}
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodResizePending {
			r.Pending = string(c.Status) + "/" + c.Reason
		}
	}
	return r
}
