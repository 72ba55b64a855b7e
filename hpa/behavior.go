package hpa

import (
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// DefaultBehavior returns a fully populated copy of b, defaulted the way the
// Kubernetes API server and controller do it: scale-up rules default to a 0s
// window, selectPolicy Max and policies [4 Pods/15s, 100 Percent/15s];
// scale-down rules to selectPolicy Max, policies [100 Percent/15s] and the
// controller's downscale window. Fields are defaulted one by one; a non-nil
// policies list replaces the default list; tolerance stays unset. A nil b
// stays nil (no behavior).
func DefaultBehavior(b *autoscalingv2.HorizontalPodAutoscalerBehavior, downscaleWindow time.Duration) *autoscalingv2.HorizontalPodAutoscalerBehavior {
	out := apiDefaultBehavior(b)
	if out != nil && out.ScaleDown.StabilizationWindowSeconds == nil {
		seconds := int32(downscaleWindow.Seconds())
		out.ScaleDown.StabilizationWindowSeconds = &seconds
	}
	return out
}

// apiDefaultBehavior returns a copy of b defaulted as the API server does it,
// which leaves the scale-down window unset.
func apiDefaultBehavior(b *autoscalingv2.HorizontalPodAutoscalerBehavior) *autoscalingv2.HorizontalPodAutoscalerBehavior {
	if b == nil {
		return nil
	}
	out := b.DeepCopy()
	out.ScaleUp = overlayRules(out.ScaleUp, defaultScaleUpRules())
	out.ScaleDown = overlayRules(out.ScaleDown, defaultScaleDownRules())
	return out
}

// defaultScaleUpRules returns the Kubernetes scale-up defaults.
func defaultScaleUpRules() *autoscalingv2.HPAScalingRules {
	window := int32(0)
	policy := autoscalingv2.MaxChangePolicySelect
	return &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: &window,
		SelectPolicy:               &policy,
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	}
}

// defaultScaleDownRules returns the Kubernetes scale-down defaults (the
// window is left to the controller flag).
func defaultScaleDownRules() *autoscalingv2.HPAScalingRules {
	policy := autoscalingv2.MaxChangePolicySelect
	return &autoscalingv2.HPAScalingRules{
		SelectPolicy: &policy,
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	}
}

// overlayRules copies every set field of from onto defaults.
func overlayRules(from, defaults *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if from == nil {
		return defaults
	}
	if from.SelectPolicy != nil {
		defaults.SelectPolicy = from.SelectPolicy
	}
	if from.StabilizationWindowSeconds != nil {
		defaults.StabilizationWindowSeconds = from.StabilizationWindowSeconds
	}
	if from.Policies != nil {
		defaults.Policies = from.Policies
	}
	if from.Tolerance != nil {
		defaults.Tolerance = from.Tolerance
	}
	return defaults
}

// seconds converts a window or period in seconds to a duration.
func seconds(s int32) time.Duration {
	return time.Second * time.Duration(s)
}

// StabilizeWithBehavior is the stabilization used with behavior. The result
// is current clamped into [min of proposal and recommendations newer than
// upWindow, max of proposal and recommendations newer than downWindow], so it
// always lies between current and proposal. The proposal is stored over the
// last entry older than both windows, or appended.
func StabilizeWithBehavior(recs []Recommendation, current, proposal int32, upWindow, downWindow time.Duration, now time.Time) (int32, []Recommendation) {
	up, down := proposal, proposal
	upCutoff, downCutoff := now.Add(-upWindow), now.Add(-downWindow)
	old := -1
	for i, r := range recs {
		ts := madeAt(r.Timestamp, now)
		if ts.After(upCutoff) {
			up = min(up, r.Replicas)
		}
		if ts.After(downCutoff) {
			down = max(down, r.Replicas)
		}
		if ts.Before(upCutoff) && ts.Before(downCutoff) {
			old = i
		}
	}
	result := current
	if result < up {
		result = up
	}
	if result > down {
		result = down
	}
	return result, storeRecommendation(recs, old, Recommendation{Replicas: proposal, Timestamp: stamp(now)})
}

// ReplicasChangedInPeriod sums the changes of events newer than period.
func ReplicasChangedInPeriod(events []ScaleEvent, period time.Duration, now time.Time) int32 {
	cutoff := now.Add(-period)
	var sum int32
	for _, e := range events {
		if madeAt(e.Timestamp, now).After(cutoff) {
			sum += e.ReplicaChange
		}
	}
	return sum
}

// periodStart is the replica count at the start of a policy's period.
func periodStart(current int32, h History, p autoscalingv2.HPAScalingPolicy, now time.Time) int32 {
	period := seconds(p.PeriodSeconds)
	return current - ReplicasChangedInPeriod(h.ScaleUpEvents, period, now) + ReplicasChangedInPeriod(h.ScaleDownEvents, period, now)
}

// ScaleUpLimit is the highest count the scale-up policies allow: for each
// policy, its period's starting count plus Value pods, or times 1+Value% and
// rounded up; combined by selectPolicy (Max: the largest; Min: the smallest;
// Disabled: current). It may be below current.
func ScaleUpLimit(current int32, h History, rules *autoscalingv2.HPAScalingRules, now time.Time) int32 {
	sel := selectPolicy(rules)
	if sel == autoscalingv2.DisabledPolicySelect {
		return current
	}
	result, pick := int32(math.MinInt32), maxInt32
	if sel == autoscalingv2.MinChangePolicySelect {
		result, pick = math.MaxInt32, minInt32
	}
	var proposed int32 // an unknown policy type repeats the previous proposal, as upstream does
	for _, p := range rules.Policies {
		start := periodStart(current, h, p, now)
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = start + p.Value
		case autoscalingv2.PercentScalingPolicy:
			proposed = int32(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		}
		result = pick(result, proposed)
	}
	return result
}

