package telemetry

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// caNamespace prefixes Cluster Autoscaler's metric names.
const caNamespace = "cluster_autoscaler"

// Label values Cluster Autoscaler gives its series.
const (
	CAGroupAutoscaled      = "autoscaled"
	CAGroupAutoprovisioned = "autoprovisioned"
	CAUnschedulable        = "unschedulable"
	CASchedulerUnprocessed = "scheduler_unprocessed"
	CAMinimum              = "minimum"
	CAMaximum              = "maximum"
)

// CAMetrics are the families of Cluster Autoscaler's metrics (those of the
// release config.CARelease), under CA's names, types, label sets and
// buckets, so that dashboards and alert rules written for CA read tidal
// unchanged. The fields are the families tidal fills with true values; the
// others are registered and stay at zero or without series (unfilled,
// docs/metrics.md says why for each).
type CAMetrics struct {
	ClusterSafeToAutoscale prometheus.Gauge
	NodesCount             *prometheus.GaugeVec
	NodeGroupsCount        *prometheus.GaugeVec
	UnschedulablePodsCount *prometheus.GaugeVec
	MaxNodesCount          prometheus.Gauge
	CPUCurrentCores        prometheus.Gauge
	CPULimitsCores         *prometheus.GaugeVec
	MemoryCurrentBytes     prometheus.Gauge
	MemoryLimitsBytes      *prometheus.GaugeVec

	LastActivity            *prometheus.GaugeVec
	FunctionDuration        *prometheus.HistogramVec
	FunctionDurationSummary *prometheus.SummaryVec
	PendingNodeDeletions    prometheus.Gauge

	ErrorsCount         *prometheus.CounterVec
	ScaleUpCount        *prometheus.CounterVec
	FailedScaleUpCount  *prometheus.CounterVec
	FailedNodeCreations *prometheus.CounterVec
	ScaleDownCount      *prometheus.CounterVec
	EvictionsCount      *prometheus.CounterVec
	UnneededNodesCount  prometheus.Gauge
	UnremovableNodes    *prometheus.GaugeVec
	ScaleDownInCooldown prometheus.Gauge
	OldUnregistered     prometheus.Counter

	// perNodeGroup is nil unless --emit-per-nodegroup-metrics is set.
	PerNodeGroup *CANodeGroupMetrics

	unfilled *caUnfilledMetrics
}

