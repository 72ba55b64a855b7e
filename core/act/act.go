// Package act is where the node loop writes: it grows and shrinks node
// groups through the cloud provider, writes and removes tidal's taints,
// drains and deletes nodes. The loop hands it what its decisions
// concluded, and it returns what happened (results, refusals, errors); it
// never reads or changes the cluster state or the loop's memory, which the
// loop updates from the results in one place.
//
// Two implementations: Live acts, DryRun (shadow mode) records each
// decision once while it stands (a log line, the event the action would
// have recorded, the tidal_dry_run_* metrics) and lets no write leave it.
package act

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/nominate"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
)

// Actuator is every write the node loop makes.
type Actuator interface {
	// Begin starts an iteration's acting: the live actuator takes off the
	// taints failed removals left first.
	Begin(ctx context.Context)
	// End ends it; decided is false when the iteration decided nothing
	// (it failed). targets are the groups' target sizes as observed.
	End(decided bool, targets map[string]int)
	// Grow asks the cloud for nodes of a group: a scale-up for pending
	// pods, a scheduled minimum, an allocation trigger.
	Grow(ctx context.Context, g Growth) Result
	// Cancel drops requested nodes that will not come: it lowers the
	// target for failed launches and deletes nodes that came too late.
	Cancel(ctx context.Context, c Cancel) Result
	// SoftTaint writes and removes DeletionCandidate taints within a
	// budget.
	SoftTaint(ctx context.Context, s SoftTaints) SoftTaintResult
	// Remove starts removing nodes in the background (taint, drain,
	// delete); life is how long removals may run: when it ends they stop
	// and their taints come off. It returns the nodes whose removal
	// started.
	Remove(life context.Context, rs []Removal) []string
	// Consolidate asks the cloud for the new nodes of a consolidating
	// replacement; its old nodes go through Remove once those are Ready.
	Consolidate(ctx context.Context, r Consolidation) Result
	// Replace marks nodes the cloud takes away on its own (an
	// interruption) at once, then drains them within their deadline and
	// deletes them in the background, for as long as life lasts. It
	// returns the nodes it could not mark.
	Replace(ctx, life context.Context, rs []Replacement) map[string]error
	// CleanUpTaints takes off the deletion taints (and tidal's cordon)
	// of nodes no removal owns, as the loop starts acting.
	CleanUpTaints(ctx context.Context, nodes []*corev1.Node) error
	// Nominate sets and clears status.nominatedNodeName of pending pods
	// (the scheduler tries a pod's nominated node first) and returns the
	// changes whose write failed.
	Nominate(ctx context.Context, clear, set []nominate.Change) []nominate.Change
	// Removing is what removals are under way.
	Removing() Removing
	// Wait blocks until every removal has finished or been rolled back.
	Wait()
}

// Growth is a group to grow.
type Growth struct {
	Group cloudprovider.NodeGroup
	// Up is from which size to which, the group's max, the pods it is for
	// and, for pending pods, the expander's steps and the options.
	Up scaleup.ScaleUp
	// Packing names how the plan was packed, for the log.
	Packing string
	// Why is empty for pending pods, else what asks for the nodes (a
	// scheduled minimum, an allocation trigger).
	Why string
	// Trigger names the allocation trigger, if that is why.
	Trigger string
	// NodeCapacity is what one new node of the group can hold (its
	// template's allocatable): with the node count, the capacity a
	// scale-up for pending pods asks for, whatever group gives it.
	NodeCapacity corev1.ResourceList
}

// Cancel is requested nodes to drop.
type Cancel struct {
	clusterstate.Cancel
	Group cloudprovider.NodeGroup
	// Nodes are the registered ones of c.Registered as the informer has
	// them.
	Nodes []*corev1.Node
	// Waiting are the pods that waited for the nodes: they hear it.
	Waiting []*corev1.Pod
	// SinceReported is how long ago the cloud told of the failed launches
	// (zero: it did not), for the log.
	SinceReported time.Duration
}

// Result is what a write to a node group did.
type Result struct {
	Group string
	// Grown is how many nodes the cloud accepted (zero when refused, and
	// in shadow mode).
	Grown int
	// Refused is the cloud's error when it refused to grow the group.
	Refused error
	// Sizes are the group's target and instances read again after a
	// cancel (nil: not read).
	Sizes *Sizes
}

// Sizes are a group's target size and instances as read from the cloud.
type Sizes struct {
	Target       int
	TargetErr    error
	Instances    []cloudprovider.Instance
	InstancesErr error
}

// SoftTaints are the DeletionCandidate taints to remove and to add; since
// is since when each node to taint is unneeded (the taint's value).
type SoftTaints struct {
	Remove, Add []string
	Since       map[string]time.Time
}

// SoftTaintResult says how many writes were made (or tried), how many wait
// for the next iterations, and which failed.
type SoftTaintResult struct {
	Written, Left int
	Failed        map[string]error
}

// Removal is a node to remove.
type Removal struct {
	// Name is the node's; Node its object (nil when the informer lost it:
	// nothing starts).
	Name  string
	Node  *corev1.Node
	Group cloudprovider.NodeGroup
	// Pods are to be evicted, DaemonSet the node's DaemonSet pods.
	Pods, DaemonSet []*corev1.Pod
	// Kind is empty, underutilized or unready (the metric's reason).
	Kind string
}

// Removing is what removals are under way, and when the last ended.
type Removing struct {
	// Nodes are being removed; PerGroup counts them by node group.
	Nodes    []string
	PerGroup map[string]int
	// All and Drains count removals in progress, all and those with
	// pods to move.
	All, Drains int
	// LastDelete and LastFailure are when a removal last succeeded and
	// failed.
	LastDelete, LastFailure time.Time
	// Evictions are the drains' evictions of the last hour, oldest first.
	Evictions []scaledown.Eviction
}

// Options are the scale-down settings acting reads.
type Options struct {
	CordonNodeBeforeTerminating       bool
	NodeDeleteDelayAfterTaint         time.Duration
	MaxPodEvictionTime                time.Duration
	MaxGracefulTerminationSec         int
	DaemonSetEvictionForOccupiedNodes bool
	DaemonSetEvictionForEmptyNodes    bool
	MaxBulkSoftTaintCount             int
	MaxBulkSoftTaintTime              time.Duration
	// Pacing paces the evictions of scale-down drains.
	Pacing scaledown.Pacing
}
