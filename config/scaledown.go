package config

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/spf13/pflag"
)

// ScaleDownOptions are the scale-down flags, named as in Cluster
// Autoscaler.
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

// DefaultScaleDownOptions are Cluster Autoscaler's defaults but for two:
// up to 5 drains run at once instead of 1, and the plan finds every node
// it can remove instead of at most 30 with pods (docs/scaledown.md says
// why both are safe and cheap).
func DefaultScaleDownOptions() ScaleDownOptions {
	return ScaleDownOptions{
		Enabled: true, UtilizationThreshold: 0.5, UnneededTime: 10 * time.Minute, UnreadyTime: 20 * time.Minute,
		UnreadyEnabled: true, UnusedNewNodesEnabled: true, GPUUtilizationThreshold: 0.5, CordonNodeBeforeTerminating: true,
		DelayAfterAdd: 10 * time.Minute, DelayAfterFailure: 3 * time.Minute,
		IgnoreDaemonSetsUtilization: false, SkipNodesWithSystemPods: true, SkipNodesWithLocalStorage: true,
		SkipNodesWithCustomControllerPods: true, MaxParallelism: 10, MaxDrainParallelism: 5,
		MaxGracefulTerminationSec: 600, MaxPodEvictionTime: 2 * time.Minute, MaxBulkSoftTaintCount: 10,
		MaxPendingEvictedPods: 1, PendingEvictedPodsTimeout: 2 * time.Minute,
		MaxBulkSoftTaintTime: 3 * time.Second, NodeDeleteDelayAfterTaint: 5 * time.Second, DaemonSetEvictionForOccupiedNodes: true,
	}
}

// AddFlags registers the scale-down flags.
func (o *ScaleDownOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Enabled, "scale-down-enabled", o.Enabled, "Remove nodes that are no longer needed.")
	fs.Float64Var(&o.UtilizationThreshold, "scale-down-utilization-threshold", o.UtilizationThreshold, "A node whose requested cpu and memory are both below this share of allocatable is a scale-down candidate.")
	fs.DurationVar(&o.UnneededTime, "scale-down-unneeded-time", o.UnneededTime, "How long a node must be unneeded without a break before it is removed.")
	fs.DurationVar(&o.UnreadyTime, "scale-down-unready-time", o.UnreadyTime, "How long an unready node must be unneeded before it is removed.")
	fs.BoolVar(&o.UnreadyEnabled, "scale-down-unready-enabled", o.UnreadyEnabled, "Remove unready nodes that are unneeded; false keeps every unready node.")
	fs.BoolVar(&o.UnusedNewNodesEnabled, "scale-down-unused-new-nodes-enabled", o.UnusedNewNodesEnabled, "Remove at once a new node (seen starting, no pod seen on it since) when no pod is bound or nominated to it and the scale-up decision places no pending pod there: the scheduler bound the pods planned for it elsewhere, and it would wait empty for --scale-down-unneeded-time. Only with --scale-down-enabled.")
	fs.Float64Var(&o.GPUUtilizationThreshold, "scale-down-gpu-utilization-threshold", o.GPUUtilizationThreshold, "A node with GPUs (nvidia.com/gpu) whose pods request less than this share of its GPUs is a scale-down candidate, whatever its cpu and memory.")
	fs.IntVar(&o.NonEmptyCandidatesCount, "scale-down-non-empty-candidates-count", o.NonEmptyCandidatesCount, "Most nodes with pods to move found unneeded per iteration (the others are not simulated); 0 or less: no limit.")
	fs.DurationVar(&o.DelayAfterAdd, "scale-down-delay-after-add", o.DelayAfterAdd, "No removal for this long after a scale-up.")
	fs.DurationVar(&o.DelayAfterDelete, "scale-down-delay-after-delete", o.DelayAfterDelete, "No removal for this long after a node was removed.")
	fs.DurationVar(&o.DelayAfterFailure, "scale-down-delay-after-failure", o.DelayAfterFailure, "No removal for this long after a removal failed.")
	fs.BoolVar(&o.IgnoreDaemonSetsUtilization, "ignore-daemonsets-utilization", o.IgnoreDaemonSetsUtilization, "Leave DaemonSet pods out of node utilization.")
	fs.BoolVar(&o.IgnoreMirrorPodsUtilization, "ignore-mirror-pods-utilization", o.IgnoreMirrorPodsUtilization, "Leave mirror (static) pods out of node utilization.")
	fs.BoolVar(&o.SkipNodesWithSystemPods, "skip-nodes-with-system-pods", o.SkipNodesWithSystemPods, "Keep nodes running kube-system pods that are not DaemonSet pods and have no PodDisruptionBudget.")
	fs.BoolVar(&o.SkipNodesWithLocalStorage, "skip-nodes-with-local-storage", o.SkipNodesWithLocalStorage, "Keep nodes running pods with emptyDir or hostPath volumes (unless annotated safe to evict).")
	fs.BoolVar(&o.SkipNodesWithCustomControllerPods, "skip-nodes-with-custom-controller-pods", o.SkipNodesWithCustomControllerPods, "Keep nodes running pods owned by controllers other than ReplicaSet, ReplicationController, StatefulSet and Job.")
	fs.IntVar(&o.MaxParallelism, "max-scale-down-parallelism", o.MaxParallelism, "Most node removals under way at once.")
	fs.IntVar(&o.MaxDrainParallelism, "max-drain-parallelism", o.MaxDrainParallelism, "Most removals of non-empty nodes (drains) under way at once.")
	fs.IntVar(&o.MaxGracefulTerminationSec, "max-graceful-termination-sec", o.MaxGracefulTerminationSec, "Longest termination grace period given to an evicted pod, in seconds.")
	fs.DurationVar(&o.MaxPodEvictionTime, "max-pod-eviction-time", o.MaxPodEvictionTime, "How long evictions refused by a PodDisruptionBudget are retried before the removal is abandoned.")
	fs.IntVar(&o.MaxPendingEvictedPods, "max-pending-evicted-pods", o.MaxPendingEvictedPods, "A drain evicts its next pod only while fewer pods evicted by drains wait for their replacement to be bound to a node; 0: a drain evicts all its pods at once.")
	fs.DurationVar(&o.PendingEvictedPodsTimeout, "pending-evicted-pods-timeout", o.PendingEvictedPodsTimeout, "How long an evicted pod whose replacement is not bound holds drains back at most (--max-pending-evicted-pods); a drain whose next eviction waited this long with no pod evicted meanwhile is abandoned.")
	fs.IntVar(&o.MaxBulkSoftTaintCount, "max-bulk-soft-taint-count", o.MaxBulkSoftTaintCount, "Most nodes given or relieved of the deletion candidate taint per iteration; 0 turns that taint off.")
	fs.DurationVar(&o.MaxBulkSoftTaintTime, "max-bulk-soft-taint-time", o.MaxBulkSoftTaintTime, "Longest time one iteration spends giving or taking off deletion candidate taints.")
	fs.DurationVar(&o.NodeDeleteDelayAfterTaint, "node-delete-delay-after-taint", o.NodeDeleteDelayAfterTaint, "How long a removal waits after tainting a node before it reads the node's pods again and drains or deletes it.")
	fs.BoolVar(&o.DaemonSetEvictionForOccupiedNodes, "daemonset-eviction-for-occupied-nodes", o.DaemonSetEvictionForOccupiedNodes, "Evict DaemonSet pods (best-effort) from drained nodes before deleting them.")
	fs.BoolVar(&o.CordonNodeBeforeTerminating, "cordon-node-before-terminating", o.CordonNodeBeforeTerminating, "Cordon a node (spec.unschedulable) along with its deletion taint before draining and deleting it; a removal that does not complete undoes tidal's cordon.")
	fs.BoolVar(&o.DaemonSetEvictionForEmptyNodes, "daemonset-eviction-for-empty-nodes", o.DaemonSetEvictionForEmptyNodes, "Evict DaemonSet pods (best-effort) from empty nodes before deleting them. A DaemonSet pod's cluster-autoscaler.kubernetes.io/enable-ds-eviction annotation (true or false) overrides both flags.")
}