// CANodeGroupMetrics are CA's per node group gauges.
type CANodeGroupMetrics struct {
	MinCount      *prometheus.GaugeVec
	MaxCount      *prometheus.GaugeVec
	TargetCount   *prometheus.GaugeVec
	Healthiness   *prometheus.GaugeVec
	BackoffStatus *prometheus.GaugeVec
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

// caGPULabels are the labels CA adds to its scale-up and scale-down
// counters: the GPU resource and type of the node group's nodes and their
// DRA drivers. tidal leaves them empty, as CA does for nodes without GPUs.
func caGPULabels() []string { return []string{"gpu_resource_name", "gpu_name", "dra_drivers"} }

// withGPU adds to a series' label values those of caGPULabels: empty.
func withGPU(values ...string) []string { return append(values, "", "", "") }

// caDurationBuckets are CA's function_duration_seconds buckets: 150
// exponential buckets from 100 ms to 30 minutes.
func caDurationBuckets() []float64 { return prometheus.ExponentialBucketsRange(0.1, 1800, 150) }

func newCAMetrics(perNodeGroup bool) *CAMetrics {
	m := &CAMetrics{
		ClusterSafeToAutoscale: caGauge("cluster_safe_to_autoscale", "1 when the cluster is healthy enough to scale, 0 otherwise."),
		NodesCount:             caGaugeVec("nodes_count", "Nodes of the cluster by state.", "state"),
		NodeGroupsCount:        caGaugeVec("node_groups_count", "Node groups managed, by type.", "node_group_type"),
		UnschedulablePodsCount: caGaugeVec("unschedulable_pods_count", "Pods the scheduler could not place.", "type"),
		MaxNodesCount:          caGauge("max_nodes_count", "Most nodes all node groups may have together."),
		CPUCurrentCores:        caGauge("cluster_cpu_current_cores", "Cores of the cluster's nodes, nodes being deleted left out."),
		CPULimitsCores:         caGaugeVec("cpu_limits_cores", "Least and most cores of the cluster (--cores-total).", "direction"),
		MemoryCurrentBytes:     caGauge("cluster_memory_current_bytes", "Memory of the cluster's nodes in bytes, nodes being deleted left out."),
		MemoryLimitsBytes:      caGaugeVec("memory_limits_bytes", "Least and most memory of the cluster in bytes (--memory-total).", "direction"),
		LastActivity:           caGaugeVec("last_activity", "Unix time a part of the node loop last ran.", "activity"),
		FunctionDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: caNamespace,
			Name: "function_duration_seconds", Help: "Time taken by the parts of the node loop.", Buckets: caDurationBuckets()}, []string{"function"}),
		FunctionDurationSummary: prometheus.NewSummaryVec(prometheus.SummaryOpts{Namespace: caNamespace,
			Name: "function_duration_quantile_seconds", Help: "Quantiles of the time taken by the parts of the node loop.", MaxAge: time.Hour}, []string{"function"}),
		PendingNodeDeletions: caGauge("pending_node_deletions", "Node removals started and not yet finished."),
		ErrorsCount:          caCounterVec("errors_total", "Node-loop iterations that failed, by error type.", "type"),
		ScaleUpCount:         caCounterVec("scaled_up_nodes_total", "Nodes requested by scale-ups.", caGPULabels()...),
		FailedScaleUpCount:   caCounterVec("failed_scale_ups_total", "Scale-ups that failed, by reason.", append([]string{"reason"}, caGPULabels()...)...),
		FailedNodeCreations:  caCounterVec("failed_node_creations_total", "Nodes that failed scale-ups did not bring, by reason.", "reason"),
		ScaleDownCount:       caCounterVec("scaled_down_nodes_total", "Nodes removed, by reason.", append([]string{"reason"}, caGPULabels()...)...),
		EvictionsCount:       caCounterVec("evicted_pods_total", "Pod evictions by result.", "eviction_result"),
		UnneededNodesCount:   caGauge("unneeded_nodes_count", "Nodes currently unneeded."),
		UnremovableNodes:     caGaugeVec("unremovable_nodes_count", "Scale-down candidates that must stay, by reason.", "reason"),
		ScaleDownInCooldown:  caGauge("scale_down_in_cooldown", "1 while scale-down is in cooldown, 0 otherwise."),
		OldUnregistered: prometheus.NewCounter(prometheus.CounterOpts{Namespace: caNamespace,
			Name: "old_unregistered_nodes_removed_count", Help: "Requested nodes removed because they did not register in time."}),
	}
	if perNodeGroup {
		m.PerNodeGroup = &CANodeGroupMetrics{
			MinCount:      caGaugeVec("node_group_min_count", "Least nodes of the node group.", "node_group"),
			MaxCount:      caGaugeVec("node_group_max_count", "Most nodes of the node group.", "node_group"),
			TargetCount:   caGaugeVec("node_group_target_count", "Target size of the node group.", "node_group"),
			Healthiness:   caGaugeVec("node_group_healthiness", "1 when the node group is healthy enough to scale, 0 otherwise.", "node_group"),
			BackoffStatus: caGaugeVec("node_group_backoff_status", "1 while the node group is backed off, with the reason; 0 otherwise.", "node_group", "reason"),
		}
	}
	m.unfilled = newCAUnfilledMetrics()
	m.init()
	return m
}

// init gives the counters CA starts at zero their series, so that rates
// and increases over them have data from the first scrape.
func (m *CAMetrics) init() {
	// CA's error types; tidal's errors are of the first three.
	for _, t := range []string{"cloudProviderError", "apiCallError", "internalError", "transientError",
		"configurationError", "nodeGroupDoesNotExistError", "unexpectedScaleDownStateError"} {
		m.ErrorsCount.WithLabelValues(t)
	}
	for _, r := range []string{"cloudProviderError", "apiCallError", "timeout"} {
		m.FailedScaleUpCount.WithLabelValues(withGPU(r)...)
	}
	for _, r := range []string{"empty", "underutilized", "unready"} {
		m.ScaleDownCount.WithLabelValues(withGPU(r)...)
	}
	for _, r := range []string{"succeeded", "failed"} {
		m.EvictionsCount.WithLabelValues(r)
	}
}

func (m *CAMetrics) collectors() []prometheus.Collector {
	cs := []prometheus.Collector{m.ClusterSafeToAutoscale, m.NodesCount, m.NodeGroupsCount, m.UnschedulablePodsCount,
		m.MaxNodesCount, m.CPUCurrentCores, m.CPULimitsCores, m.MemoryCurrentBytes, m.MemoryLimitsBytes,
		m.LastActivity, m.FunctionDuration, m.FunctionDurationSummary, m.PendingNodeDeletions,
		m.ErrorsCount, m.ScaleUpCount, m.FailedScaleUpCount, m.FailedNodeCreations, m.ScaleDownCount, m.EvictionsCount,
		m.UnneededNodesCount, m.UnremovableNodes, m.ScaleDownInCooldown, m.OldUnregistered}
	cs = append(cs, m.unfilled.collectors()...)
	if g := m.PerNodeGroup; g != nil {
		cs = append(cs, g.MinCount, g.MaxCount, g.TargetCount, g.Healthiness, g.BackoffStatus)
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

// Collectors are the families registered, for tests.
func (m *CAMetrics) Collectors() []prometheus.Collector { return m.collectors() }
