package hpa

import (
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
)

const errNoExternalValues = constError("no metrics returned from external metrics API")

// ObjectValueReplicas proposes a replica count for an Object metric with a
// Value target: usage is the described object's value. See
// usageRatioReplicas for how the ratio usage/target becomes a count.
func ObjectValueReplicas(current int32, usage, target int64, t Tolerances, pods []*v1.Pod) (Proposal, error) {
	r, err := usageRatioReplicas(current, float64(usage)/float64(target), t, pods)
	if err != nil {
		return Proposal{}, err
	}
	return Proposal{Replicas: r, Value: usage}, nil
}

// ExternalValueReplicas proposes a replica count for an External metric with
// a Value target: the usage is the sum of every series the selector matched
// (saturating at MaxInt64), and is what status reports.
func ExternalValueReplicas(current int32, values []int64, target int64, t Tolerances, pods []*v1.Pod) (Proposal, error) {
	if len(values) == 0 {
		return Proposal{}, errNoExternalValues
	}
	usage := sumSaturating(values)
	r, err := usageRatioReplicas(current, float64(usage)/float64(target), t, pods)
	if err != nil {
		return Proposal{}, err
	}
	return Proposal{Replicas: r, Value: usage}, nil
}

// usageRatioReplicas turns a Value target's ratio into a count. From zero
// replicas it is ceil(ratio), without tolerance. Otherwise it is current when
// within tolerance, else ceil(ratio*n) (capped at MaxInt32), where n counts the
// Running and Ready pods; an empty pod list is an error.
func usageRatioReplicas(current int32, ratio float64, t Tolerances, pods []*v1.Pod) (int32, error) {
	if current == 0 {
		return int32(math.Ceil(ratio)), nil
	}
	if t.Within(ratio) {
		return current, nil
	}
	if len(pods) == 0 {
		return 0, fmt.Errorf("unable to calculate ready pods: %w", errNoPods)
	}
	f := ratio * float64(ReadyRunningPods(pods))
	if f > math.MaxInt32 {
		return math.MaxInt32, nil
	}
	return int32(math.Ceil(f)), nil
}

// ObjectAverageValueReplicas proposes a replica count for an Object metric
// with an AverageValue target. The ratio is usage/(target*statusReplicas);
// outside tolerance the answer is ceil(usage/target), else statusReplicas.
// Status reports ceil(usage/statusReplicas). Pod readiness plays no part.
func ObjectAverageValueReplicas(statusReplicas int32, usage, target int64, t Tolerances) Proposal {
	r := statusReplicas
	if !t.Within(float64(usage) / (float64(target) * float64(statusReplicas))) {
		r = int32(math.Ceil(float64(usage) / float64(target)))
	}
	return Proposal{
		Replicas: r,
		Value:    int64(math.Ceil(float64(usage) / float64(statusReplicas))),
	}
}

// ExternalAverageValueReplicas proposes a replica count for an External metric
// with an AverageValue target, like ObjectAverageValueReplicas over the sum of
// the matched series; the count and the reported value saturate at MaxInt32
// and MaxInt64.
func ExternalAverageValueReplicas(statusReplicas int32, values []int64, target int64, t Tolerances) (Proposal, error) {
	if len(values) == 0 {
		return Proposal{}, errNoExternalValues
	}
	usage := sumWrapGuarded(values)
	p := Proposal{Replicas: statusReplicas}
	if !t.Within(float64(usage) / (float64(target) * float64(statusReplicas))) {
		p.Replicas = saturatingCeil32(float64(usage) / float64(target))
	}
	if float64(usage) >= float64(math.MaxInt64) {
		p.Value = math.MaxInt64
	} else {
		p.Value = int64(math.Ceil(float64(usage) / float64(statusReplicas)))
	}
	return p, nil
}

// saturatingCeil32 is ceil(f) capped at MaxInt32.
func saturatingCeil32(f float64) int32 {
	c := math.Ceil(f)
	if c > float64(math.MaxInt32) {
		return math.MaxInt32
	}
	return int32(c)
}

// sumSaturating adds values, stopping at MaxInt64 when a positive value
// would overflow (the Value-target sum).
func sumSaturating(values []int64) int64 {
	var s int64
	for _, v := range values {
		if v > 0 && s > math.MaxInt64-v {
			return math.MaxInt64
		}
		s += v
	}
	return s
}

// sumWrapGuarded adds values and returns MaxInt64 as soon as the running sum
// goes negative (the AverageValue-target sum; note that a negative series
// value triggers this too).
func sumWrapGuarded(values []int64) int64 {
	var s int64
	for _, v := range values {
		s += v
		if s < 0 {
			return math.MaxInt64
		}
	}
	return s
}
