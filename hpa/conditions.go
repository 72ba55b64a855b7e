package hpa

import (
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition reasons, as the Kubernetes HPA controller writes them.
const (
	ReasonSucceededGetScale   = "SucceededGetScale"
	ReasonFailedGetScale      = "FailedGetScale"
	ReasonSucceededRescale    = "SucceededRescale"
	ReasonFailedUpdateScale   = "FailedUpdateScale"
	ReasonReadyForNewScale    = "ReadyForNewScale"
	ReasonScaleUpStabilized   = "ScaleUpStabilized"
	ReasonScaleDownStabilized = "ScaleDownStabilized"

	ReasonValidMetricFound                 = "ValidMetricFound"
	ReasonScalingDisabled                  = "ScalingDisabled"
	ReasonInvalidSelector                  = "InvalidSelector"
	ReasonAmbiguousSelector                = "AmbiguousSelector"
	ReasonInvalidMetricSourceType          = "InvalidMetricSourceType"
	ReasonFailedGetResourceMetric          = "FailedGetResourceMetric"
	ReasonFailedGetContainerResourceMetric = "FailedGetContainerResourceMetric"
	ReasonFailedGetPodsMetric              = "FailedGetPodsMetric"
	ReasonFailedGetObjectMetric            = "FailedGetObjectMetric"
	ReasonFailedGetExternalMetric          = "FailedGetExternalMetric"

	ReasonDesiredWithinRange = "DesiredWithinRange"
	ReasonScaleUpLimit       = "ScaleUpLimit"
	ReasonScaleDownLimit     = "ScaleDownLimit"
	ReasonTooManyReplicas    = "TooManyReplicas"
	ReasonTooFewReplicas     = "TooFewReplicas"
)

// Condition messages that carry no parameters.
const (
	msgSucceededGetScale   = "the HPA controller was able to get the target's current scale"
	msgReadyForNewScale    = "recommended size matches current size"
	msgScaleUpStabilized   = "recent recommendations were lower than current one, applying the lowest recent recommendation"
	msgScaleDownStabilized = "recent recommendations were higher than current one, applying the highest recent recommendation"
	msgScalingDisabled     = "scaling is disabled since the replica count of the target is zero"
	msgDesiredWithinRange  = "the desired count is within the acceptable range"
	msgScaleUpLimit        = "the desired replica count is increasing faster than the maximum scale rate"
	msgScaleDownLimit      = "the desired replica count is decreasing faster than the maximum scale rate"
	msgTooManyReplicas     = "the desired replica count is more than the maximum replica count"
	msgTooFewReplicas      = "the desired replica count is less than the minimum replica count"
)

// Condition is one HPA status condition as plain data; the caller stamps
// lastTransitionTime (see ApplyConditions).
type Condition struct {
	Type    autoscalingv2.HorizontalPodAutoscalerConditionType `json:"type"`
	Status  v1.ConditionStatus                                 `json:"status"`
	Reason  string                                             `json:"reason"`
	Message string                                             `json:"message"`
}

// newCondition builds a condition; a boolean status reads better at call sites.
func newCondition(t autoscalingv2.HorizontalPodAutoscalerConditionType, ok bool, reason, message string) Condition {
	status := v1.ConditionFalse
	if ok {
		status = v1.ConditionTrue
	}
	return Condition{Type: t, Status: status, Reason: reason, Message: message}
}

// unableToComputeCondition is ScalingActive=False for a failed metric.
func unableToComputeCondition(reason string, err error) Condition {
	return newCondition(autoscalingv2.ScalingActive, false, reason,
		fmt.Sprintf("the HPA was unable to compute the replica count: %v", err))
}

// FailedGetScaleCondition is AbleToScale=False after a failed GET of /scale.
func FailedGetScaleCondition(err error) Condition {
	return newCondition(autoscalingv2.AbleToScale, false, ReasonFailedGetScale,
		fmt.Sprintf("the HPA controller was unable to get the target's current scale: %v", err))
}

// SucceededRescaleCondition is AbleToScale=True after a successful PUT of /scale.
func SucceededRescaleCondition(desired int32) Condition {
	return newCondition(autoscalingv2.AbleToScale, true, ReasonSucceededRescale,
		fmt.Sprintf("the HPA controller was able to update the target scale to %d", desired))
}

// FailedUpdateScaleCondition is AbleToScale=False after a failed PUT of /scale.
func FailedUpdateScaleCondition(err error) Condition {
	return newCondition(autoscalingv2.AbleToScale, false, ReasonFailedUpdateScale,
		fmt.Sprintf("the HPA controller was unable to update the target scale: %v", err))
}

// InvalidSelectorCondition is ScalingActive=False for a missing or unparsable
// scale selector; message is the human-readable cause.
func InvalidSelectorCondition(message string) Condition {
	return newCondition(autoscalingv2.ScalingActive, false, ReasonInvalidSelector, message)
}

// AmbiguousSelectorCondition is ScalingActive=False when pods are claimed by
// several autoscalers; message is the human-readable cause.
func AmbiguousSelectorCondition(message string) Condition {
	return newCondition(autoscalingv2.ScalingActive, false, ReasonAmbiguousSelector, message)
}

// ApplyConditions returns a copy of list with each update applied in order:
// a condition of the same type is replaced in place (lastTransitionTime
// changes only when its status does), a new type is appended with now. The
// input list is not modified.
func ApplyConditions(list []autoscalingv2.HorizontalPodAutoscalerCondition, updates []Condition, now metav1.Time) []autoscalingv2.HorizontalPodAutoscalerCondition {
	out := append([]autoscalingv2.HorizontalPodAutoscalerCondition(nil), list...)
	for _, u := range updates {
		i := conditionIndex(out, u.Type)
		if i < 0 {
			out = append(out, autoscalingv2.HorizontalPodAutoscalerCondition{Type: u.Type})
			i = len(out) - 1
		}
		c := &out[i]
		if c.Status != u.Status {
			c.LastTransitionTime = now
		}
		c.Status, c.Reason, c.Message = u.Status, u.Reason, u.Message
	}
	return out
}

// conditionIndex returns the index of the first condition of type t, or -1.
func conditionIndex(list []autoscalingv2.HorizontalPodAutoscalerCondition, t autoscalingv2.HorizontalPodAutoscalerConditionType) int {
	for i := range list {
		if list[i].Type == t {
			return i
		}
	}
	return -1
}

// setCondition replaces the condition of the same type in list, or appends.
func setCondition(list []Condition, c Condition) []Condition {
	for i := range list {
		if list[i].Type == c.Type {
			list[i] = c
			return list
		}
	}
	return append(list, c)
}
