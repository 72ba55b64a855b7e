package hpa

import (
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// MetricsInput is one autoscaler's metric evaluation input.
type MetricsInput struct {
	Snapshot
	Params
	// Metrics is spec.metrics, unchanged.
	Metrics []autoscalingv2.MetricSpec
	// Data is index-aligned with Metrics; a missing entry is a fetch failure.
	Data []MetricData
	// Watermarks is index-aligned with Metrics; nil entries (or a shorter
	// slice) mean plain Kubernetes behaviour for that metric.
	Watermarks []*Watermarks
	// MinReplicas and MaxReplicas bound the watermarks' per-step limits.
	MinReplicas, MaxReplicas int32
}

// Combined is the outcome over all metrics.
type Combined struct {
	// Replicas is the largest proposal, or -1 with Err set when no
	// decision can be made (see NoDecision). A metric with a negative value
	// can also propose -1 (or less): that is a decision, for zero replicas.
	Replicas int32
	// MetricName names the metric that gave Replicas.
	MetricName string
	// Statuses is status.currentMetrics (zero entries for failed metrics).
	Statuses []autoscalingv2.MetricStatus
	// Timestamp is the winning metric's sample time (zero when Replicas is -1).
	Timestamp time.Time
	// Condition is ScalingActive: ValidMetricFound, or the first failed
	// metric's FailedGet*Metric condition when Replicas is -1.
	Condition Condition
	// Err summarises the failures; it may be set while Replicas is valid,
	// which Kubernetes treats as "scale, then report an error".
	Err error
	// Failures lists every failed metric in spec order, with the reason
	// Kubernetes gives it in a warning event.
	Failures []MetricFailure
}

// MetricFailure is one metric that could not be computed.
type MetricFailure struct {
	// Index is the metric's position in spec.metrics.
	Index int
	// Reason is the ScalingActive reason, also the event reason
	// (FailedGetResourceMetric, FailedGetExternalMetric, ...).
	Reason string
	// Err is the failure.
	Err error
}

// ComputeReplicasForMetrics evaluates every metric and keeps the largest
// proposal. A failed metric blocks scale-down but not scale-up: if all metrics
// fail, or some fail and the largest proposal is below spec replicas, the
// result is -1 with the first failure's condition. An empty metrics list also
// gives -1 (Kubernetes never sees one: its API defaults a cpu metric, see
// DefaultSpec).
func ComputeReplicasForMetrics(in MetricsInput) Combined {
	if len(in.Metrics) == 0 {
		err := constError("no metrics to compute a replica count from")
		return Combined{Replicas: -1, Condition: unableToComputeCondition(ReasonInvalidMetricSourceType, err), Err: err}
	}
	c := Combined{Statuses: make([]autoscalingv2.MetricStatus, len(in.Metrics))}
	invalid := 0
	var first MetricResult
	for i, spec := range in.Metrics {
		r := in.evaluate(i, spec)
		c.Statuses[i] = r.Status
		if r.Err != nil {
			if invalid == 0 {
				first = r
			}
			invalid++
			c.Failures = append(c.Failures, MetricFailure{Index: i, Reason: r.Condition.Reason, Err: r.Err})
			continue
		}
		if c.Replicas == 0 || r.Replicas > c.Replicas {
			c.Replicas, c.MetricName, c.Timestamp = r.Replicas, r.Name, r.Timestamp
		}
	}
	if invalid > 0 {
		c.Err = fmt.Errorf("invalid metrics (%d invalid out of %d), first error is: %w", invalid, len(in.Metrics), first.Err)
	}
	if invalid >= len(in.Metrics) || (invalid > 0 && c.Replicas < in.SpecReplicas) {
		c.Replicas, c.MetricName, c.Timestamp, c.Condition = -1, "", time.Time{}, first.Condition
		return c
	}
	c.Condition = newCondition(autoscalingv2.ScalingActive, true, ReasonValidMetricFound,
		fmt.Sprintf("the HPA was able to successfully calculate a replica count from %s", c.MetricName))
	return c
}

// NoDecision reports that the metrics allow no decision: every metric
// failed, or some failed and the rest would scale below spec replicas. Then
// nothing may be rescaled and status.desiredReplicas keeps its old value.
// Like Kubernetes, it takes both the error and the -1: a -1 proposed by
// valid metrics alone is a decision.
func (c Combined) NoDecision() bool {
	return c.Replicas == -1 && c.Err != nil
}

// evaluate computes metric i, applying its watermarks if it has any.
func (in MetricsInput) evaluate(i int, spec autoscalingv2.MetricSpec) MetricResult {
	if i >= len(in.Data) {
		return failed(failureReason(spec.Type), fmt.Errorf("no data was fetched for metric %d", i))
	}
	r := ComputeMetric(in.Snapshot, in.Params, spec, in.Data[i])
	if r.Err != nil || i >= len(in.Watermarks) || in.Watermarks[i] == nil {
		return r
	}
	return applyWatermarks(r, in.Watermarks[i], in.SpecReplicas, in.MinReplicas, in.MaxReplicas)
}

// failureReason is the ScalingActive reason for a failure of a metric type.
func failureReason(t autoscalingv2.MetricSourceType) string {
	switch t {
	case autoscalingv2.ResourceMetricSourceType:
		return ReasonFailedGetResourceMetric
	case autoscalingv2.ContainerResourceMetricSourceType:
		return ReasonFailedGetContainerResourceMetric
	case autoscalingv2.PodsMetricSourceType:
		return ReasonFailedGetPodsMetric
	case autoscalingv2.ObjectMetricSourceType:
		return ReasonFailedGetObjectMetric
	case autoscalingv2.ExternalMetricSourceType:
		return ReasonFailedGetExternalMetric
	}
	return ReasonInvalidMetricSourceType
}
