package hpa

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
)

// DefaultCPUUtilization is the target of the metric Kubernetes adds to an
// autoscaler that lists none.
const DefaultCPUUtilization int32 = 80

// DefaultSpec returns a copy of spec defaulted as the Kubernetes API server
// defaults autoscaling/v2 objects: minReplicas 1, a cpu Utilization metric at
// 80% when no metric is listed, and behavior rules filled field by field when
// a behavior is present (the scale-down window stays unset; the controller
// fills it from its flag, see DefaultBehavior). The input is not modified.
// Reconcile does not default the spec itself: call this where tidal's API
// defaulting runs, or before fetching metrics.
func DefaultSpec(spec autoscalingv2.HorizontalPodAutoscalerSpec) autoscalingv2.HorizontalPodAutoscalerSpec {
	out := *spec.DeepCopy()
	if out.MinReplicas == nil {
		one := int32(1)
		out.MinReplicas = &one
	}
	if len(out.Metrics) == 0 {
		target := DefaultCPUUtilization
		out.Metrics = []autoscalingv2.MetricSpec{{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{
				Name:   v1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &target},
			},
		}}
	}
	out.Behavior = apiDefaultBehavior(out.Behavior)
	return out
}
