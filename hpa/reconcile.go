package hpa

import (
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Rescale reasons for the cases decided without metrics.
const (
	reasonAboveMax = "Current number of replicas above Spec.MaxReplicas"
	reasonBelowMin = "Current number of replicas below Spec.MinReplicas"
	reasonBelow    = "All metrics below target"
)

// ReconcileInput is everything one autoscaler's sync needs, after the caller
// successfully read /scale and fetched the metrics.
type ReconcileInput struct {
	// Spec is the autoscaler spec (scaleTargetRef is not read), defaulted
	// as the API server would (see DefaultSpec); an empty metrics list makes
	// no decision here.
	Spec autoscalingv2.HorizontalPodAutoscalerSpec
	// Watermarks is index-aligned with Spec.Metrics (see MetricsInput).
	Watermarks []*Watermarks
	// History is what the previous sync returned (zero for a new autoscaler).
	History History
	Snapshot
	// Data is index-aligned with Spec.Metrics.
	Data []MetricData
	// Floor is what open scheduled windows raise spec.minReplicas to
	// (zero value: no window is open); see EffectiveMinReplicas.
	Floor Floor
	// Activation is index-aligned with Spec.Metrics: the activation
	// thresholds of Object and External metrics (nil entries: 0), read
	// when the autoscaler may scale to zero (see ScaleToZeroEnabled).
	Activation []*resource.Quantity
	// ScaleToZero opts in to scale to zero for an autoscaler with
	// spec.minReplicas 0 (see ScaleToZeroEnabled). tidal sets it for
	// PodAutoscalers; a HorizontalPodAutoscaler keeps Kubernetes'
	// behaviour without its alpha HPAScaleToZero gate.
	ScaleToZero bool
}

// Decision is the outcome of one sync.
type Decision struct {
	// DesiredReplicas is the count to write to /scale when Rescale is set,
	// and to status.desiredReplicas. It is -1 when the metrics allowed no
	// decision: do not rescale and keep the old status.desiredReplicas.
	DesiredReplicas int32
	// Rescale tells whether /scale must be updated.
	Rescale bool
	// Reason is the rescale reason Kubernetes puts in its events.
	Reason string
	// MetricReplicas is the combined metric proposal before normalization
	// (-1 when none was computed or no decision was possible, and also
	// when a negative metric value proposed it).
	MetricReplicas int32
	// MetricName names the metric behind MetricReplicas.
	MetricName string
	// MetricStatuses is status.currentMetrics (nil when metrics were not
	// evaluated).
	MetricStatuses []autoscalingv2.MetricStatus
	// MetricTimestamp is the winning metric's sample time.
	MetricTimestamp time.Time
	// Conditions are the conditions this sync sets, at most one per type,
	// in the order Kubernetes first sets them. Status adds the outcome of
	// the PUT of /scale.
	Conditions []Condition
	// Removed are the condition types this sync removes from the status.
	Removed []autoscalingv2.HorizontalPodAutoscalerConditionType
	// History is the updated history to persist. After a successful
	// rescale pass it through RecordScaleEvent.
	History History
	// Err reports metric failures; it can be set alongside a valid decision.
	Err error
	// Failures lists the failed metrics, one warning event each.
	Failures []MetricFailure
}

// Reconcile runs one sync of an autoscaler the way the Kubernetes HPA
// controller's reconcile does after reading /scale (without the alpha
// HPAScaleToZero gate): seed the history; then with zero current replicas
// scaling is disabled (and a ScaledToZero condition removed); above max or
// below min the count is clamped without looking at metrics; otherwise the
// metrics' proposal is normalized without or with behavior. Decision.Status
// gives the status once /scale was written.
//
// tidal's additions change nothing for an autoscaler without them: min is
// the effective minimum (open scheduled windows raise it, see Floor), and
// an autoscaler that may scale to zero (ScaleToZero) is activated
// from zero and deactivated to zero by its activation metrics.
func Reconcile(cfg Config, in ReconcileInput) Decision {
	current := in.SpecReplicas
	d := Decision{
		MetricReplicas: -1,
		History:        SeedRecommendation(in.History, current, in.Now),
		Conditions: []Condition{newCondition(autoscalingv2.AbleToScale, true,
			ReasonSucceededGetScale, msgSucceededGetScale)},
	}
	minReplicas := EffectiveMinReplicas(in.Spec, in.Floor)
	zero := in.ScaleToZero && ScaleToZeroEnabled(in.Spec)
	switch {
	case current == 0 && !zero:
		d.Conditions = setCondition(d.Conditions, newCondition(autoscalingv2.ScalingActive, false,
			ReasonScalingDisabled, msgScalingDisabled))
		d.Removed = []autoscalingv2.HorizontalPodAutoscalerConditionType{autoscalingv2.ScaledToZero}
		return d
	case current > in.Spec.MaxReplicas:
		return clamped(d, in.Spec.MaxReplicas, reasonAboveMax)
	case current < minReplicas:
		return clamped(d, minReplicas, reasonBelowMin+raisedBy(in.Spec, in.Floor))
	case current == 0:
		return reconcileAtZero(in, d)
	}
	return reconcileMetrics(cfg, in, d, minReplicas)
}

// specMinReplicas returns spec.minReplicas, defaulting to 1.
func specMinReplicas(spec autoscalingv2.HorizontalPodAutoscalerSpec) int32 {
	if spec.MinReplicas == nil {
		return 1
	}
	return *spec.MinReplicas
}

// clamped is the decision for a current count outside [min, max].
func clamped(d Decision, desired int32, reason string) Decision {
	d.DesiredReplicas, d.Rescale, d.Reason = desired, true, reason
	return d
}

// reconcileMetrics computes, combines and normalizes the metric proposals.
func reconcileMetrics(cfg Config, in ReconcileInput, d Decision, minReplicas int32) Decision {
	current := in.SpecReplicas
	c := ComputeReplicasForMetrics(MetricsInput{
		Snapshot:    in.Snapshot,
		Params:      Params{Tolerances: TolerancesFor(cfg.Tolerance, in.Spec.Behavior), Readiness: cfg.Readiness()},
		Metrics:     in.Spec.Metrics,
		Data:        in.Data,
		Watermarks:  in.Watermarks,
		MinReplicas: minReplicas,
		MaxReplicas: in.Spec.MaxReplicas,
	})
	d.MetricReplicas, d.MetricName, d.MetricTimestamp = c.Replicas, c.MetricName, c.Timestamp
	d.MetricStatuses, d.Err, d.Failures = c.Statuses, c.Err, c.Failures
	d.Conditions = setCondition(d.Conditions, c.Condition)
	if c.NoDecision() {
		d.DesiredReplicas = -1
		return d
	}
	proposal, reasonDown := max(c.Replicas, 0), reasonBelow
	if in.ScaleToZero && ScaleToZeroEnabled(in.Spec) {
		var idle bool
		if proposal, idle = activeProposal(in, proposal); idle {
			reasonDown = reasonDeactivated
		}
	}
	switch {
	case proposal > current:
		d.Reason = fmt.Sprintf("%s above target", c.MetricName)
	case proposal < current:
		d.Reason = reasonDown
	}
	n := normalize(cfg, in, Step{Current: current, Proposal: proposal, Min: minReplicas, Max: in.Spec.MaxReplicas, Now: in.Now}, d.History)
	if n.ScalingLimited.Reason == ReasonTooFewReplicas {
		n.ScalingLimited.Message += raisedBy(in.Spec, in.Floor)
	}
	d.History = n.History
	d.Conditions = setCondition(d.Conditions, n.AbleToScale)
	d.Conditions = setCondition(d.Conditions, n.ScalingLimited)
	d.DesiredReplicas, d.Rescale = n.Replicas, n.Replicas != current
	return d
}

// normalize picks the normalization by whether the autoscaler has a behavior.
func normalize(cfg Config, in ReconcileInput, s Step, h History) Normalized {
	if in.Spec.Behavior == nil {
		return NormalizeDesiredReplicas(h, s, cfg.DownscaleStabilizationWindow)
	}
	return NormalizeDesiredReplicasWithBehavior(h, s, in.Spec.Behavior, cfg.DownscaleStabilizationWindow)
}
