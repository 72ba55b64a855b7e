package core

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
)

// Iteration is one iteration's conclusions, as one plain value: what was
// observed, what was decided and done, and why. Decider.Decide returns it;
// everything that tells of an iteration is a pure function of it alone
// (it holds no cloud or lister, so a rendering calls nothing):
//
//   - StatusOf: the status ConfigMap in tidal's layout, and from that
//     clusterAutoscalerStatus, Cluster Autoscaler's layout;
//   - setGauges and setCAGauges: tidal's and Cluster Autoscaler's gauges;
//   - DecisionsOf: `tidal explain` and `tidal simulate`, and LastDecisions;
//   - publishCapacity: the capacity view the pod loop reads.
type Iteration struct {
	// Observed: the cluster and the cloud as the iteration saw them (the
	// node groups' sizes as they were when it ended), and the cluster's
	// health judged from them (unhealthy: nothing else was decided,
	// health.Reason says why).
	observed observed
	health   clusterstate.Health

	// Decided: the scale-up plan (nil: no pod called for one), the pending
	// pods left out of it and why (below the priority cutoff, too young,
	// unsupported), the schedules' bounds and problems (nil before the
	// ConfigMap was read), and the scale-down plan with what kept nodes
	// from being candidates and the cooldown that holds removals.
	plan        *scaleup.Plan
	expendable  int
	young       int
	unsupported int
	schedules   *scheduleReport
	scaleDown   *scaleDownReport
	// consolidation is the replacements' step (nil: off or not reached).
	consolidation *consolidationReport

	// Done: whether a group grew, the groups that refused to, the nodes
	// whose removal started (scaleDown.started), those being removed and
	// those being replaced.
	scaledUp     bool
	failedGroups []string
	removing     []string
	// replacing are the nodes being replaced (taken away by the cloud,
	// expired, drifted), and why.
	replacing []replacingNode

	// The node loop's state when the iteration ended: the node groups as
	// the cluster state sees them (backoff, upcoming nodes, last scale-up
	// and failure), and since when each unneeded node has been so.
	groups        map[string]clusterstate.GroupView
	unneededSince map[string]time.Time

	// limits are the settings the decisions were bounded by, as the
	// renderings report them.
	limits iterationLimits
}

// observed is what the renderings need of an iteration's observation, as
// plain values.
type observed struct {
	now time.Time
	// pending are the pods waiting for a node (pictured ones included),
	// unschedulable those the scheduler failed to place, unprocessed those
	// it has not tried yet.
	pending                    []*corev1.Pod
	unschedulable, unprocessed int
	// milliCores and memoryBytes are the capacity of the nodes not being
	// deleted.
	milliCores, memoryBytes int64
	// groupOfNode maps node names to their group's ID ("" for nodes of no
	// group).
	groupOfNode map[string]string
	// nodeGroups are the groups in the cloud's order.
	nodeGroups []groupSizes
}

// groupSizes are a node group's sizes, and the problem that kept it from
// being used this iteration ("" when none).
type groupSizes struct {
	id               string
	minSize, maxSize int
	target           int
	problem          string
}

// observedOf copies what the renderings need of o; called when the
// iteration ends, after the actuator's results changed its sizes.
func observedOf(o *observation) observed {
	cores, memory := clusterCapacity(notBeingDeleted(o.nodes))
	out := observed{now: o.now, pending: o.pending, unschedulable: o.unschedulable, unprocessed: o.unprocessed,
		milliCores: cores, memoryBytes: memory, groupOfNode: o.groupOfNode, nodeGroups: make([]groupSizes, 0, len(o.groups))}
	for _, g := range o.groups {
		out.nodeGroups = append(out.nodeGroups, groupSizes{id: g.group.Id(), minSize: g.group.MinSize(), maxSize: g.group.MaxSize(),
			target: g.target, problem: g.problem})
	}
	return out
}

// iterationLimits are the settings an iteration was decided within.
type iterationLimits struct {
	scaleDownEnabled               bool
	maxNodesTotal                  int
	minMilliCores, maxMilliCores   int64
	minMemoryBytes, maxMemoryBytes int64
	unready                        clusterstate.Options
}

// limitsOf are the settings of opts an iteration is decided within.
func limitsOf(opts Options) iterationLimits {
	return iterationLimits{scaleDownEnabled: opts.ScaleDown.Enabled, maxNodesTotal: opts.MaxNodesTotal,
		minMilliCores: opts.MinMilliCores, maxMilliCores: opts.MaxMilliCores, minMemoryBytes: opts.MinMemoryBytes,
		maxMemoryBytes: opts.MaxMemoryBytes, unready: opts.ClusterState}
}

// group is the cluster state's view of a node group at the iteration's end.
func (r *Iteration) group(id string) clusterstate.GroupView { return r.groups[id] }
