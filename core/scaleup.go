package core

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/core/interrupt"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
)

// scaleUp decides and carries out scale-ups for the pending pods. A group
// whose IncreaseSize fails is backed off and the decision is made again at
// once without it (scaleup.Retry), so the next-best group is used in the
// same iteration. A group backed off because the cloud reclaims a spot
// instance of it is a last resort: the decision is made once more with
// it when pods are left that no other group helped (interrupt.LastResort).
func (d *Decider) scaleUp(ctx context.Context, o *observation, report *Iteration) error {
	start := d.clock.Now()
	defer func() { d.metrics.Observe("scaleUp", d.clock.Since(start)) }()
	pods := d.selectPending(ctx, o, report)
	if len(pods) == 0 {
		return nil
	}
	podGroups := scaleup.OrderGroups(d.keys.Group(pods), d.mem.unfinished)
	groups := decisionGroups(o, d.state, d.sched)
	avoided := d.avoided(groups)
	cleared := d.clearedNominations(d.startingNodes(o))
	waiting := d.waiters.groups()
	for attempt := 0; ; attempt++ {
		pricing, _ := d.cloud.Pricing()
		ectx := expanderContext(o, groups, d.mem.rnd.Uint64(), d.prio.current(), pricing)
		in := decisionInput(o, podGroups, groups, ectx, d.opts, d.checker, d.chain, d.cloud)
		in.Cleared, in.Waiting = cleared, waiting
		plan, reused, err := d.decide(ctx, in)
		if err != nil {
			return fmt.Errorf("scale-up decision: %w", err)
		}
		report.plan = plan
		if !reused {
			d.metrics.Observe("scaleUp:filterSchedulable", plan.Timings.FilterSchedulable)
			d.metrics.Observe("scaleUp:estimate", plan.Timings.Estimate)
		}
		d.mem.unfinished = plan.UnfinishedKeys()
		results := d.execute(ctx, o, plan, report)
		for _, r := range results {
			if r.Refused != "" {
				report.failedGroups = append(report.failedGroups, r.Group)
			}
		}
		var again bool
		if groups, again = scaleup.Retry(groups, results, attempt); !again {
			// Groups backed off for a spot reclaim are a last resort.
			groups, again = interrupt.LastResort(groups, plan, avoided)
			avoided = nil
		}
		if !again {
			break
		}
	}
	explainNoScaleUp(d.events, d.ahead.source, report.plan, func(p *corev1.Pod) bool { return d.waiters.stillComing(p.UID, d.coming) })
	return nil
}

// decide is the scale-up decision within --max-binpacking-time.
func (d *Decider) decide(ctx context.Context, in scaleup.Input) (*scaleup.Plan, bool, error) {
	if d.opts.MaxBinpackingTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.opts.MaxBinpackingTime)
		defer cancel()
	}
	return d.mem.scaleUp.Decide(ctx, in)
}

// selectPending keeps the pending pods that may trigger a scale-up
// (scaleup.SelectPending), counts the others in the report and tells the
// pods the simulation cannot judge why they wait.
func (d *Decider) selectPending(ctx context.Context, o *observation, report *Iteration) []*corev1.Pod {
	sel := d.mem.pendingOrder.Select(o.pending, o.now, scaleup.Selection{
		PriorityCutoff: d.opts.ExpendablePodsPriorityCutoff, NewPodDelay: d.opts.NewPodScaleUpDelay})
	report.expendable += sel.Expendable
	report.young += sel.Young
	report.unsupported += len(sel.Unsupported)
	for _, p := range sel.Unsupported {
		d.events.OnPod(p, corev1.EventTypeNormal, "NotTriggerScaleUp",
			"pod didn't trigger scale-up: it uses dynamic resource claims, which tidal does not simulate")
	}
	klog.FromContext(ctx).V(4).Info("Pending pods", "unschedulable", len(o.pending), "considered", len(sel.Pods),
		"expendable", report.expendable, "young", report.young)
	return sel.Pods
}
