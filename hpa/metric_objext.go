package hpa

import (
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// objectMetric handles an Object metric: a Value target (type Value) is
// relative to spec replicas, an AverageValue target to status replicas.
func objectMetric(s Snapshot, p Params, spec autoscalingv2.MetricSpec, d MetricData) MetricResult {
	src := spec.Object
	if src == nil {
		return failed(ReasonFailedGetObjectMetric, constError("object metric source is missing"))
	}
	if d.Err != nil {
		return failed(ReasonFailedGetObjectMetric, fmt.Errorf("unable to get metric %s on %s %s: %w",
			src.Metric.Name, src.DescribedObject.Kind, src.DescribedObject.Name, d.Err))
	}
	status := func(v autoscalingv2.MetricValueStatus) autoscalingv2.MetricStatus {
		return autoscalingv2.MetricStatus{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricStatus{
			DescribedObject: src.DescribedObject, Metric: src.Metric, Current: v,
		}}
	}
	t := src.Target
	switch {
	case t.Type == autoscalingv2.ValueMetricType && t.Value != nil:
		prop, err := ObjectValueReplicas(s.SpecReplicas, d.ObjectValue, t.Value.MilliValue(), p.Tolerances, s.Pods)
		if err != nil {
			return failed(ReasonFailedGetObjectMetric, fmt.Errorf("failed to get object metric value: %w", err))
		}
		return MetricResult{Replicas: prop.Replicas, Proposal: prop,
			Name:   fmt.Sprintf("%s metric %s", src.DescribedObject.Kind, src.Metric.Name),
			Status: status(autoscalingv2.MetricValueStatus{Value: milli(prop.Value)})}
	case t.Type == autoscalingv2.AverageValueMetricType && t.AverageValue != nil:
		prop := ObjectAverageValueReplicas(s.StatusReplicas, d.ObjectValue, t.AverageValue.MilliValue(), p.Tolerances)
		return MetricResult{Replicas: prop.Replicas, Proposal: prop, Timestamp: d.Timestamp,
			Name:   externalName(src.Metric),
			Status: status(autoscalingv2.MetricValueStatus{AverageValue: milli(prop.Value)})}
	}
	return failed(ReasonFailedGetObjectMetric, constError("invalid object metric source: neither a value target nor an average value target was set"))
}

// externalMetric handles an External metric: an AverageValue target (checked
// first) is relative to status replicas, a Value target to spec replicas.
func externalMetric(s Snapshot, p Params, spec autoscalingv2.MetricSpec, d MetricData) MetricResult {
	src := spec.External
	if src == nil {
		return failed(ReasonFailedGetExternalMetric, constError("external metric source is missing"))
	}
	if d.Err != nil {
		return failed(ReasonFailedGetExternalMetric, fmt.Errorf("unable to get external metric %s: %w", src.Metric.Name, d.Err))
	}
	result := func(prop Proposal, v autoscalingv2.MetricValueStatus) MetricResult {
		return MetricResult{Replicas: prop.Replicas, Proposal: prop, Name: externalName(src.Metric),
			Status: autoscalingv2.MetricStatus{Type: autoscalingv2.ExternalMetricSourceType,
				External: &autoscalingv2.ExternalMetricStatus{Metric: src.Metric, Current: v}}}
	}
	t := src.Target
	switch {
	case t.AverageValue != nil:
		prop, err := ExternalAverageValueReplicas(s.StatusReplicas, d.ExternalValues, t.AverageValue.MilliValue(), p.Tolerances)
		if err != nil {
			return failed(ReasonFailedGetExternalMetric, fmt.Errorf("failed to get %s external metric: %w", src.Metric.Name, err))
		}
		r := result(prop, autoscalingv2.MetricValueStatus{AverageValue: milli(prop.Value)})
		r.Timestamp = d.Timestamp
		return r
	case t.Value != nil:
		prop, err := ExternalValueReplicas(s.SpecReplicas, d.ExternalValues, t.Value.MilliValue(), p.Tolerances, s.Pods)
		if err != nil {
			return failed(ReasonFailedGetExternalMetric, fmt.Errorf("failed to get external metric %s: %w", src.Metric.Name, err))
		}
		return result(prop, autoscalingv2.MetricValueStatus{Value: milli(prop.Value)})
	}
	return failed(ReasonFailedGetExternalMetric, constError("invalid external metric source: neither a value target nor an average value target was set"))
}

// externalName is how Kubernetes names External metrics in messages, and,
// by an upstream quirk, Object metrics with an AverageValue target too.
func externalName(m autoscalingv2.MetricIdentifier) string {
	return fmt.Sprintf("external metric %s(%+v)", m.Name, m.Selector)
}