// ScaleDownLimit is the lowest count the scale-down policies allow: for each
// policy, its period's starting count minus Value pods, or times 1-Value%
// and truncated; combined by selectPolicy (Max: the smallest count, i.e. the
// largest change; Min: the largest count; Disabled: current). It may be
// above current.
func ScaleDownLimit(current int32, h History, rules *autoscalingv2.HPAScalingRules, now time.Time) int32 {
	sel := selectPolicy(rules)
	if sel == autoscalingv2.DisabledPolicySelect {
		return current
	}
	result, pick := int32(math.MaxInt32), minInt32
	if sel == autoscalingv2.MinChangePolicySelect {
		result, pick = math.MinInt32, maxInt32
	}
	var proposed int32 // see ScaleUpLimit
	for _, p := range rules.Policies {
		start := periodStart(current, h, p, now)
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = start - p.Value
		case autoscalingv2.PercentScalingPolicy:
			proposed = int32(float64(start) * (1 - float64(p.Value)/100))
		}
		result = pick(result, proposed)
	}
	return result
}

// selectPolicy returns the rules' selectPolicy, Max when unset.
func selectPolicy(rules *autoscalingv2.HPAScalingRules) autoscalingv2.ScalingPolicySelect {
	if rules.SelectPolicy == nil {
		return autoscalingv2.MaxChangePolicySelect
	}
	return *rules.SelectPolicy
}

func minInt32(a, b int32) int32 { return min(a, b) }
func maxInt32(a, b int32) int32 { return max(a, b) }

// ConvertDesiredReplicasWithBehaviorRate applies the policies' rate limits
// and min/max to s.Proposal (the stabilized count). On a scale-up the limit
// never goes below current and is capped by Max (ScaleUpLimit when the policy
// binds, else TooManyReplicas); on a scale-down it never goes above current
// and is floored by Min (ScaleDownLimit, else TooFewReplicas).
func ConvertDesiredReplicasWithBehaviorRate(h History, s Step, up, down *autoscalingv2.HPAScalingRules) Limit {
	switch {
	case s.Proposal > s.Current:
		limit := max(ScaleUpLimit(s.Current, h, up, s.Now), s.Current)
		bound := Limit{Replicas: s.Max, Reason: ReasonTooManyReplicas, Message: msgTooManyReplicas}
		if s.Max > limit {
			bound = Limit{Replicas: limit, Reason: ReasonScaleUpLimit, Message: msgScaleUpLimit}
		}
		if s.Proposal > bound.Replicas {
			return bound
		}
	case s.Proposal < s.Current:
		limit := min(ScaleDownLimit(s.Current, h, down, s.Now), s.Current)
		bound := Limit{Replicas: s.Min, Reason: ReasonTooFewReplicas, Message: msgTooFewReplicas}
		if s.Min < limit {
			bound = Limit{Replicas: limit, Reason: ReasonScaleDownLimit, Message: msgScaleDownLimit}
		}
		if s.Proposal < bound.Replicas {
			return bound
		}
	}
	return Limit{Replicas: s.Proposal, Reason: ReasonDesiredWithinRange, Message: msgDesiredWithinRange}
}

// NormalizeDesiredReplicasWithBehavior is the normalization for autoscalers
// with a behavior: StabilizeWithBehavior over the two windows, then
// ConvertDesiredReplicasWithBehaviorRate. b is defaulted with DefaultBehavior;
// a nil b is treated as an empty behavior.
func NormalizeDesiredReplicasWithBehavior(h History, s Step, b *autoscalingv2.HorizontalPodAutoscalerBehavior, downscaleWindow time.Duration) Normalized {
	if b == nil {
		b = &autoscalingv2.HorizontalPodAutoscalerBehavior{}
	}
	b = DefaultBehavior(b, downscaleWindow)
	upWindow := seconds(*b.ScaleUp.StabilizationWindowSeconds)
	downWindow := seconds(*b.ScaleDown.StabilizationWindowSeconds)
	stabilized, recs := StabilizeWithBehavior(h.Recommendations, s.Current, s.Proposal, upWindow, downWindow, s.Now)
	h.Recommendations = recs
	able := newCondition(autoscalingv2.AbleToScale, true, ReasonReadyForNewScale, msgReadyForNewScale)
	if stabilized != s.Proposal {
		able = stabilizedCondition(s)
	}
	rate := s
	rate.Proposal = stabilized
	lim := ConvertDesiredReplicasWithBehaviorRate(h, rate, b.ScaleUp, b.ScaleDown)
	return Normalized{
		Replicas:       lim.Replicas,
		Stabilized:     stabilized,
		AbleToScale:    able,
		ScalingLimited: limitedCondition(lim, stabilized),
		History:        h,
	}
}

// stabilizedCondition names the direction stabilization held back.
func stabilizedCondition(s Step) Condition {
	if s.Proposal >= s.Current {
		return newCondition(autoscalingv2.AbleToScale, true, ReasonScaleUpStabilized, msgScaleUpStabilized)
	}
	return newCondition(autoscalingv2.AbleToScale, true, ReasonScaleDownStabilized, msgScaleDownStabilized)
}
