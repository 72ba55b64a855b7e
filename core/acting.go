package core

import (
	"github.com/tidal-autoscaler/tidal/core/act"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

// newActuator builds where the loop's writes go: shadow mode
// (Options.DryRun) is the dry-run actuator, from which no write leaves.
func newActuator(cfg Config, opts Options, d *Decider, podsSynced func() bool) act.Actuator {
	sd := opts.ScaleDown
	deps := act.Deps{Client: cfg.Client, Pods: d.scaleIn.pods, PodsSynced: podsSynced, Events: d.events, Status: d.status,
		Clock: cfg.Clock, Metrics: cfg.Metrics, Source: d.ahead.source, Options: act.Options{
			CordonNodeBeforeTerminating: sd.CordonNodeBeforeTerminating, NodeDeleteDelayAfterTaint: sd.NodeDeleteDelayAfterTaint,
			MaxPodEvictionTime: sd.MaxPodEvictionTime, MaxGracefulTerminationSec: sd.MaxGracefulTerminationSec,
			DaemonSetEvictionForOccupiedNodes: sd.DaemonSetEvictionForOccupiedNodes, DaemonSetEvictionForEmptyNodes: sd.DaemonSetEvictionForEmptyNodes,
			MaxBulkSoftTaintCount: sd.MaxBulkSoftTaintCount, MaxBulkSoftTaintTime: sd.MaxBulkSoftTaintTime,
			Pacing: scaledown.Pacing{Limit: sd.MaxPendingEvictedPods, Timeout: sd.PendingEvictedPodsTimeout}}}
	if opts.DryRun {
		return act.NewDryRun(deps)
	}
	return act.NewLive(deps)
}

// targets are the observed groups' target sizes.
func (o *observation) targets() map[string]int {
	out := make(map[string]int, len(o.groups))
	for _, g := range o.groups {
		out[g.group.Id()] = g.target
	}
	return out
}
