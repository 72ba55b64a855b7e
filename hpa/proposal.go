package hpa

import (
	"math"
	"time"

	v1 "k8s.io/api/core/v1"
)

// constError is an error that can be declared as a constant.
type constError string

func (e constError) Error() string { return string(e) }

// PodInput is what the pod-based calculations (Resource, ContainerResource and
// Pods metrics) read: the pods the target's selector matches, their samples,
// and the replica count the answer is relative to.
type PodInput struct {
	// Now is the evaluation time (used by the cpu readiness rules).
	Now time.Time
	// CurrentReplicas is scale.spec.replicas; it is returned unchanged when
	// the usage is within tolerance.
	CurrentReplicas int32
	// Pods are the pods the selector matches, in one namespace (unique names).
	Pods []*v1.Pod
	// Metrics holds one sample per pod; it is never modified.
	Metrics    PodMetrics
	Tolerances Tolerances
	Readiness  Readiness
}

// Proposal is one metric's replica proposal and the figures status reports.
type Proposal struct {
	// Replicas is the proposed replica count.
	Replicas int32
	// Utilization is the whole-percent utilization of a Utilization target
	// (status.currentMetrics[].*.current.averageUtilization); 0 otherwise.
	Utilization int32
	// Value is, in milli-units: the raw average usage for Resource targets,
	// the average for Pods and per-pod (AverageValue) targets, and the value
	// for Object and External Value targets.
	Value int64
}

// withinOrCeil is the calculation for the simple case: keep current when the
// ratio is within tolerance, else scale the counted pods by the ratio.
func withinOrCeil(current int32, ratio float64, pods int, t Tolerances) int32 {
	if t.Within(ratio) {
		return current
	}
	return int32(math.Ceil(ratio * float64(pods)))
}

// needsFoldBack reports whether missing or unready pods must be folded back
// into the ratio before deciding.
func needsFoldBack(s podSet, ratio float64) bool {
	return s.missing > 0 || (s.unready > 0 && ratio > 1.0)
}

// foldBackDecision decides after missing and unready pods were folded back
// into the ratio: it refuses changes within tolerance, changes whose direction
// the fold-back reversed, and changes that the larger pod count turns against
// the ratio's direction (the rolling-update guard).
func foldBackDecision(current int32, ratio, newRatio float64, counted int, t Tolerances) int32 {
	if t.Within(newRatio) || (ratio < 1.0 && newRatio > 1.0) || (ratio > 1.0 && newRatio < 1.0) {
		return current
	}
	proposed := int32(math.Ceil(newRatio * float64(counted)))
	if (newRatio < 1.0 && proposed > current) || (newRatio > 1.0 && proposed < current) {
		return current
	}
	return proposed
}
