package core

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// caNamespace prefixes Cluster Autoscaler's metric names.
const caNamespace = "cluster_autoscaler"

// Label values Cluster Autoscaler gives its series.
const (
	caGroupAutoscaled      = "autoscaled"
	caGroupAutoprovisioned = "autoprovisioned"
	caUnschedulable        = "unschedulable"
	caSchedulerUnprocessed = "scheduler_unprocessed"
	caMinimum              = "minimum"
	caMaximum              = "maximum"
)

// caMetrics are the families of Cluster Autoscaler's metrics that tidal
// fills with true values, under CA's names, types, label sets and buckets,
// so that dashboards and alert rules written for CA read tidal unchanged.
// docs/metrics.md lists the families left out and why.
type caMetrics struct {
	clusterSafeToAutoscale prometheus.Gauge
	nodesCount             *prometheus.GaugeVec
	nodeGroupsCount        *prometheus.GaugeVec
	unschedulablePodsCount *prometheus.GaugeVec
	maxNodesCount          prometheus.Gauge
	cpuCurrentCores        prometheus.Gauge
	cpuLimitsCores         *prometheus.GaugeVec
	memoryCurrentBytes     prometheus.Gauge
	memoryLimitsBytes      *prometheus.GaugeVec

	lastActivity            *prometheus.GaugeVec
	functionDuration        *prometheus.HistogramVec
	functionDurationSummary *prometheus.SummaryVec
	pendingNodeDeletions    prometheus.Gauge

	errorsCount         *prometheus.CounterVec
	scaleUpCount        prometheus.Counter
	failedScaleUpCount  *prometheus.CounterVec
	scaleDownCount      *prometheus.CounterVec
	evictionsCount      *prometheus.CounterVec
	unneededNodesCount  prometheus.Gauge
	unremovableNodes    *prometheus.GaugeVec
	scaleDownInCooldown prometheus.Gauge
	oldUnregistered     prometheus.Counter

	// perNodeGroup is nil unless --emit-per-nodegroup-metrics is set.
	perNodeGroup *caNodeGroupMetrics
}

// caNodeGroupMetrics are CA's per node group gauges.
type caNodeGroupMetrics struct {
	minCount      *prometheus.GaugeVec
	maxCount      *prometheus.GaugeVec
	targetCount   *prometheus.GaugeVec
	healthiness   *prometheus.GaugeVec
	backoffStatus *prometheus.GaugeVec
}

func caGauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: caNamespace, Name: name, Help: help})
}

func caGaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: caNamespace, Name: name, Help: help}, labels)
}

func caCounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: caNamespace, Name: name, Help: help}, labels)
}

// caDurationBuckets are CA's function_duration_seconds buckets: 30
// exponential buckets from 10 ms, growing by half each.
var caDurationBuckets = prometheus.ExponentialBuckets(0.01, 1.5, 30)

