package core

// The scale-up decision's input, gathered from an observation.

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
	"github.com/tidal-autoscaler/tidal/expander"
	"github.com/tidal-autoscaler/tidal/simulator"
)

func (l *NodeLoop) decisionGroups(o *observation) []scaleup.Group {
	var out []scaleup.Group
	for _, g := range o.groups {
		view := l.state.Group(g.group.Id())
		// A scheduled maximum caps the group below the cloud's.
		minSize, maxSize := l.sched.effectiveSize(g)
		sg := scaleup.Group{ID: g.group.Id(), Template: g.template, Min: minSize, Max: maxSize,
			Target: g.target, Upcoming: view.Upcoming}
		switch {
		case g.problem != "":
			sg.Unavailable, sg.Upcoming = g.problem, 0
		case view.BackedOff:
			sg.Unavailable = view.BackoffReason
		}
		out = append(out, sg)
	}
	return out
}

func (l *NodeLoop) decisionInput(o *observation, pods []*simulator.PodGroup, groups []scaleup.Group) scaleup.Input {
	in := scaleup.Input{
		Checker: l.checker, NotReady: map[string]bool{}, Pending: pods, Groups: groups, Chain: l.chain,
		ExpanderContext:        l.expanderContext(o, groups),
		BalanceSimilar:         l.opts.BalanceSimilarNodeGroups,
		BalancingIgnoredLabels: append(cloudprovider.BalancingIgnoredLabels(l.cfg.Cloud), l.opts.BalancingIgnoreLabels...), BalancingLabels: l.opts.BalancingLabels,
		Limits: scaleup.Limits{MaxNodesTotal: l.opts.MaxNodesTotal, MaxNodesPerScaleUp: l.opts.MaxNodesPerScaleUp,
			MaxMilliCores: l.opts.MaxMilliCores, MaxMemoryBytes: l.opts.MaxMemoryBytes}.WithUsage(o.nodes, groups),
		MaxGroupBinpacking: l.opts.MaxNodeGroupBinpackingTime,
	}
	for name, n := range o.observed {
		if !n.Ready {
			in.NotReady[name] = true
		}
	}
	return in
}

// expanderContext gathers what the expanders consult: nodes per zone,
// the cpu-to-memory shape of what runs now, prices and priorities.
func (l *NodeLoop) expanderContext(o *observation, groups []scaleup.Group) *expander.Context {
	ctx := &expander.Context{ZoneNodes: map[string]int{}, NodePrices: map[string]float64{}, Seed: l.mem.rnd.Uint64(),
		Priorities: l.prio.current()}
	for _, n := range o.nodes {
		ctx.ZoneNodes[n.Labels[corev1.LabelTopologyZone]]++
	}
	pricing, _ := l.cfg.Cloud.Pricing()
	for _, g := range groups {
		if g.Template == nil {
			continue
		}
		ctx.ZoneNodes[g.Template.Node.Labels[corev1.LabelTopologyZone]] += g.Upcoming
		if pricing != nil {
			if p, err := pricing.NodePrice(g.Template.Node, o.now, o.now.Add(time.Hour)); err == nil {
				ctx.NodePrices[g.ID] = p
			}
		}
	}
	var cpu, mem int64
	for _, ni := range o.snapshot.Infos() {
		r := ni.GetRequested()
		cpu += r.GetMilliCPU()
		mem += r.GetMemory()
	}
	if mem > 0 {
		ctx.RequestedCPUPerGiB = float64(cpu) / 1000 / (float64(mem) / (1 << 30))
	}
	return ctx
}
