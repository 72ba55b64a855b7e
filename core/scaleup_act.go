package core

// Acting on a scale-up plan: cloud calls, backoff, events and metrics.

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
)

// execute asks the cloud for each scale-up's nodes and tells the pods. A
// group that refuses is backed off; its result says why, so the next
// decision leaves it out.
func (l *NodeLoop) execute(ctx context.Context, o *observation, plan *scaleup.Plan, report *iterationReport) []scaleup.Result {
	logger := klog.FromContext(ctx)
	var results []scaleup.Result
	for _, up := range plan.ScaleUps {
		g := o.group(up.Group)
		delta := up.To - up.From
		if l.opts.DryRun {
			results = append(results, l.dryRunScaleUp(ctx, up))
			continue
		}
		logger.Info("Scaling up", "nodeGroup", up.Group, "from", up.From, "to", up.To, "pods", len(up.Pods),
			"expander", up.Decision.Steps, "options", up.Estimates, "packing", packingOf(plan))
		if err := g.group.IncreaseSize(delta); err != nil {
			results = append(results, scaleup.Result{Group: up.Group, Refused: l.refused(ctx, up, err)})
			continue
		}
		g.target += delta
		report.scaledUp = true
		results = append(results, scaleup.Result{Group: up.Group, Delta: delta})
		l.grown(up, picturedNote(up.Pods))
	}
	return results
}

// refused backs off a group whose IncreaseSize failed with err and tells
// the pods; it returns the backoff's reason.
func (l *NodeLoop) refused(ctx context.Context, up scaleup.ScaleUp, err error) string {
	klog.FromContext(ctx).Error(err, "Scale-up failed", "nodeGroup", up.Group)
	l.state.BackOff(up.Group, l.clock.Now(), &cloudprovider.InstanceErrorInfo{
		ErrorClass: cloudprovider.OtherErrorClass, ErrorCode: "IncreaseSizeFailed", ErrorMessage: err.Error()})
	l.cfg.Metrics.FailedScaleUp(up.Group, "cloudProviderError")
	l.events.OnStatus(l.publisher.status, corev1.EventTypeWarning, "FailedToScaleUpGroup", "scale-up of node group %s by %d failed: %v",
		up.Group, up.To-up.From, err)
	l.tellFailed(up.Pods, up.Group, err.Error())
	if why := l.state.Group(up.Group).BackoffReason; why != "" {
		return why
	}
	return "IncreaseSizeFailed"
}

// grown records a scale-up the cloud accepted and tells the pods; note
// ends the ScaledUpGroup event's message (what the scale-up was for).
func (l *NodeLoop) grown(up scaleup.ScaleUp, note string) {
	delta := up.To - up.From
	l.mem.lastScaleUp = l.clock.Now()
	l.state.RecordScaleUp(up.Group, l.clock.Now(), delta)
	l.cfg.Metrics.ScaledUp(up.Group, delta)
	l.cfg.Metrics.Activity("scaleUp", l.clock.Now())
	l.events.OnStatus(l.publisher.status, corev1.EventTypeNormal, "ScaledUpGroup", "scale-up: node group %s size %d -> %d (max: %d)%s",
		up.Group, up.From, up.To, up.Max, note)
	msg := fmt.Sprintf("pod triggered scale-up: [{%s %d->%d (max: %d)}]", up.Group, up.From, up.To, up.Max)
	for _, p := range up.Pods {
		l.events.OnPod(p, corev1.EventTypeNormal, "TriggeredScaleUp", "%s", msg)
	}
	l.tellSources(up.Pods, corev1.EventTypeNormal, "TriggeredScaleUp",
		fmt.Sprintf("node group %s %d->%d (max: %d)", up.Group, up.From, up.To, up.Max))
}

// tellFailed tells pods that counted on a scale-up of group that it
// failed, and why, in a FailedScaleUp warning.
func (l *NodeLoop) tellFailed(pods []*corev1.Pod, group, why string) {
	for _, p := range pods {
		l.events.OnPod(p, corev1.EventTypeWarning, "FailedScaleUp", "pod triggered a scale-up of %s that failed: %s", group, why)
	}
	l.tellSources(pods, corev1.EventTypeWarning, "FailedScaleUp", fmt.Sprintf("a scale-up of node group %s failed: %s", group, why))
}

// picturedNote says how many of a scale-up's pods do not exist yet: ones
// provisioned ahead of a rescale, and headroom.
func picturedNote(pods []*corev1.Pod) string {
	ahead, headroom := 0, 0
	for _, p := range pods {
		if _, ok := p.Annotations[AheadOfAnnotation]; ok {
			ahead++
		}
		if _, ok := p.Annotations[HeadroomOfAnnotation]; ok {
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
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf(" for %d pod(s), %s", len(pods), strings.Join(parts, " and "))
}

// explainNoScaleUp tells each pod no group can help why, per node group,
// in Cluster Autoscaler's words. Only those pods: others of their group
// may fit a node or have triggered a scale-up.
func (l *NodeLoop) explainNoScaleUp(plan *scaleup.Plan) {
	if plan == nil {
		return
	}
	for _, n := range plan.NoScaleUp {
		msg := "pod didn't trigger scale-up: " + formatReasons(n.Reasons)
		for _, p := range n.Pods {
			l.events.OnPod(p, corev1.EventTypeNormal, "NotTriggerScaleUp", "%s", msg)
		}
		l.tellSources(n.Pods, corev1.EventTypeNormal, "NotTriggerScaleUp", "no node group can run them: "+formatReasons(n.Reasons))
	}
}

// tellSources records one event per source of the pictured pods among pods
// (the autoscaler that asked for them ahead, the workload that wants
// headroom), saying how many of its pods the message concerns.
func (l *NodeLoop) tellSources(pods []*corev1.Pod, eventType, reason, msg string) {
	counts := map[*corev1.ObjectReference]int{}
	what := map[*corev1.ObjectReference]string{}
	var order []*corev1.ObjectReference
	for _, p := range pods {
		ref := l.ahead.source(p)
		if ref == nil {
			continue
		}
		if counts[ref] == 0 {
			order = append(order, ref)
			what[ref] = "new replica(s) this autoscaler asked for"
		}
		switch {
		case p.Annotations[HeadroomOfAnnotation] != "":
			what[ref] = "replica(s) of headroom"
		case p.Annotations[AheadOfAnnotation] != "":
			what[ref] = "new replica(s) this autoscaler asked for, planned ahead of their pods"
		}
		counts[ref]++
	}
	for _, ref := range order {
		l.events.OnRef(ref, eventType, reason, "%d %s: %s", counts[ref], what[ref], msg)
	}
}

// formatReasons writes "2 node(s) didn't match Pod's node affinity/selector,
// 1 max node group size reached", most frequent first.
func formatReasons(reasons map[string]int) string {
	if len(reasons) == 0 {
		return "no node group can run it"
	}
	keys := make([]string, 0, len(reasons))
	for k := range reasons {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if reasons[keys[i]] != reasons[keys[j]] {
			return reasons[keys[i]] > reasons[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", reasons[k], k)
	}
	return strings.Join(parts, ", ")
}

// packingOf names how the plan was packed, for the log: the rounds'
// greedy choices, or the whole-plan packing that needed fewer nodes.
func packingOf(p *scaleup.Plan) string {
	if p.Planner == "" {
		return "rounds"
	}
	return fmt.Sprintf("%s (rounds: %d nodes)", p.Planner, p.GreedyNodes)
}
