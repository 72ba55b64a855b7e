package core

import (
	"github.com/tidal-autoscaler/tidal/core/act"
)

// newActuator builds where the loop's writes go: shadow mode
// (Options.DryRun) is the dry-run actuator, from which no write leaves,
// and a loop that acts on nothing watches no Lease of Cluster Autoscaler's
// (it runs beside one).
func (l *NodeLoop) newActuator(podsSynced func() bool) (act.Actuator, *rivalWatch) {
	sd := l.opts.ScaleDown
	deps := act.Deps{Client: l.cfg.Client, Pods: l.pods, PodsSynced: podsSynced, Events: l.events, Status: l.publisher.status,
		Clock: l.clock, Metrics: l.cfg.Metrics, Source: l.ahead.source, Options: act.Options{
			CordonNodeBeforeTerminating: sd.CordonNodeBeforeTerminating, NodeDeleteDelayAfterTaint: sd.NodeDeleteDelayAfterTaint,
			MaxPodEvictionTime: sd.MaxPodEvictionTime, MaxGracefulTerminationSec: sd.MaxGracefulTerminationSec,
			DaemonSetEvictionForOccupiedNodes: sd.DaemonSetEvictionForOccupiedNodes, DaemonSetEvictionForEmptyNodes: sd.DaemonSetEvictionForEmptyNodes,
			MaxBulkSoftTaintCount: sd.MaxBulkSoftTaintCount, MaxBulkSoftTaintTime: sd.MaxBulkSoftTaintTime}}
	if l.opts.DryRun {
		return act.NewDryRun(deps), nil
	}
	return act.NewLive(deps), newRivalWatch(l.cfg.Client, l.opts.ClusterAutoscalerLeaseNamespace, l.opts.ClusterAutoscalerLeaseName, l.clock, l.events)
}

// targets are the observed groups' target sizes.
func (o *observation) targets() map[string]int {
	out := make(map[string]int, len(o.groups))
	for _, g := range o.groups {
		out[g.group.Id()] = g.target
	}
	return out
}
