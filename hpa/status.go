package hpa

import (
	"slices"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Status returns the autoscaler status after the decision was acted on, as
// the Kubernetes HPA controller writes it. old is the status before the
// sync (it is not modified), current the replicas /scale had, now the sync
// time, and rescaleErr the error of the PUT of /scale when d.Rescale was
// set (nil when it succeeded).
//
//   - No decision: desiredReplicas keeps its old value.
//   - No rescale: desiredReplicas is current.
//   - A failed rescale: AbleToScale is FailedUpdateScale and desiredReplicas
//     keeps its old value.
//   - A rescale: AbleToScale is SucceededRescale, desiredReplicas and
//     lastScaleTime are set, and ScaledToZero is removed (Kubernetes does so
//     on every rescale while its HPAScaleToZero gate is off).
//
// Condition transition times and lastScaleTime are whole seconds.
func (d Decision) Status(old autoscalingv2.HorizontalPodAutoscalerStatus, current int32, now time.Time, rescaleErr error) autoscalingv2.HorizontalPodAutoscalerStatus {
	st := *old.DeepCopy()
	conds, removed := d.Conditions, d.Removed
	desired := current
	switch {
	case d.DesiredReplicas == -1:
		desired = old.DesiredReplicas
	case d.Rescale && rescaleErr != nil:
		conds = append(slices.Clip(conds), FailedUpdateScaleCondition(rescaleErr))
		desired = old.DesiredReplicas
	case d.Rescale:
		conds = append(slices.Clip(conds), SucceededRescaleCondition(d.DesiredReplicas))
		removed = append(slices.Clip(removed), autoscalingv2.ScaledToZero)
		desired = d.DesiredReplicas
		last := metav1.NewTime(now.Truncate(time.Second))
		st.LastScaleTime = &last
	}
	st.Conditions = RemoveConditions(ApplyConditions(st.Conditions, conds, metav1.NewTime(now.Truncate(time.Second))), removed...)
	st.CurrentReplicas, st.DesiredReplicas, st.CurrentMetrics = current, desired, d.MetricStatuses
	return st
}

// RemoveConditions returns a copy of list without the conditions of the
// given types.
func RemoveConditions(list []autoscalingv2.HorizontalPodAutoscalerCondition, types ...autoscalingv2.HorizontalPodAutoscalerConditionType) []autoscalingv2.HorizontalPodAutoscalerCondition {
	if len(types) == 0 {
		return list
	}
	var out []autoscalingv2.HorizontalPodAutoscalerCondition
	for _, c := range list {
		if !slices.Contains(types, c.Type) {
			out = append(out, c)
		}
	}
	return out
}
