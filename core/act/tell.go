package act

// What the actuators tell pods and the objects the loop's pictured pods
// stand for.

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/core/scaleup"
	"github.com/tidal-autoscaler/tidal/core/telemetry"
)

// grown counts and tells a scale-up the cloud accepted; note ends the
// ScaledUpGroup event's message (what the scale-up was for).
func (a *Live) grown(up scaleup.ScaleUp, note string) {
	delta := up.To - up.From
	a.Metrics.ScaledUp(up.Group, delta)
	a.Metrics.Activity("scaleUp", a.Clock.Now())
	a.Events.OnStatus(a.Status, corev1.EventTypeNormal, "ScaledUpGroup", "scale-up: node group %s size %d -> %d (max: %d)%s",
		up.Group, up.From, up.To, up.Max, note)
	msg := fmt.Sprintf("pod triggered scale-up: [{%s %d->%d (max: %d)}]", up.Group, up.From, up.To, up.Max)
	for _, p := range up.Pods {
		a.Events.OnPod(p, corev1.EventTypeNormal, "TriggeredScaleUp", "%s", msg)
	}
	TellSources(a.Events, a.Source, up.Pods, corev1.EventTypeNormal, "TriggeredScaleUp",
		fmt.Sprintf("node group %s %d->%d (max: %d)", up.Group, up.From, up.To, up.Max))
}

// tellFailed tells pods that counted on a scale-up of group that it
// failed, and why, in a FailedScaleUp warning.
func (a *Live) tellFailed(pods []*corev1.Pod, group, why string) {
	for _, p := range pods {
		a.Events.OnPod(p, corev1.EventTypeWarning, "FailedScaleUp", "pod triggered a scale-up of %s that failed: %s", group, why)
	}
	TellSources(a.Events, a.Source, pods, corev1.EventTypeWarning, "FailedScaleUp", fmt.Sprintf("a scale-up of node group %s failed: %s", group, why))
}

// picturedNote says how many of a scale-up's pods do not exist yet: ones
// provisioned ahead of a rescale, and headroom.
func picturedNote(pods []*corev1.Pod) string {
	ahead, headroom, replacing := 0, 0, 0
	for _, p := range pods {
		if _, ok := p.Annotations[scaleup.ReplacementOfAnnotation]; ok {
			replacing++
		}
		if _, ok := p.Annotations[scaleup.AheadOfAnnotation]; ok {
			ahead++
		}
		if _, ok := p.Annotations[scaleup.HeadroomOfAnnotation]; ok {
			headroom++
		}
	}
	var parts []string
	if ahead > 0 {
		parts = append(parts, fmt.Sprintf("%d provisioned ahead of pods an autoscaler asked for", ahead))
	}
	if headroom > 0 {
		parts = append(parts, fmt.Sprintf("%d of headroom", headroom))
	}
	if replacing > 0 {
		parts = append(parts, fmt.Sprintf("%d replacing pods of nodes the cloud takes away", replacing))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf(" for %d pod(s), %s", len(pods), strings.Join(parts, " and "))
}

// TellSources records one event per source of the pictured pods among pods
// (the autoscaler that asked for them ahead, the workload that wants
// headroom), saying how many of its pods the message concerns.
func TellSources(events *telemetry.Events, source func(*corev1.Pod) *corev1.ObjectReference, pods []*corev1.Pod, eventType, reason, msg string) {
	if source == nil {
		return
	}
	counts := map[*corev1.ObjectReference]int{}
	what := map[*corev1.ObjectReference]string{}
	var order []*corev1.ObjectReference
	for _, p := range pods {
		ref := source(p)
		if ref == nil {
			continue
		}
		if counts[ref] == 0 {
			order = append(order, ref)
			what[ref] = "new replica(s) this autoscaler asked for"
		}
		switch {
		case p.Annotations[scaleup.HeadroomOfAnnotation] != "":
			what[ref] = "replica(s) of headroom"
		case p.Annotations[scaleup.AheadOfAnnotation] != "":
			what[ref] = "new replica(s) this autoscaler asked for, planned ahead of their pods"
		}
		counts[ref]++
	}
	for _, ref := range order {
		events.OnRef(ref, eventType, reason, "%d %s: %s", counts[ref], what[ref], msg)
	}
}
