package scaledown

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDaemonSetEviction(t *testing.T) {
	plain := &corev1.Pod{}
	annotated := func(v string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{EnableDSEvictionAnnotation: v}}}
	}
	tests := []struct {
		flags DaemonSetEviction
		pod   *corev1.Pod
		empty bool
		want  bool
	}{
		{DaemonSetEviction{OccupiedNodes: true}, plain, false, true},
		{DaemonSetEviction{OccupiedNodes: true}, plain, true, false},
		{DaemonSetEviction{EmptyNodes: true}, plain, true, true},
		{DaemonSetEviction{EmptyNodes: true}, plain, false, false},
		{DaemonSetEviction{}, annotated("true"), true, true},
		{DaemonSetEviction{OccupiedNodes: true, EmptyNodes: true}, annotated("false"), false, false},
		{DaemonSetEviction{EmptyNodes: true}, annotated("maybe"), true, true},
	}
	for _, tc := range tests {
		name := fmt.Sprintf("%+v annotations %v empty %v", tc.flags, tc.pod.Annotations, tc.empty)
		if got := tc.flags.Evicts(tc.pod, tc.empty); got != tc.want {
			t.Errorf("%s: evicts %v, want %v", name, got, tc.want)
		}
	}
}
