package core

// The scale-up decision's input, gathered from an observation.

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
	"github.com/tidal-autoscaler/tidal/expander"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// decisionGroups are the observed groups as the scale-up decision sees
// them: their range this iteration (sched), target, upcoming nodes and
// whether they are usable (state: backoff).
func decisionGroups(o *observation, state *clusterstate.Tracker, sched *schedules) []scaleup.Group {
	var out []scaleup.Group
	for _, g := range o.groups {
		view := state.Group(g.group.Id())
		// A scheduled maximum caps the group below the cloud's.
		minSize, maxSize := sched.effectiveSize(g)
		// A starting node being removed (one no plan needed any more)
		// is not coming.
		starting := o.starting(view)
		sg := scaleup.Group{ID: g.group.Id(), Template: g.template, Min: minSize, Max: maxSize,
			Target: g.target, Upcoming: view.Upcoming - (len(view.Starting) - len(starting)), Starting: starting}
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

// decisionInput is what scaleup.Decide reads: the pod groups, the node
// groups, what the expanders consult (ectx), the limits and the options.
func decisionInput(o *observation, pods []*simulator.PodGroup, groups []scaleup.Group, ectx *expander.Context, opts Options,
	checker *simulator.Checker, chain *expander.Chain, cloud cloudprovider.CloudProvider) scaleup.Input {
	in := scaleup.Input{
		Checker: checker, NotReady: map[string]bool{}, Pending: pods, Groups: groups, Chain: chain,
		ExpanderContext:        ectx,
		BalanceSimilar:         opts.BalanceSimilarNodeGroups,
		BalancingIgnoredLabels: append(cloudprovider.BalancingIgnoredLabels(cloud), opts.BalancingIgnoreLabels...), BalancingLabels: opts.BalancingLabels,
		Limits: scaleup.Limits{MaxNodesTotal: opts.MaxNodesTotal, MaxNodesPerScaleUp: opts.MaxNodesPerScaleUp,
			MaxMilliCores: opts.MaxMilliCores, MaxMemoryBytes: opts.MaxMemoryBytes}.WithUsage(o.nodes, groups),
		MaxGroupBinpacking: opts.MaxNodeGroupBinpackingTime, Placement: opts.ScaleUpPlacement,
	}
	for name, n := range o.observed {
		if !n.Ready {
			in.NotReady[name] = true
		}
	}
	return in
}

// expanderContext gathers what the expanders consult: nodes per zone,
// the cpu-to-memory shape of what runs now, prices (pricing, nil: none),
// priorities, and the seed of the ties.
func expanderContext(o *observation, groups []scaleup.Group, seed uint64, priorities *expander.Priorities, pricing cloudprovider.PricingModel) *expander.Context {
	ctx := &expander.Context{ZoneNodes: map[string]int{}, NodePrices: map[string]float64{}, Seed: seed, Priorities: priorities}
	for _, n := range o.nodes {
		ctx.ZoneNodes[n.Labels[corev1.LabelTopologyZone]]++
	}
	for _, g := range groups {
		if g.Template == nil {
			continue
		}
		ctx.ZoneNodes[g.Template.Node.Labels[corev1.LabelTopologyZone]] += g.Upcoming
		if pricing != nil {
			if p, err := cloudprovider.GroupNodePrice(pricing, g.ID, g.Template.Node, o.now, o.now.Add(time.Hour)); err == nil {
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
