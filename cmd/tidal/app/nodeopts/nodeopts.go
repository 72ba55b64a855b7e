// Package nodeopts maps tidal's flags onto the node loop's options, so
// that the node loop (core) links no flag package.
package nodeopts

import (
	"slices"

	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/core"
	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
)

// FromConfig maps the flags onto the node loop's options.
func FromConfig(o *config.Options) core.Options {
	su, sd := o.ScaleUp, o.ScaleDown
	caNamespace, caName := o.Coexist.CALeaseNamespace, o.Coexist.CALeaseName
	if o.LeaderElect && caNamespace == o.Namespace && caName == o.LeaseName {
		// tidal leads through that very Lease: leader election keeps the
		// two apart, and tidal's own hold must not stop it.
		caNamespace, caName = "", ""
	}
	return core.Options{
		ClusterAutoscalerStatusLayout: o.Coexist.StatusLayout == config.StatusLayoutClusterAutoscaler, ClusterAutoscalerLeaseNamespace: caNamespace, ClusterAutoscalerLeaseName: caName,
		Namespace: o.Namespace, ScanInterval: o.ScanInterval,
		Debounce: core.TriggerDebounce, DebounceMax: core.TriggerDebounceMax, RunTimeout: config.NodeLoopIterationTimeout,
		Expander: su.Expander, MaxNodesTotal: su.MaxNodesTotal, MaxNodesPerScaleUp: su.MaxNodesPerScaleUp,
		MaxMilliCores: su.MaxCores * 1000, MaxMemoryBytes: su.MaxMemoryGiB << 30, MaxBinpackingTime: su.MaxBinpackingTime,
		MaxNodeGroupBinpackingTime: su.MaxNodeGroupBinpackingTime,
		BalanceSimilarNodeGroups:   su.BalanceSimilarNodeGroups, BalancingIgnoreLabels: su.BalancingIgnoreLabels, BalancingLabels: su.BalancingLabels,
		ExpendablePodsPriorityCutoff: int32(su.ExpendablePodsPriorityCutoff), NewPodScaleUpDelay: su.NewPodScaleUpDelay,
		MaxNodeLifetime: o.MaxNodeLifetime, ReplaceDriftedNodes: o.ReplaceDriftedNodes,
		NominatePlannedPods: su.NominatePlannedPods, MaxBulkNominations: su.MaxBulkNominations, ScaleUpPlacement: scaleup.Placement(su.ScaleUpPlacement),
		ProvisionAhead: su.ProvisionAhead, EnforceNodeGroupMinSize: su.EnforceNodeGroupMinSize, ScaleInView: o.HPA.ScaleInDeletionCost, NodeInfoCacheExpireTime: su.NodeInfoCacheExpireTime,
		ClusterState: clusterstate.Options{
			MaxNodeProvisionTime: o.MaxNodeProvisionTime, MaxNodeStartupTime: o.MaxNodeStartupTime, InitialBackoff: su.InitialBackoff, MaxBackoff: su.MaxBackoff,
			BackoffReset: su.BackoffReset, MaxTotalUnreadyPercentage: su.MaxTotalUnreadyPercentage, OkTotalUnreadyCount: su.OkTotalUnreadyCount,
		},
		Taints:               clusterstate.Taints{Startup: slices.Concat(o.Taints.StartupTaints, o.Taints.IgnoreTaints), Status: o.Taints.StatusTaints},
		WriteStatusConfigMap: su.WriteStatusConfigMap, StatusConfigMapName: su.StatusConfigMapName, RecordDuplicatedEvents: su.RecordDuplicatedEvents,
		DryRun: o.DryRun, ScaleDown: core.ScaleDownOptions(sd), MinMilliCores: su.MinCores * 1000, MinMemoryBytes: su.MinMemoryGiB << 30,
		Consolidation: consolidationOptions(o.Consolidation),
	}
}

// consolidationOptions maps the consolidation and disruption budget flags.
func consolidationOptions(c config.ConsolidationOptions) core.ConsolidationOptions {
	return core.ConsolidationOptions{Replace: c.Replace, MinSavingFraction: c.MinSavingFraction, MinSavingPerHour: c.MinSavingPerHour,
		MaxNodes: c.MaxNodes, Backoff: c.Backoff, MaxBackoff: c.MaxBackoff, Budget: c.ClusterBudget, GroupBudget: c.DefaultGroupBudget,
		GroupBudgets: c.GroupBudgetsByGroup}
}
