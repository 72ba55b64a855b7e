package core

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/core/clusterstate"
)

// updateClusterState feeds the observation to the cluster state, cancels
// requests that will never be fulfilled, and judges the cluster's health.
func (d *Decider) updateClusterState(ctx context.Context, o *observation, report *Iteration) clusterstate.Health {
	start := d.clock.Now()
	defer func() { d.metrics.Observe("updateClusterState", d.clock.Since(start)) }()
	byProviderID := map[string]*corev1.Node{}
	var all []clusterstate.NodeObservation
	for _, n := range o.nodes {
		byProviderID[n.Spec.ProviderID] = n
		all = append(all, o.observed[n.Name])
	}
	var groupObs []clusterstate.GroupObservation
	for _, g := range o.groups {
		if g.problem != "" {
			continue
		}
		nodes := map[string]clusterstate.NodeObservation{}
		for _, in := range g.instances {
			if n, ok := byProviderID[in.Id]; ok {
				nodes[in.Id] = o.observed[n.Name]
			}
		}
		groupObs = append(groupObs, clusterstate.GroupObservation{ID: g.group.Id(), Target: g.target, Instances: g.instances, Nodes: nodes,
			MaxNodeProvisionTime: d.opts.groupOptions(o, g.group.Id()).MaxNodeProvisionTime})
	}
	for _, c := range d.state.Update(o.now, groupObs) {
		d.cancel(ctx, o, report, c)
	}
	return d.state.UpdateHealth(o.now, all)
}
