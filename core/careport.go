package core

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

// setCAGauges sets Cluster Autoscaler's gauges from an iteration, but for
// those set with tidal's own in setGauges.
func (p *publisher) setCAGauges(r *iterationReport) {
	m := p.metrics.ca
	o := r.observation
	m.nodeGroupsCount.WithLabelValues(caGroupAutoscaled).Set(float64(len(o.groups)))
	m.nodeGroupsCount.WithLabelValues(caGroupAutoprovisioned).Set(0) // tidal creates no node groups
	m.unschedulablePodsCount.WithLabelValues(caUnschedulable).Set(float64(o.unschedulable))
	m.unschedulablePodsCount.WithLabelValues(caSchedulerUnprocessed).Set(float64(o.unprocessed))
	m.maxNodesCount.Set(float64(maxNodes(o.groups, p.opts.MaxNodesTotal)))
	cores, memory := clusterCapacity(notBeingDeleted(o.nodes))
	m.cpuCurrentCores.Set(float64(cores / 1000))
	m.memoryCurrentBytes.Set(float64(memory))
	m.cpuLimitsCores.WithLabelValues(caMinimum).Set(float64(p.opts.MinMilliCores / 1000))
	m.cpuLimitsCores.WithLabelValues(caMaximum).Set(float64(p.opts.MaxMilliCores / 1000))
	m.memoryLimitsBytes.WithLabelValues(caMinimum).Set(float64(p.opts.MinMemoryBytes))
	m.memoryLimitsBytes.WithLabelValues(caMaximum).Set(float64(p.opts.MaxMemoryBytes))
	m.pendingNodeDeletions.Set(float64(len(r.removing)))
	if m.perNodeGroup != nil {
		p.setCANodeGroupGauges(m.perNodeGroup, r)
	}
}

// maxNodes is CA's max_nodes_count: the sum of the groups' max sizes, or
// --max-nodes-total when that is set and smaller.
func maxNodes(groups []*groupObservation, maxTotal int) int {
	sum := 0
	for _, g := range groups {
		sum += g.group.MaxSize()
	}
	if maxTotal > 0 {
		return min(sum, maxTotal)
	}
	return sum
}

// notBeingDeleted are the nodes without the ToBeDeleted taint.
func notBeingDeleted(nodes []*corev1.Node) []*corev1.Node {
	return slices.DeleteFunc(slices.Clone(nodes), func(n *corev1.Node) bool {
		return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == scaledown.ToBeDeletedTaint })
	})
}

// setCANodeGroupGauges sets CA's per node group gauges. A group is
// unhealthy while it cannot be used (its problem) or more of its nodes are
// missing from Ready than the cluster-wide limits of unready nodes allow
// (as in CA: the target less the nodes still coming less the ready ones,
// so nodes still booting do not count); its backoff
// series carries the error code of the failure behind the backoff.
func (p *publisher) setCANodeGroupGauges(m *caNodeGroupMetrics, r *iterationReport) {
	for _, g := range r.observation.groups {
		id := g.group.Id()
		v := r.group(id)
		m.minCount.WithLabelValues(id).Set(float64(g.group.MinSize()))
		m.maxCount.WithLabelValues(id).Set(float64(g.group.MaxSize()))
		m.targetCount.WithLabelValues(id).Set(float64(g.target))
		healthy := 1.0
		if g.problem != "" || tooManyUnready(max(0, g.target-v.Upcoming-v.Ready), v.Registered, p.opts.ClusterState) {
			healthy = 0
		}
		m.healthiness.WithLabelValues(id).Set(healthy)
		m.backoffStatus.DeletePartialMatch(map[string]string{"node_group": id})
		switch {
		case v.BackedOff && v.LastFailure != nil:
			m.backoffStatus.WithLabelValues(id, v.LastFailure.ErrorCode).Set(1)
		case v.BackedOff:
			m.backoffStatus.WithLabelValues(id, "unknown").Set(1)
		default:
			m.backoffStatus.WithLabelValues(id, "").Set(0)
		}
	}
}

// tooManyUnready applies the cluster's limits of unready nodes
// (--ok-total-unready-count, --max-total-unready-percentage) to a node
// group: unready of its total nodes.
func tooManyUnready(unready, total int, o clusterstate.Options) bool {
	return unready > o.OkTotalUnreadyCount && float64(unready) > o.MaxTotalUnreadyPercentage/100*float64(total)
}
