package core

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func unschedulablePod() *corev1.Pod {
	return &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
	}}}}
}

func TestPendingAndUnschedulable(t *testing.T) {
	tests := []struct {
		name                   string
		mutate                 func(*corev1.Pod)
		pending, unschedulable bool
	}{
		{"unschedulable", func(*corev1.Pod) {}, true, true},
		{"not yet tried", func(p *corev1.Pod) { p.Status.Conditions = nil }, true, false},
		{"bound", func(p *corev1.Pod) { p.Spec.NodeName = "n" }, false, false},
		{"deleting", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }, false, false},
		{"gated", func(p *corev1.Pod) {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "g"}}
			p.Status.Conditions[0].Reason = corev1.PodReasonSchedulingGated
		}, false, false},
		{"nominated", func(p *corev1.Pod) { p.Status.NominatedNodeName = "n" }, false, true},
		{"other scheduler", func(p *corev1.Pod) { p.Spec.SchedulerName = "volcano" }, false, true},
		{"failed", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }, false, true},
	}
	for _, tc := range tests {
		p := unschedulablePod()
		tc.mutate(p)
		if got := IsPending(p); got != tc.pending {
			t.Errorf("%s: IsPending = %v, want %v", tc.name, got, tc.pending)
		}
		if got := IsUnschedulable(p); got != tc.unschedulable {
			t.Errorf("%s: IsUnschedulable = %v, want %v", tc.name, got, tc.unschedulable)
		}
	}
}
