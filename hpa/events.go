package hpa

import (
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// RecordScaleEvent returns h with the rescale from prev to next recorded, as
// Kubernetes does after a successful PUT of /scale; call it only then. It
// records nothing without a behavior. The change goes to the scale-up list
// when next > prev, else to the scale-down list. Entries older than the
// longest policy period of that direction are marked outdated, and the last
// outdated entry is overwritten; otherwise the event is appended.
func RecordScaleEvent(h History, b *autoscalingv2.HorizontalPodAutoscalerBehavior, prev, next int32, now time.Time) History {
	if b == nil {
		return h
	}
	b = DefaultBehavior(b, 0)
	if next > prev {
		h.ScaleUpEvents = storeScaleEvent(h.ScaleUpEvents, longestPeriod(b.ScaleUp), next-prev, now)
	} else {
		h.ScaleDownEvents = storeScaleEvent(h.ScaleDownEvents, longestPeriod(b.ScaleDown), prev-next, now)
	}
	return h
}

// longestPeriod is the longest periodSeconds among the rules' policies.
func longestPeriod(rules *autoscalingv2.HPAScalingRules) int32 {
	var longest int32
	for _, p := range rules.Policies {
		longest = max(longest, p.PeriodSeconds)
	}
	return longest
}

// storeScaleEvent returns a copy of events with the outdated marks refreshed
// and the new event stored.
func storeScaleEvent(events []ScaleEvent, longest, change int32, now time.Time) []ScaleEvent {
	out := make([]ScaleEvent, len(events), len(events)+1)
	copy(out, events)
	cutoff := now.Add(-seconds(longest))
	old := -1
	for i := range out {
		if madeAt(out[i].Timestamp, now).Before(cutoff) {
			out[i].Outdated = true
		}
		if out[i].Outdated {
			old = i
		}
	}
	e := ScaleEvent{ReplicaChange: change, Timestamp: stamp(now)}
	if old >= 0 {
		out[old] = e
		return out
	}
	return append(out, e)
}
