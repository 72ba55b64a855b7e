package core

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/core/telemetry"
)

// setCAGauges renders an iteration into Cluster Autoscaler's gauges, but
// for those set with tidal's own in setGauges.
func setCAGauges(m *telemetry.CAMetrics, r *Iteration) {
	o, lim := r.observed, r.limits
	m.NodeGroupsCount.WithLabelValues(telemetry.CAGroupAutoscaled).Set(float64(len(o.nodeGroups)))
	m.NodeGroupsCount.WithLabelValues(telemetry.CAGroupAutoprovisioned).Set(0) // tidal creates no node groups
	m.UnschedulablePodsCount.WithLabelValues(telemetry.CAUnschedulable).Set(float64(o.unschedulable))
	m.UnschedulablePodsCount.WithLabelValues(telemetry.CASchedulerUnprocessed).Set(float64(o.unprocessed))
	m.MaxNodesCount.Set(float64(maxNodes(o.nodeGroups, lim.maxNodesTotal)))
	m.CPUCurrentCores.Set(float64(o.milliCores / 1000))
	m.MemoryCurrentBytes.Set(float64(o.memoryBytes))
	m.CPULimitsCores.WithLabelValues(telemetry.CAMinimum).Set(float64(lim.minMilliCores / 1000))
	m.CPULimitsCores.WithLabelValues(telemetry.CAMaximum).Set(float64(lim.maxMilliCores / 1000))
	m.MemoryLimitsBytes.WithLabelValues(telemetry.CAMinimum).Set(float64(lim.minMemoryBytes))
	m.MemoryLimitsBytes.WithLabelValues(telemetry.CAMaximum).Set(float64(lim.maxMemoryBytes))
	m.PendingNodeDeletions.Set(float64(len(r.removing)))
	if m.PerNodeGroup != nil {
		setCANodeGroupGauges(m.PerNodeGroup, r)
	}
}

// maxNodes is CA's max_nodes_count: the sum of the groups' max sizes, or
// --max-nodes-total when that is set and smaller.
func maxNodes(groups []groupSizes, maxTotal int) int {
	sum := 0
	for _, g := range groups {
		sum += g.maxSize
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
func setCANodeGroupGauges(m *telemetry.CANodeGroupMetrics, r *Iteration) {
	for _, g := range r.observed.nodeGroups {
		id := g.id
		v := r.group(id)
		m.MinCount.WithLabelValues(id).Set(float64(g.minSize))
		m.MaxCount.WithLabelValues(id).Set(float64(g.maxSize))
		m.TargetCount.WithLabelValues(id).Set(float64(g.target))
		healthy := 1.0
		if g.problem != "" || tooManyUnready(max(0, g.target-v.Upcoming-v.Ready), v.Registered, r.limits.unready) {
			healthy = 0
		}
		m.Healthiness.WithLabelValues(id).Set(healthy)
		m.BackoffStatus.DeletePartialMatch(map[string]string{"node_group": id})
		switch {
		case v.BackedOff && v.LastFailure != nil:
			m.BackoffStatus.WithLabelValues(id, v.LastFailure.ErrorCode).Set(1)
		case v.BackedOff:
			m.BackoffStatus.WithLabelValues(id, "unknown").Set(1)
		default:
			m.BackoffStatus.WithLabelValues(id, "").Set(0)
		}
	}
}

// tooManyUnready applies the cluster's limits of unready nodes
// (--ok-total-unready-count, --max-total-unready-percentage) to a node
// group: unready of its total nodes.
func tooManyUnready(unready, total int, o clusterstate.Options) bool {
	return unready > o.OkTotalUnreadyCount && float64(unready) > o.MaxTotalUnreadyPercentage/100*float64(total)
}
