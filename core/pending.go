package core

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/core/scaleup"
)

// IsUnschedulable reports whether the scheduler tried pod and found no node
// for it: not bound, not being deleted, and PodScheduled=False with reason
// Unschedulable.
func IsUnschedulable(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

// defaultScheduler is the scheduler whose pods tidal scales for.
const defaultScheduler = corev1.DefaultSchedulerName

// IsPending reports whether pod waits for a node: unschedulable, or not yet
// tried by the scheduler (no PodScheduled condition). Pods held by
// scheduling gates, nominated to a node by preemption, or for another
// scheduler are not pending here. Counting untried pods lets one decision
// cover a burst the scheduler is still working through; the simulation
// drops those that fit existing nodes.
func IsPending(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || isTerminal(pod) ||
		len(pod.Spec.SchedulingGates) > 0 || pod.Status.NominatedNodeName != "" {
		return false
	}
	if s := pod.Spec.SchedulerName; s != "" && s != defaultScheduler {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return true
}

// IsNodeReady reports whether node's Ready condition is True.
func IsNodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// isTerminal reports whether pod has finished and holds no resources.
func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// PodScaleUpDelayAnnotation overrides --new-pod-scale-up-delay for a pod,
// as in Cluster Autoscaler.
const PodScaleUpDelayAnnotation = scaleup.PodScaleUpDelayAnnotation
