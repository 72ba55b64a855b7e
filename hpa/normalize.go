package hpa

import (
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// The legacy scale-up cap: at most max(2*current, 4) replicas per step.
const (
	legacyScaleUpFactor  = 2.0
	legacyScaleUpMinimum = 4.0
)

// Step is the input of one normalization.
type Step struct {
	// Current is the current replica count (scale.spec.replicas).
	Current int32
	// Proposal is the metrics' proposal, already raised to at least 0.
	Proposal int32
	// Min and Max are spec.minReplicas (defaulted) and spec.maxReplicas.
	Min, Max int32
	// Now is the evaluation time.
	Now time.Time
}

// Limit is a replica count after limits were applied, with the
// ScalingLimited reason and message that explain it.
type Limit struct {
	Replicas int32
	Reason   string
	Message  string
}

// Normalized is the result of a normalization.
type Normalized struct {
	// Replicas is the desired replica count.
	Replicas int32
	// Stabilized is the count after stabilization, before rate limits.
	Stabilized int32
	// AbleToScale is True with ReadyForNewScale, ScaleUpStabilized or
	// ScaleDownStabilized.
	AbleToScale Condition
	// ScalingLimited is True when limits changed the stabilized count.
	ScalingLimited Condition
	// History has the proposal recorded.
	History History
}

// Stabilize is the stabilization used without behavior: the result is the
// largest of proposal and every recommendation not older than window (so
// there is no scale-up stabilization). The proposal is stored over the last
// entry older than window, or appended.
func Stabilize(recs []Recommendation, proposal int32, window time.Duration, now time.Time) (int32, []Recommendation) {
	best := proposal
	cutoff := now.Add(-window)
	old := -1
	for i, r := range recs {
		if madeAt(r.Timestamp, now).Before(cutoff) {
			old = i
		} else if r.Replicas > best {
			best = r.Replicas
		}
	}
	return best, storeRecommendation(recs, old, Recommendation{Replicas: proposal, Timestamp: stamp(now)})
}

// LegacyScaleUpLimit is the scale-up cap without behavior: max(2*current, 4).
func LegacyScaleUpLimit(current int32) int32 {
	return int32(math.Max(legacyScaleUpFactor*float64(current), legacyScaleUpMinimum))
}

// ConvertDesiredReplicasWithRules clamps desired into [min, min(max,
// LegacyScaleUpLimit(current))], min taking precedence. Without behavior
// there is no scale-down rate limit.
func ConvertDesiredReplicasWithRules(current, desired, minReplicas, maxReplicas int32) Limit {
	upper := Limit{Replicas: maxReplicas, Reason: ReasonTooManyReplicas, Message: msgTooManyReplicas}
	if up := LegacyScaleUpLimit(current); maxReplicas > up {
		upper = Limit{Replicas: up, Reason: ReasonScaleUpLimit, Message: msgScaleUpLimit}
	}
	switch {
	case desired < minReplicas:
		return Limit{Replicas: minReplicas, Reason: ReasonTooFewReplicas, Message: msgTooFewReplicas}
	case desired > upper.Replicas:
		return upper
	}
	return Limit{Replicas: desired, Reason: ReasonDesiredWithinRange, Message: msgDesiredWithinRange}
}

// NormalizeDesiredReplicas is the normalization for autoscalers without
// behavior: Stabilize over window, then ConvertDesiredReplicasWithRules.
func NormalizeDesiredReplicas(h History, s Step, window time.Duration) Normalized {
	stabilized, recs := Stabilize(h.Recommendations, s.Proposal, window, s.Now)
	h.Recommendations = recs
	able := newCondition(autoscalingv2.AbleToScale, true, ReasonReadyForNewScale, msgReadyForNewScale)
	if stabilized != s.Proposal {
		able = newCondition(autoscalingv2.AbleToScale, true, ReasonScaleDownStabilized, msgScaleDownStabilized)
	}
	lim := ConvertDesiredReplicasWithRules(s.Current, stabilized, s.Min, s.Max)
	return Normalized{
		Replicas:       lim.Replicas,
		Stabilized:     stabilized,
		AbleToScale:    able,
		ScalingLimited: limitedCondition(lim, stabilized),
		History:        h,
	}
}

// limitedCondition is ScalingLimited, True when the limit changed the count.
func limitedCondition(lim Limit, before int32) Condition {
	return newCondition(autoscalingv2.ScalingLimited, lim.Replicas != before, lim.Reason, lim.Message)
}
