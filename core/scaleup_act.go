package core

// Acting on a scale-up plan: cloud calls, backoff, events and metrics.

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/core/act"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
	"github.com/tidal-autoscaler/tidal/core/telemetry"
)

// execute has the actuator ask for each scale-up's nodes. A group that
// refuses is backed off; its result says why, so the next decision leaves
// it out.
func (d *Decider) execute(ctx context.Context, o *observation, plan *scaleup.Plan, report *Iteration) []scaleup.Result {
	var results []scaleup.Result
	for _, up := range plan.ScaleUps {
		g := o.group(up.Group)
		r := d.actuator.Grow(ctx, act.Growth{Group: g.group, Up: up, Packing: packingOf(plan), NodeCapacity: g.capacity()})
		refused := d.apply(o, report, r)
		results = append(results, scaleup.Result{Group: up.Group, Delta: r.Grown, Refused: refused})
	}
	return results
}

// explainNoScaleUp tells each pod no group can help why, per node group,
// in Cluster Autoscaler's words. Only those pods: others of their group
// may fit a node or have triggered a scale-up.
// Pods for which waiting holds (they wait for nodes still coming) are not
// told: they were counted on those nodes.
func explainNoScaleUp(events *telemetry.Events, source func(*corev1.Pod) *corev1.ObjectReference, plan *scaleup.Plan, waiting func(*corev1.Pod) bool) {
	if plan == nil {
		return
	}
	for _, n := range plan.NoScaleUp {
		msg := "pod didn't trigger scale-up: " + formatReasons(n.Reasons)
		var told []*corev1.Pod
		for _, p := range n.Pods {
			if waiting != nil && waiting(p) {
				continue
			}
			told = append(told, p)
			events.OnPod(p, corev1.EventTypeNormal, "NotTriggerScaleUp", "%s", msg)
		}
		act.TellSources(events, source, told, corev1.EventTypeNormal, "NotTriggerScaleUp", "no node group can run them: "+formatReasons(n.Reasons))
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
// greedy choices, or the whole-plan packing that needed fewer nodes; and
// the node counts of the plan and of the scheduler's own placement, when
// measured.
func packingOf(p *scaleup.Plan) string {
	s := "rounds"
	if p.Planner != "" {
		s = fmt.Sprintf("%s (rounds: %d nodes)", p.Planner, p.GreedyNodes)
	}
	if p.SchedulerNodes > 0 {
		s += fmt.Sprintf("; plan %d nodes, scheduler's placement %d", p.PlanNodes, p.SchedulerNodes)
	}
	return s
}
