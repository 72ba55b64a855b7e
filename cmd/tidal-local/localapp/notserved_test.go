package localapp

import (
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
)

// A PodAutoscaler tidal-local does not serve gets ScalingActive=False,
// NotServed, in place of its ScalingActive condition, its others kept;
// once marked, it is not marked again.
func TestMarkNotServed(t *testing.T) {
	able := autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "SucceededGetScale"}
	for _, tc := range []struct {
		name       string
		conditions []autoscalingv2.HorizontalPodAutoscalerCondition
	}{
		{"no status", nil},
		{"served before", []autoscalingv2.HorizontalPodAutoscalerCondition{able,
			{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionTrue, Reason: "ValidMetricFound"}}},
		{"another reason", []autoscalingv2.HorizontalPodAutoscalerCondition{
			{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionFalse, Reason: "InvalidSpec"}, able}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pa := &v1alpha1.PodAutoscaler{}
			pa.Status.Conditions = tc.conditions
			if notServed(pa) {
				t.Fatal("unmarked PodAutoscaler reads as not served")
			}
			markNotServed(pa, metav1.Now())
			if !notServed(pa) {
				t.Fatalf("conditions %+v after marking", pa.Status.Conditions)
			}
			active, others := 0, 0
			for _, c := range pa.Status.Conditions {
				switch c.Type {
				case autoscalingv2.ScalingActive:
					active++
				case autoscalingv2.AbleToScale:
					others++
				}
			}
			wantOthers := 0
			if len(tc.conditions) > 0 {
				wantOthers = 1
			}
			if active != 1 || others != wantOthers {
				t.Errorf("conditions %+v: %d ScalingActive, %d AbleToScale; want 1 and %d", pa.Status.Conditions, active, others, wantOthers)
			}
		})
	}
}
