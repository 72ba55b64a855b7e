package hpa

import (
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Scale to zero, as KEDA does it on top of the HPA: an autoscaler whose
// spec.minReplicas is 0 and which has at least one Object or External
// metric may leave its workload at zero replicas. At zero only those
// metrics are read (no pod reports the others); the workload is activated,
// to one replica at once, when any of them is above its activation
// threshold. While it runs, the usual calculation decides; it goes back to
// zero when every activation metric is at or below its threshold, through
// the usual stabilization and scale-down policies.

// Condition reasons of scale to zero.
const (
	ReasonBelowActivation  = "BelowActivationThreshold"
	msgBelowActivation     = "every activation metric is at or below its activation threshold"
	reasonDeactivated      = "All activation metrics at or below their activation thresholds"
	reasonActivatedPattern = "%s above its activation threshold"
)

// IsActivationMetric tells whether a metric can be read at zero replicas.
func IsActivationMetric(m autoscalingv2.MetricSpec) bool {
	return m.Type == autoscalingv2.ObjectMetricSourceType || m.Type == autoscalingv2.ExternalMetricSourceType
}

// ScaleToZeroEnabled tells whether an autoscaler may scale its workload to
// zero: spec.minReplicas is 0 and a metric can be read at zero.
func ScaleToZeroEnabled(spec autoscalingv2.HorizontalPodAutoscalerSpec) bool {
	if spec.MinReplicas == nil || *spec.MinReplicas != 0 {
		return false
	}
	for _, m := range spec.Metrics {
		if IsActivationMetric(m) {
			return true
		}
	}
	return false
}

// Activation is the verdict of the activation metrics.
type Activation struct {
	// Active is set when some activation metric is above its threshold.
	Active bool
	// Metric names the first metric found above its threshold.
	Metric string
	// Statuses is status.currentMetrics for the activation metrics (zero
	// entries for the others and for failed ones).
	Statuses []autoscalingv2.MetricStatus
	// Failures lists the activation metrics that could not be read; with
	// any and none active, nothing is known: no decision.
	Failures []MetricFailure
	// Condition is the first failure's ScalingActive condition.
	Condition Condition
	// Err summarises the failures.
	Err error
}

// Activate reads the activation metrics (Object and External) of specs
// against their thresholds (index-aligned, nil: 0): a metric is active when
// its value (an Object metric's value; the sum of an External metric's
// series) is above its threshold. A metric that could not be read is never
// taken for one below its threshold.
func Activate(specs []autoscalingv2.MetricSpec, data []MetricData, thresholds []*resource.Quantity) Activation {
	a := Activation{Statuses: make([]autoscalingv2.MetricStatus, len(specs))}
	for i, spec := range specs {
		if !IsActivationMetric(spec) {
			continue
		}
		var d MetricData
		if i < len(data) {
			d = data[i]
		} else {
			d.Err = fmt.Errorf("no data was fetched for metric %d", i)
		}
		value, name, err := activationValue(spec, d)
		if err != nil {
			if len(a.Failures) == 0 {
				a.Condition = unableToComputeCondition(failureReason(spec.Type), err)
			}
			a.Failures = append(a.Failures, MetricFailure{Index: i, Reason: failureReason(spec.Type), Err: err})
			continue
		}
		a.Statuses[i] = activationStatus(spec, value)
		if value > threshold(thresholds, i) && !a.Active {
			a.Active, a.Metric = true, name
		}
	}
	if n := len(a.Failures); n > 0 {
		a.Err = fmt.Errorf("invalid activation metrics (%d invalid), first error is: %w", n, a.Failures[0].Err)
	}
	return a
}

// threshold is metric i's activation threshold in milli-units (0 when unset).
func threshold(thresholds []*resource.Quantity, i int) int64 {
	if i >= len(thresholds) || thresholds[i] == nil {
		return 0
	}
	return thresholds[i].MilliValue()
}

// activationValue is an activation metric's value in milli-units and its
// name in messages, or the error Kubernetes would report for it.
func activationValue(spec autoscalingv2.MetricSpec, d MetricData) (int64, string, error) {
	if spec.Type == autoscalingv2.ObjectMetricSourceType {
		if spec.Object == nil {
			return 0, "", constError("object metric source is missing")
		}
		src := spec.Object
		if d.Err != nil {
			return 0, "", fmt.Errorf("unable to get metric %s on %s %s: %w",
				src.Metric.Name, src.DescribedObject.Kind, src.DescribedObject.Name, d.Err)
		}
		return d.ObjectValue, fmt.Sprintf("%s metric %s", src.DescribedObject.Kind, src.Metric.Name), nil
	}
	if spec.External == nil {
		return 0, "", constError("external metric source is missing")
	}
	src := spec.External
	switch {
	case d.Err != nil:
		return 0, "", fmt.Errorf("unable to get external metric %s: %w", src.Metric.Name, d.Err)
	case len(d.ExternalValues) == 0:
		return 0, "", fmt.Errorf("failed to get external metric %s: %w", src.Metric.Name, errNoExternalValues)
	}
	return sumSaturating(d.ExternalValues), externalName(src.Metric), nil
}

// activationStatus reports an activation metric's value in its status,
// as a Value or (for AverageValue targets) as the value one replica would
// have.
func activationStatus(spec autoscalingv2.MetricSpec, value int64) autoscalingv2.MetricStatus {
	v := autoscalingv2.MetricValueStatus{Value: milli(value)}
	if spec.Type == autoscalingv2.ObjectMetricSourceType {
		if spec.Object.Target.Type == autoscalingv2.AverageValueMetricType {
			v = autoscalingv2.MetricValueStatus{AverageValue: milli(value)}
		}
		return autoscalingv2.MetricStatus{Type: spec.Type, Object: &autoscalingv2.ObjectMetricStatus{
			DescribedObject: spec.Object.DescribedObject, Metric: spec.Object.Metric, Current: v}}
	}
	if spec.External.Target.AverageValue != nil {
		v = autoscalingv2.MetricValueStatus{AverageValue: milli(value)}
	}
	return autoscalingv2.MetricStatus{Type: spec.Type, External: &autoscalingv2.ExternalMetricStatus{
		Metric: spec.External.Metric, Current: v}}
}

// reconcileAtZero decides for a workload at zero replicas whose autoscaler
// may scale to zero: activate to one replica at once (no stabilization or
// policy holds it back), stay at zero, or, when a metric failed and none
// is active, decide nothing.
func reconcileAtZero(in ReconcileInput, d Decision) Decision {
	a := Activate(in.Spec.Metrics, in.Data, in.Activation)
	d.MetricStatuses, d.Failures, d.Err = a.Statuses, a.Failures, a.Err
	switch {
	case a.Active:
		d.MetricReplicas, d.MetricName = 1, a.Metric
		d.Conditions = setCondition(d.Conditions, newCondition(autoscalingv2.ScalingActive, true, ReasonValidMetricFound,
			fmt.Sprintf("the HPA was able to successfully calculate a replica count from %s: above its activation threshold", a.Metric)))
		return clamped(d, 1, fmt.Sprintf(reasonActivatedPattern, a.Metric))
	case a.Err != nil:
		d.Conditions = setCondition(d.Conditions, a.Condition)
		d.DesiredReplicas = -1
		return d
	}
	d.MetricReplicas = 0
	d.Conditions = setCondition(d.Conditions, newCondition(autoscalingv2.ScalingActive, true, ReasonBelowActivation, msgBelowActivation))
	d.Conditions = setCondition(d.Conditions, newCondition(autoscalingv2.ScaledToZero, true, ReasonBelowActivation, msgBelowActivation))
	return d
}

// activeProposal adjusts the metrics' proposal of a running workload that
// may scale to zero: zero when every activation metric was read and is at
// or below its threshold, else at least one.
func activeProposal(in ReconcileInput, proposal int32) (int32, bool) {
	a := Activate(in.Spec.Metrics, in.Data, in.Activation)
	if !a.Active && a.Err == nil {
		return 0, true
	}
	return max(proposal, 1), false
}