// maxGracefulTerminationSec is the most --max-graceful-termination-sec can
// be: the node loop holds it as a time.Duration.
const maxGracefulTerminationSec = math.MaxInt64 / int64(time.Second)

// Validate checks the scale-down flags.
func (o *ScaleDownOptions) Validate() error {
	errs := []error{between("--scale-down-utilization-threshold", o.UtilizationThreshold, 0, 1),
		between("--scale-down-gpu-utilization-threshold", o.GPUUtilizationThreshold, 0, 1),
		nonNegative("--scale-down-unneeded-time", o.UnneededTime), nonNegative("--scale-down-unready-time", o.UnreadyTime),
		nonNegative("--scale-down-delay-after-add", o.DelayAfterAdd), nonNegative("--scale-down-delay-after-delete", o.DelayAfterDelete),
		nonNegative("--scale-down-delay-after-failure", o.DelayAfterFailure), nonNegative("--max-pod-eviction-time", o.MaxPodEvictionTime),
		nonNegative("--max-bulk-soft-taint-time", o.MaxBulkSoftTaintTime), nonNegative("--node-delete-delay-after-taint", o.NodeDeleteDelayAfterTaint),
		atLeast("--max-scale-down-parallelism", o.MaxParallelism, 1), atLeast("--max-drain-parallelism", o.MaxDrainParallelism, 1),
		atLeast("--max-bulk-soft-taint-count", o.MaxBulkSoftTaintCount, 0), atLeast("--max-pending-evicted-pods", o.MaxPendingEvictedPods, 0),
		positive("--pending-evicted-pods-timeout", o.PendingEvictedPodsTimeout)}
	if s := int64(o.MaxGracefulTerminationSec); s < 0 || s > maxGracefulTerminationSec {
		errs = append(errs, fmt.Errorf("--max-graceful-termination-sec=%d must be between 0 and %d", s, maxGracefulTerminationSec))
	}
	return errors.Join(errs...)
}
