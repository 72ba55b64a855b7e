package core

import (
	"time"

	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
)

// Options are the node loop's settings, taken from flags.
type Options struct {
	Namespace    string
	ScanInterval time.Duration
	// Debounce and DebounceMax: a run triggered by a new unschedulable pod
	// waits until no new one came for Debounce, or DebounceMax passed, so a
	// burst of pods is one decision.
	Debounce    time.Duration
	DebounceMax time.Duration
	// RunTimeout bounds one iteration; an iteration that started is not
	// cancelled by shutdown.
	RunTimeout time.Duration

	Expander           string
	MaxNodesTotal      int
	MaxMilliCores      int64
	MaxMemoryBytes     int64
	MaxNodesPerScaleUp int
	MaxBinpackingTime  time.Duration
	// MaxNodeGroupBinpackingTime bounds each group's estimate.
	MaxNodeGroupBinpackingTime   time.Duration
	BalanceSimilarNodeGroups     bool
	BalancingIgnoreLabels        []string
	BalancingLabels              []string
	ExpendablePodsPriorityCutoff int32
	NewPodScaleUpDelay           time.Duration
	// MaxNodeLifetime replaces nodes older than it (0: never), unless
	// their group's options say otherwise.
	MaxNodeLifetime time.Duration
	// ReplaceDriftedNodes replaces nodes the cloud says no longer match
	// what their group launches (cloudprovider.DriftDetector).
	ReplaceDriftedNodes bool
	// ProvisionAhead plans nodes for the replicas the pod loop asks for
	// before their pods exist.
	ProvisionAhead bool
	// NominatePlannedPods sets the status.nominatedNodeName of pending pods
	// to the ready nodes planned for them, at most MaxBulkNominations
	// writes an iteration.
	NominatePlannedPods bool
	MaxBulkNominations  int
	// ScaleUpPlacement chooses the node count scale-ups ask for: the
	// plan's, or what the scheduler's own placement needs.
	ScaleUpPlacement scaleup.Placement
	// EnforceNodeGroupMinSize raises every group below its minimum to it
	// (--enforce-node-group-min-size), not only those a schedule names.
	EnforceNodeGroupMinSize bool
	// ScaleInView keeps the view of the nodes the pod loop's scale-ins
	// read (ScaleInNodes; --scale-in-deletion-cost); without it no view is
	// built.
	ScaleInView bool
	// NodeInfoCacheExpireTime is how long a template made from a live node
	// serves a group that no longer has a good node.
	NodeInfoCacheExpireTime time.Duration

	// MinMilliCores and MinMemoryBytes: removals never take the cluster
	// below these totals.
	MinMilliCores  int64
	MinMemoryBytes int64

	ClusterState clusterstate.Options
	// Taints says which taints mark a node still starting (not ready) or
	// held (ready, taking no pods), and which taints templates leave out.
	Taints clusterstate.Taints
	// ScaleDown are the scale-down settings.
	ScaleDown ScaleDownOptions
	// Consolidation are the replacement and disruption budget settings.
	Consolidation ConsolidationOptions

	WriteStatusConfigMap   bool
	StatusConfigMapName    string
	RecordDuplicatedEvents bool
	// ClusterAutoscalerStatusLayout writes the status ConfigMap in Cluster
	// Autoscaler's layout instead of tidal's.
	ClusterAutoscalerStatusLayout bool

	// DryRun is shadow mode: decide, record each decision (dryrun.go),
	// act on none. The loop then also runs beside a Cluster Autoscaler.
	DryRun bool
	// KeepDecisions makes each iteration keep its conclusions as plain
	// data (LastDecisions), for tidal explain; the running loops do not
	// pay for it.
	KeepDecisions bool

	// ClusterAutoscalerLease is the namespace and name of Cluster
	// Autoscaler's Lease, held by a running one: the loop does not act
	// meanwhile. An empty name watches none.
	ClusterAutoscalerLeaseNamespace, ClusterAutoscalerLeaseName string
}

// A run triggered by a new unschedulable pod waits until no other came for
// TriggerDebounce, or TriggerDebounceMax passed since the first: a burst of
// pods created together (a Deployment scaled up) is one decision, and the
// first pod still waits under a second.
const (
	TriggerDebounce    = 250 * time.Millisecond
	TriggerDebounceMax = 800 * time.Millisecond
)

// ScaleDownOptions are the scale-down settings, Cluster Autoscaler's
// --scale-down-* and drain flags.
type ScaleDownOptions struct {
	Enabled                           bool
	UtilizationThreshold              float64
	UnneededTime                      time.Duration
	UnreadyTime                       time.Duration
	UnreadyEnabled                    bool
	UnusedNewNodesEnabled             bool
	GPUUtilizationThreshold           float64
	NonEmptyCandidatesCount           int
	DelayAfterAdd                     time.Duration
	DelayAfterDelete                  time.Duration
	DelayAfterFailure                 time.Duration
	IgnoreDaemonSetsUtilization       bool
	IgnoreMirrorPodsUtilization       bool
	SkipNodesWithSystemPods           bool
	SkipNodesWithLocalStorage         bool
	SkipNodesWithCustomControllerPods bool
	MaxParallelism                    int
	MaxDrainParallelism               int
	MaxGracefulTerminationSec         int
	MaxPodEvictionTime                time.Duration
	MaxPendingEvictedPods             int
	PendingEvictedPodsTimeout         time.Duration
	MaxBulkSoftTaintCount             int
	MaxBulkSoftTaintTime              time.Duration
	NodeDeleteDelayAfterTaint         time.Duration
	DaemonSetEvictionForOccupiedNodes bool
	DaemonSetEvictionForEmptyNodes    bool
	CordonNodeBeforeTerminating       bool
}

// ConsolidationOptions are the settings of replacements (core/consolidate)
// and of the disruption budgets removals and replacements share.
type ConsolidationOptions struct {
	// Replace turns replacements on (--consolidation-replace).
	Replace bool
	// MinSavingFraction and MinSavingPerHour: the least a replacement
	// saves, as a share of the old nodes' cost and per hour.
	MinSavingFraction, MinSavingPerHour float64
	// MaxNodes bounds the nodes of one multi-node replacement.
	MaxNodes int
	// Backoff and MaxBackoff: the wait after a failed replacement,
	// doubled per failure in a row.
	Backoff, MaxBackoff time.Duration
	// Budget is the cluster's disruption budget, GroupBudget each group's
	// and GroupBudgets the groups' own, by group.
	Budget, GroupBudget scaledown.DisruptionBudget
	GroupBudgets        map[string]scaledown.DisruptionBudget
}