func newCAMetrics(perNodeGroup bool) *caMetrics {
	m := &caMetrics{
		clusterSafeToAutoscale: caGauge("cluster_safe_to_autoscale", "1 when the cluster is healthy enough to scale, 0 otherwise."),
		nodesCount:             caGaugeVec("nodes_count", "Nodes of the cluster by state.", "state"),
		nodeGroupsCount:        caGaugeVec("node_groups_count", "Node groups managed, by type.", "node_group_type"),
		unschedulablePodsCount: caGaugeVec("unschedulable_pods_count", "Pods the scheduler could not place.", "type"),
		maxNodesCount:          caGauge("max_nodes_count", "Most nodes all node groups may have together."),
		cpuCurrentCores:        caGauge("cluster_cpu_current_cores", "Cores of the cluster's nodes, nodes being deleted left out."),
		cpuLimitsCores:         caGaugeVec("cpu_limits_cores", "Least and most cores of the cluster (--cores-total).", "direction"),
		memoryCurrentBytes:     caGauge("cluster_memory_current_bytes", "Memory of the cluster's nodes in bytes, nodes being deleted left out."),
		memoryLimitsBytes:      caGaugeVec("memory_limits_bytes", "Least and most memory of the cluster in bytes (--memory-total).", "direction"),
		lastActivity:           caGaugeVec("last_activity", "Unix time a part of the node loop last ran.", "activity"),
		functionDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: caNamespace,
			Name: "function_duration_seconds", Help: "Time taken by the parts of the node loop.", Buckets: caDurationBuckets}, []string{"function"}),
		functionDurationSummary: prometheus.NewSummaryVec(prometheus.SummaryOpts{Namespace: caNamespace,
			Name: "function_duration_quantile_seconds", Help: "Quantiles of the time taken by the parts of the node loop.", MaxAge: time.Hour}, []string{"function"}),
		pendingNodeDeletions: caGauge("pending_node_deletions", "Node removals started and not yet finished."),
		errorsCount:          caCounterVec("errors_total", "Node-loop iterations that failed, by error type.", "type"),
		scaleUpCount: prometheus.NewCounter(prometheus.CounterOpts{Namespace: caNamespace,
			Name: "scaled_up_nodes_total", Help: "Nodes requested by scale-ups."}),
		failedScaleUpCount:  caCounterVec("failed_scale_ups_total", "Scale-ups that failed, by reason.", "reason"),
		scaleDownCount:      caCounterVec("scaled_down_nodes_total", "Nodes removed, by reason.", "reason"),
		evictionsCount:      caCounterVec("evicted_pods_total", "Pod evictions by result.", "eviction_result"),
		unneededNodesCount:  caGauge("unneeded_nodes_count", "Nodes currently unneeded."),
		unremovableNodes:    caGaugeVec("unremovable_nodes_count", "Scale-down candidates that must stay, by reason.", "reason"),
		scaleDownInCooldown: caGauge("scale_down_in_cooldown", "1 while scale-down is in cooldown, 0 otherwise."),
		oldUnregistered: prometheus.NewCounter(prometheus.CounterOpts{Namespace: caNamespace,
			Name: "old_unregistered_nodes_removed_count", Help: "Requested nodes removed because they did not register in time."}),
	}
	if perNodeGroup {
		m.perNodeGroup = &caNodeGroupMetrics{
			minCount:      caGaugeVec("node_group_min_count", "Least nodes of the node group.", "node_group"),
			maxCount:      caGaugeVec("node_group_max_count", "Most nodes of the node group.", "node_group"),
			targetCount:   caGaugeVec("node_group_target_count", "Target size of the node group.", "node_group"),
			healthiness:   caGaugeVec("node_group_healthiness", "1 when the node group is healthy enough to scale, 0 otherwise.", "node_group"),
			backoffStatus: caGaugeVec("node_group_backoff_status", "1 while the node group is backed off, with the reason; 0 otherwise.", "node_group", "reason"),
		}
	}
	m.init()
	return m
}

// init gives the counters CA starts at zero their series, so that rates
// and increases over them have data from the first scrape.
func (m *caMetrics) init() {
	for _, t := range []string{"cloudProviderError", "apiCallError", "internalError"} {
		m.errorsCount.WithLabelValues(t)
	}
	for _, r := range []string{"cloudProviderError", "apiCallError", "timeout"} {
		m.failedScaleUpCount.WithLabelValues(r)
	}
	for _, r := range []string{"empty", "underutilized", "unready"} {
		m.scaleDownCount.WithLabelValues(r)
	}
	for _, r := range []string{"succeeded", "failed"} {
		m.evictionsCount.WithLabelValues(r)
	}
}

func (m *caMetrics) collectors() []prometheus.Collector {
	cs := []prometheus.Collector{m.clusterSafeToAutoscale, m.nodesCount, m.nodeGroupsCount, m.unschedulablePodsCount,
		m.maxNodesCount, m.cpuCurrentCores, m.cpuLimitsCores, m.memoryCurrentBytes, m.memoryLimitsBytes,
		m.lastActivity, m.functionDuration, m.functionDurationSummary, m.pendingNodeDeletions,
		m.errorsCount, m.scaleUpCount, m.failedScaleUpCount, m.scaleDownCount, m.evictionsCount,
		m.unneededNodesCount, m.unremovableNodes, m.scaleDownInCooldown, m.oldUnregistered}
	if g := m.perNodeGroup; g != nil {
		cs = append(cs, g.minCount, g.maxCount, g.targetCount, g.healthiness, g.backoffStatus)
	}
	return cs
}

// caFunction is CA's name for a phase of tidal's loop where CA has one
// for the same work: the scale-down plan is CA's findUnneeded, the
// scale-up's check of what fits existing nodes its filterOutSchedulable.
func caFunction(function string) string {
	switch function {
	case "scaleDown:plan":
		return "findUnneeded"
	case "scaleUp:filterSchedulable":
		return "filterOutSchedulable"
	}
	return function
}

// caFailedScaleUpReason is CA's reason for a failed scale-up of tidal's:
// nodes that did not come in time are a timeout, any other failure (the
// cloud refused or failed the launch) a cloud provider error.
func caFailedScaleUpReason(reason string) string {
	if reason == "timeout" {
		return "timeout"
	}
	return "cloudProviderError"
}
