package core

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/act"
	"github.com/tidal-autoscaler/tidal/core/interrupt"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
)

// renewal is a node past its lifetime, with its pods as the snapshot had
// them before the iteration left the node out.
type renewal struct {
	interrupt.Action
	evict, daemonSet []*corev1.Pod
}

// expiries are the nodes past their group's maximum lifetime to renew
// (interrupt.Expiries); gone are the nodes already being taken away.
func (d *Decider) expiries(o *observation, gone []string) []renewal {
	busy := map[string]bool{}
	for _, n := range slices.Concat(gone, d.actuator.Removing().Nodes) {
		busy[n] = true
	}
	lifetime := map[string]time.Duration{}
	for _, g := range o.groups {
		if g.problem == "" {
			lifetime[g.group.Id()] = d.opts.groupOptions(o, g.group.Id()).MaxNodeLifetime
		}
	}
	var drift map[string]string
	if dd, ok := d.cloud.(cloudprovider.DriftDetector); ok && d.opts.ReplaceDriftedNodes {
		drift = dd.Drifted()
	}
	nodes := make([]interrupt.Aged, 0, len(o.nodes))
	for _, n := range o.nodes {
		nodes = append(nodes, interrupt.Aged{Name: n.Name, Group: o.groupOfNode[n.Name], Created: n.CreationTimestamp.Time,
			Ready: o.ready(n.Name), Busy: busy[n.Name], Drift: drift[n.Spec.ProviderID]})
	}
	var out []renewal
	for _, a := range interrupt.Expiries(nodes, lifetime, o.now) {
		r := renewal{Action: a}
		r.evict, r.daemonSet = d.podsOf(a.Node)
		out = append(out, r)
	}
	return out
}

// renew starts replacing the expired nodes whose pods, pictured without
// them, the scale-up plan found room for on ready nodes: new capacity is
// Ready first, then the node is marked, drained and deleted. The others
// wait for the nodes the plan asked for. It returns the nodes marked.
func (d *Decider) renew(ctx context.Context, o *observation, plan *scaleup.Plan, expired []renewal) map[string]bool {
	started := map[string]bool{}
	if len(expired) == 0 {
		return started
	}
	waiting := waitingFor(o, plan, d.opts.ExpendablePodsPriorityCutoff)
	var reps []act.Replacement
	for _, a := range expired {
		if waiting[a.Node] {
			klog.FromContext(ctx).V(2).Info("Node past its lifetime waits for replacement capacity to be Ready", "node", a.Node, "nodeGroup", a.Group)
			continue
		}
		reps = append(reps, act.Replacement{Removal: act.Removal{Name: a.Node, Node: nodesByName(o.nodes)[a.Node], Group: o.group(a.Group).group,
			Pods: a.evict, DaemonSet: a.daemonSet, Kind: a.Mark.Kind}, Mark: a.Mark, Write: true})
	}
	if len(reps) > 0 {
		failed := d.actuator.Replace(ctx, d.lifetime, reps)
		for _, r := range reps {
			started[r.Name] = failed[r.Name] == nil
		}
	}
	return started
}
