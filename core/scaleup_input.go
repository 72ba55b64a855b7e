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

func (d *Decider) decisionGroups(o *observation) []scaleup.Group {
	var out []scaleup.Group
	for _, g := range o.groups {
		view := d.state.Group(g.group.Id())
		// A scheduled maximum caps the group below the cloud's.
		minSize, maxSize := d.sched.effectiveSize(g)
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

func (d *Decider) decisionInput(o *observation, pods []*simulator.PodGroup, groups []scaleup.Group) scaleup.Input {
	in := scaleup.Input{
		Checker: d.checker, NotReady: map[string]bool{}, Pending: pods, Groups: groups, Chain: d.chain,
		ExpanderContext:        d.expanderContext(o, groups),
		BalanceSimilar:         d.opts.BalanceSimilarNodeGroups,
		BalancingIgnoredLabels: append(cloudprovider.BalancingIgnoredLabels(d.cloud), d.opts.BalancingIgnoreLabels...), BalancingLabels: d.opts.BalancingLabels,
		Limits: scaleup.Limits{MaxNodesTotal: d.opts.MaxNodesTotal, MaxNodesPerScaleUp: d.opts.MaxNodesPerScaleUp,
			MaxMilliCores: d.opts.MaxMilliCores, MaxMemoryBytes: d.opts.MaxMemoryBytes}.WithUsage(o.nodes, groups),
		MaxGroupBinpacking: d.opts.MaxNodeGroupBinpackingTime,
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
func (d *Decider) expanderContext(o *observation, groups []scaleup.Group) *expander.Context {
	ctx := &expander.Context{ZoneNodes: map[string]int{}, NodePrices: map[string]float64{}, Seed: d.mem.rnd.Uint64(),
		Priorities: d.prio.current()}
	for _, n := range o.nodes {
		ctx.ZoneNodes[n.Labels[corev1.LabelTopologyZone]]++
	}
	pricing, _ := d.cloud.Pricing()
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
