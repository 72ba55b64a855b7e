package core

import (
	"slices"
	"time"

	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
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
	// NodeInfoCacheExpireTime is how long a template made from a live node
	// serves a group that no longer has a good node.
	NodeInfoCacheExpireTime time.Duration

	ClusterState clusterstate.Options
	// Taints says which taints mark a node still starting (not ready) or
	// held (ready, taking no pods), and which taints templates leave out.
	Taints    clusterstate.Taints
	ScaleDown ScaleDownOptions

	WriteStatusConfigMap   bool
	StatusConfigMapName    string
	RecordDuplicatedEvents bool
	// StatusLayout is config.StatusLayoutTidal or
	// config.StatusLayoutClusterAutoscaler.
	StatusLayout string

	// ClusterAutoscalerLease is the namespace and name of Cluster
	// Autoscaler's Lease, held by a running one: the loop does not act
	// meanwhile. An empty name watches none.
	ClusterAutoscalerLeaseNamespace, ClusterAutoscalerLeaseName string
}

// ScaleDownOptions are the scale-down settings, Cluster Autoscaler's names.
type ScaleDownOptions struct {
	Enabled              bool
	UtilizationThreshold float64
	UnneededTime         time.Duration
	UnreadyTime          time.Duration
	// KeepUnready keeps unready nodes (--scale-down-unready-enabled=false).
	KeepUnready bool
	// GPUUtilizationThreshold is the threshold of nodes with GPUs, judged
	// by GPU requests alone.
	GPUUtilizationThreshold float64
	// MaxNonEmptyUnneeded: --scale-down-non-empty-candidates-count.
	MaxNonEmptyUnneeded int
	DelayAfterAdd       time.Duration
	DelayAfterDelete    time.Duration
	DelayAfterFailure   time.Duration

	IgnoreDaemonSetsUtilization       bool
	IgnoreMirrorPodsUtilization       bool
	SkipNodesWithSystemPods           bool
	SkipNodesWithLocalStorage         bool
	SkipNodesWithCustomControllerPods bool

	// MaxParallelism bounds removals in progress; MaxDrainParallelism the
	// non-empty ones among them.
	MaxParallelism         int
	MaxDrainParallelism    int
	MaxGracefulTermination time.Duration
	MaxPodEvictionTime     time.Duration
	// EvictionRetryInterval is how long an eviction refused by a PDB waits
	// before it is tried again.
	EvictionRetryInterval time.Duration
	// CordonNodeBeforeTerminating cordons a node along with its deletion
	// taint.
	CordonNodeBeforeTerminating bool
	// PodGonePollInterval is how often a drain looks whether its evicted
	// pods are gone.
	PodGonePollInterval time.Duration
	// MaxBulkSoftTaint and MaxBulkSoftTaintTime bound the DeletionCandidate
	// taints written (put or taken off) in one iteration.
	MaxBulkSoftTaint     int
	MaxBulkSoftTaintTime time.Duration
	// NodeDeleteDelayAfterTaint: a removal waits this long after its taint
	// before it reads the node's pods again, so the scheduler has seen the
	// taint and any pod it bound meanwhile is found.
	NodeDeleteDelayAfterTaint time.Duration
	// DaemonSetEviction: which removals evict DaemonSet pods, best-effort,
	// before the node goes.
	DaemonSetEviction scaledown.DaemonSetEviction

	// MinMilliCores and MinMemoryBytes: removals never take the cluster
	// below these totals.
	MinMilliCores  int64
	MinMemoryBytes int64
}

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
		Debounce: 250 * time.Millisecond, DebounceMax: 800 * time.Millisecond, RunTimeout: config.NodeLoopIterationTimeout,
		Expander: su.Expander, MaxNodesTotal: su.MaxNodesTotal, MaxNodesPerScaleUp: su.MaxNodesPerScaleUp,
		MaxMilliCores: su.MaxCores * 1000, MaxMemoryBytes: su.MaxMemoryGiB << 30, MaxBinpackingTime: su.MaxBinpackingTime,
		MaxNodeGroupBinpackingTime: su.MaxNodeGroupBinpackingTime,
		BalanceSimilarNodeGroups:   su.BalanceSimilarNodeGroups, BalancingIgnoreLabels: su.BalancingIgnoreLabels, BalancingLabels: su.BalancingLabels,
		ExpendablePodsPriorityCutoff: int32(su.ExpendablePodsPriorityCutoff), NewPodScaleUpDelay: su.NewPodScaleUpDelay,
		ProvisionAhead: su.ProvisionAhead, NodeInfoCacheExpireTime: su.NodeInfoCacheExpireTime,
		ClusterState: clusterstate.Options{
			MaxNodeProvisionTime: o.MaxNodeProvisionTime, MaxNodeStartupTime: o.MaxNodeStartupTime, InitialBackoff: su.InitialBackoff, MaxBackoff: su.MaxBackoff,
			BackoffReset: su.BackoffReset, MaxTotalUnreadyPercentage: su.MaxTotalUnreadyPercentage, OkTotalUnreadyCount: su.OkTotalUnreadyCount,
		},
		Taints:               clusterstate.Taints{Startup: slices.Concat(o.Taints.StartupTaints, o.Taints.IgnoreTaints), Status: o.Taints.StatusTaints},
		WriteStatusConfigMap: su.WriteStatusConfigMap, StatusConfigMapName: su.StatusConfigMapName, RecordDuplicatedEvents: su.RecordDuplicatedEvents,
		ScaleDown: ScaleDownOptions{
			Enabled: sd.Enabled, UtilizationThreshold: sd.UtilizationThreshold, UnneededTime: sd.UnneededTime, UnreadyTime: sd.UnreadyTime,
			KeepUnready: !sd.UnreadyEnabled, GPUUtilizationThreshold: sd.GPUUtilizationThreshold, MaxNonEmptyUnneeded: sd.NonEmptyCandidatesCount,
			DelayAfterAdd: sd.DelayAfterAdd, DelayAfterDelete: sd.DelayAfterDelete, DelayAfterFailure: sd.DelayAfterFailure,
			IgnoreDaemonSetsUtilization: sd.IgnoreDaemonSetsUtilization,
			IgnoreMirrorPodsUtilization: sd.IgnoreMirrorPodsUtilization, SkipNodesWithSystemPods: sd.SkipNodesWithSystemPods,
			SkipNodesWithLocalStorage: sd.SkipNodesWithLocalStorage, SkipNodesWithCustomControllerPods: sd.SkipNodesWithCustomControllerPods,
			MaxParallelism: sd.MaxParallelism, MaxDrainParallelism: sd.MaxDrainParallelism,
			MaxGracefulTermination: time.Duration(sd.MaxGracefulTerminationSec) * time.Second, MaxPodEvictionTime: sd.MaxPodEvictionTime,
			EvictionRetryInterval: 5 * time.Second, CordonNodeBeforeTerminating: sd.CordonNodeBeforeTerminating, PodGonePollInterval: time.Second,
			MaxBulkSoftTaint: sd.MaxBulkSoftTaintCount, MaxBulkSoftTaintTime: sd.MaxBulkSoftTaintTime,
			NodeDeleteDelayAfterTaint: sd.NodeDeleteDelayAfterTaint, DaemonSetEviction: scaledown.DaemonSetEviction{OccupiedNodes: sd.DaemonSetEvictionForOccupiedNodes, EmptyNodes: sd.DaemonSetEvictionForEmptyNodes},
			MinMilliCores: su.MinCores * 1000, MinMemoryBytes: su.MinMemoryGiB << 30,
		},
	}
}
