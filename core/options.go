package core

import (
	"slices"
	"time"

	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/core/clusterstate"
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
	// ProvisionAhead plans nodes for the replicas the pod loop asks for
	// before their pods exist.
	ProvisionAhead bool
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
	// ScaleDown are the scale-down flags as they are (one definition, in
	// config).
	ScaleDown config.ScaleDownOptions

	WriteStatusConfigMap   bool
	StatusConfigMapName    string
	RecordDuplicatedEvents bool
	// StatusLayout is config.StatusLayoutTidal or
	// config.StatusLayoutClusterAutoscaler.
	StatusLayout string

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

// OptionsFromConfig maps the flags onto the node loop's options.
func OptionsFromConfig(o *config.Options) Options {
	su, sd := o.ScaleUp, o.ScaleDown
	caNamespace, caName := o.Coexist.CALeaseNamespace, o.Coexist.CALeaseName
	if o.LeaderElect && caNamespace == o.Namespace && caName == o.LeaseName {
		// tidal leads through that very Lease: leader election keeps the
		// two apart, and tidal's own hold must not stop it.
		caNamespace, caName = "", ""
	}
	return Options{
		StatusLayout: o.Coexist.StatusLayout, ClusterAutoscalerLeaseNamespace: caNamespace, ClusterAutoscalerLeaseName: caName,
		Namespace: o.Namespace, ScanInterval: o.ScanInterval,
		Debounce: TriggerDebounce, DebounceMax: TriggerDebounceMax, RunTimeout: config.NodeLoopIterationTimeout,
		Expander: su.Expander, MaxNodesTotal: su.MaxNodesTotal, MaxNodesPerScaleUp: su.MaxNodesPerScaleUp,
		MaxMilliCores: su.MaxCores * 1000, MaxMemoryBytes: su.MaxMemoryGiB << 30, MaxBinpackingTime: su.MaxBinpackingTime,
		MaxNodeGroupBinpackingTime: su.MaxNodeGroupBinpackingTime,
		BalanceSimilarNodeGroups:   su.BalanceSimilarNodeGroups, BalancingIgnoreLabels: su.BalancingIgnoreLabels, BalancingLabels: su.BalancingLabels,
		ExpendablePodsPriorityCutoff: int32(su.ExpendablePodsPriorityCutoff), NewPodScaleUpDelay: su.NewPodScaleUpDelay,
		ProvisionAhead: su.ProvisionAhead, EnforceNodeGroupMinSize: su.EnforceNodeGroupMinSize, ScaleInView: o.HPA.ScaleInDeletionCost, NodeInfoCacheExpireTime: su.NodeInfoCacheExpireTime,
		ClusterState: clusterstate.Options{
			MaxNodeProvisionTime: o.MaxNodeProvisionTime, MaxNodeStartupTime: o.MaxNodeStartupTime, InitialBackoff: su.InitialBackoff, MaxBackoff: su.MaxBackoff,
			BackoffReset: su.BackoffReset, MaxTotalUnreadyPercentage: su.MaxTotalUnreadyPercentage, OkTotalUnreadyCount: su.OkTotalUnreadyCount,
		},
		Taints:               clusterstate.Taints{Startup: slices.Concat(o.Taints.StartupTaints, o.Taints.IgnoreTaints), Status: o.Taints.StatusTaints},
		WriteStatusConfigMap: su.WriteStatusConfigMap, StatusConfigMapName: su.StatusConfigMapName, RecordDuplicatedEvents: su.RecordDuplicatedEvents,
		DryRun: o.DryRun, ScaleDown: sd, MinMilliCores: su.MinCores * 1000, MinMemoryBytes: su.MinMemoryGiB << 30,
	}
}
