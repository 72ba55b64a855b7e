package hpa

import (
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// MetricData is what the caller fetched for one MetricSpec.
type MetricData struct {
	// PodMetrics holds per-pod samples for Resource, ContainerResource (the
	// named container's usage) and Pods metrics.
	PodMetrics PodMetrics
	// ObjectValue is the described object's value for Object metrics.
	ObjectValue int64
	// ExternalValues holds one value per series for External metrics.
	ExternalValues []int64
	// Timestamp is the sample time the metrics API reported.
	Timestamp time.Time
	// Err is the fetch error; the metric then counts as invalid.
	Err error
}

// Snapshot is the state of the scale target at one instant.
type Snapshot struct {
	// Now is the evaluation time.
	Now time.Time
	// SpecReplicas is scale.spec.replicas, the current replica count.
	SpecReplicas int32
	// StatusReplicas is scale.status.replicas (used by AverageValue targets
	// of Object and External metrics).
	StatusReplicas int32
	// Pods are the pods scale.status.selector matches.
	Pods []*v1.Pod
}

// Params are the per-autoscaler calculation settings.
type Params struct {
	Tolerances Tolerances
	Readiness  Readiness
}

// MetricResult is the outcome for one metric.
type MetricResult struct {
	// Replicas is the proposal (meaningless when Err is set).
	Replicas int32
	// Proposal holds the raw figures behind Status.
	Proposal Proposal
	// Utilization is true for Utilization targets (Proposal.Utilization is set).
	Utilization bool
	// Status is the entry for status.currentMetrics; zero when Err is set,
	// as Kubernetes leaves it.
	Status autoscalingv2.MetricStatus
	// Timestamp is the metric's sample time. Like Kubernetes, it is zero for
	// Object and External metrics with a Value target.
	Timestamp time.Time
	// Name describes the metric in messages, as Kubernetes words it.
	Name string
	// Err is the failure, and Condition the ScalingActive=False condition
	// Kubernetes would set for it.
	Err       error
	Condition Condition
}

// ComputeMetric computes one metric's proposal and status entry.
func ComputeMetric(s Snapshot, p Params, spec autoscalingv2.MetricSpec, d MetricData) MetricResult {
	switch spec.Type {
	case autoscalingv2.ResourceMetricSourceType:
		return resourceMetric(s, p, spec, d)
	case autoscalingv2.ContainerResourceMetricSourceType:
		return containerResourceMetric(s, p, spec, d)
	case autoscalingv2.PodsMetricSourceType:
		return podsMetric(s, p, spec, d)
	case autoscalingv2.ObjectMetricSourceType:
		return objectMetric(s, p, spec, d)
	case autoscalingv2.ExternalMetricSourceType:
		return externalMetric(s, p, spec, d)
	}
	return failed(ReasonInvalidMetricSourceType, fmt.Errorf("unknown metric source type %q", spec.Type))
}

// failed is the result of a metric that could not be computed.
func failed(reason string, err error) MetricResult {
	return MetricResult{Err: err, Condition: unableToComputeCondition(reason, err)}
}

// podInput assembles the pod-based calculation input.
func podInput(s Snapshot, p Params, d MetricData) PodInput {
	return PodInput{
		Now:             s.Now,
		CurrentReplicas: s.SpecReplicas,
		Pods:            s.Pods,
		Metrics:         d.PodMetrics,
		Tolerances:      p.Tolerances,
		Readiness:       p.Readiness,
	}
}

// resourceMetric handles a Resource metric.
func resourceMetric(s Snapshot, p Params, spec autoscalingv2.MetricSpec, d MetricData) MetricResult {
	src := spec.Resource
	if src == nil {
		return failed(ReasonFailedGetResourceMetric, constError("resource metric source is missing"))
	}
	r := resourceGeneric(s, p, src.Name, "", src.Target, d, "resource")
	if r.Err != nil {
		return failed(ReasonFailedGetResourceMetric, fmt.Errorf("failed to get %s resource metric value: %w", src.Name, r.Err))
	}
	r.Status = autoscalingv2.MetricStatus{
		Type:     autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricStatus{Name: src.Name, Current: valueStatus(r, src.Name)},
	}
	return r
}

// containerResourceMetric handles a ContainerResource metric.
func containerResourceMetric(s Snapshot, p Params, spec autoscalingv2.MetricSpec, d MetricData) MetricResult {
	src := spec.ContainerResource
	if src == nil {
		return failed(ReasonFailedGetContainerResourceMetric, constError("container resource metric source is missing"))
	}
	r := resourceGeneric(s, p, src.Name, src.Container, src.Target, d, "container resource")
	if r.Err != nil {
		return failed(ReasonFailedGetContainerResourceMetric, fmt.Errorf("failed to get %s container metric value: %w", src.Container, r.Err))
	}
	r.Status = autoscalingv2.MetricStatus{
		Type: autoscalingv2.ContainerResourceMetricSourceType,
		ContainerResource: &autoscalingv2.ContainerResourceMetricStatus{
			Name: src.Name, Container: src.Container, Current: valueStatus(r, src.Name),
		},
	}
	return r
}

// resourceGeneric runs the AverageValue (checked first, whatever the target
// type says) or Utilization calculation of a (container) resource metric.
func resourceGeneric(s Snapshot, p Params, name v1.ResourceName, container string, target autoscalingv2.MetricTarget, d MetricData, kind string) MetricResult {
	if d.Err != nil {
		return MetricResult{Err: fmt.Errorf("unable to get metrics for resource %s: %w", name, d.Err)}
	}
	in := podInput(s, p, d)
	if target.AverageValue != nil {
		prop, err := PlainReplicas(in, name, target.AverageValue.MilliValue())
		if err != nil {
			return MetricResult{Err: fmt.Errorf("failed to get %s usage: %w", name, err)}
		}
		return MetricResult{Replicas: prop.Replicas, Proposal: prop, Timestamp: d.Timestamp, Name: fmt.Sprintf("%s resource", name)}
	}
	if target.AverageUtilization == nil {
		return MetricResult{Err: constError("invalid resource metric source: neither an average utilization target nor an average value (usage) target was set")}
	}
	prop, err := ResourceUtilizationReplicas(in, name, container, *target.AverageUtilization)
	if err != nil {
		return MetricResult{Err: fmt.Errorf("failed to get %s utilization: %w", name, err)}
	}
	return MetricResult{
		Replicas: prop.Replicas, Proposal: prop, Utilization: true, Timestamp: d.Timestamp,
		Name: fmt.Sprintf("%s %s utilization (percentage of request)", name, kind),
	}
}

// valueStatus is the current value of a (container) resource metric; memory
// is formatted in binary SI, like metrics-server reports it.
func valueStatus(r MetricResult, name v1.ResourceName) autoscalingv2.MetricValueStatus {
	format := resource.DecimalSI
	if name == v1.ResourceMemory {
		format = resource.BinarySI
	}
	avg := resource.NewMilliQuantity(r.Proposal.Value, format)
	if !r.Utilization {
		return autoscalingv2.MetricValueStatus{AverageValue: avg}
	}
	util := r.Proposal.Utilization
	return autoscalingv2.MetricValueStatus{AverageUtilization: &util, AverageValue: avg}
}

// podsMetric handles a Pods metric.
func podsMetric(s Snapshot, p Params, spec autoscalingv2.MetricSpec, d MetricData) MetricResult {
	src := spec.Pods
	switch {
	case src == nil:
		return failed(ReasonFailedGetPodsMetric, constError("pods metric source is missing"))
	case src.Target.AverageValue == nil:
		return failed(ReasonFailedGetPodsMetric, constError("invalid pods metric source: no average value target was set"))
	case d.Err != nil:
		return failed(ReasonFailedGetPodsMetric, fmt.Errorf("unable to get metric %s: %w", src.Metric.Name, d.Err))
	}
	prop, err := PlainReplicas(podInput(s, p, d), "", src.Target.AverageValue.MilliValue())
	if err != nil {
		return failed(ReasonFailedGetPodsMetric, fmt.Errorf("failed to get pods metric value: %w", err))
	}
	return MetricResult{
		Replicas: prop.Replicas, Proposal: prop, Timestamp: d.Timestamp,
		Name: fmt.Sprintf("pods metric %s", src.Metric.Name),
		Status: autoscalingv2.MetricStatus{
			Type: autoscalingv2.PodsMetricSourceType,
			Pods: &autoscalingv2.PodsMetricStatus{
				Metric:  src.Metric,
				Current: autoscalingv2.MetricValueStatus{AverageValue: milli(prop.Value)},
			},
		},
	}
}

// milli returns a decimal quantity of v milli-units.
func milli(v int64) *resource.Quantity {
	return resource.NewMilliQuantity(v, resource.DecimalSI)
}
