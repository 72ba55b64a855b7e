package telemetry

import "github.com/prometheus/client_golang/prometheus"

// caUnfilledMetrics are the families of Cluster Autoscaler's release that
// tidal has no true values for. They are registered under CA's names,
// types, labels and buckets so that dashboards and rules written for CA
// find them; they stay at zero (the series CA starts with) or without
// series. docs/metrics.md says why for each.
type caUnfilledMetrics struct {
	gauges     []prometheus.Gauge
	vecs       []prometheus.Collector
	skipped    *prometheus.CounterVec
	histograms []*prometheus.HistogramVec
}

func newCAUnfilledMetrics() *caUnfilledMetrics {
	u := &caUnfilledMetrics{
		gauges: []prometheus.Gauge{
			caGauge("overflowing_controllers_count", "Always 0 in tidal: it has no pod equivalence groups per controller."),
			caGauge("inconsistent_instances_migs_count", "Always 0 in tidal: GCE managed instance groups only."),
			caGauge("max_node_skip_eval_duration_seconds", "Always 0 in tidal: it does not skip nodes in its scale-down evaluation."),
		},
		vecs: []prometheus.Collector{
			caCounterVec("scaled_up_gpu_nodes_total", "No series in tidal: it does not tell GPU node groups apart.", "gpu_resource_name", "gpu_name"),
			caCounterVec("scaled_down_gpu_nodes_total", "No series in tidal: it does not tell GPU node groups apart.", "reason", "gpu_resource_name", "gpu_name"),
			caCounterVec("failed_gpu_scale_ups_total", "No series in tidal: it does not tell GPU node groups apart.", "reason", "gpu_resource_name", "gpu_name"),
			caCounterVec("created_node_groups_total", "No series in tidal: it creates no node groups.", "group_type"),
			caCounterVec("deleted_node_groups_total", "No series in tidal: it deletes no node groups.", "group_type"),
			caGaugeVec("node_taints_count", "No series in tidal: it does not count taints by type.", "type"),
			caGaugeVec("dra_node_template_resources_mismatch", "No series in tidal: it does not simulate dynamic resource allocation.", "driver", "mismatch_type"),
		},
		skipped: caCounterVec("skipped_scale_events_count", "Always 0 in tidal: a cores or memory limit narrows its scale-up instead of skipping it.", "direction", "reason"),
		histograms: []*prometheus.HistogramVec{
			prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: caNamespace, Name: "binpacking_heterogeneity",
				Help:    "No series in tidal: its bin-packing does not group pods as CA's estimator does.",
				Buckets: prometheus.ExponentialBuckets(1, 2, 6)}, []string{"instance_type", "cpu_count", "namespace_count"}),
			prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: caNamespace, Name: "node_removal_latency_seconds",
				Help:    "No series in tidal: it does not track how long unneeded nodes wait.",
				Buckets: prometheus.ExponentialBuckets(1, 1.5, 19)}, []string{"deleted"}),
		},
	}
	// The series CA starts at zero.
	for _, dir := range []string{"down", "up"} {
		for _, r := range []string{"CpuResourceLimit", "MemoryResourceLimit"} {
			u.skipped.WithLabelValues(dir, r)
		}
	}
	return u
}

func (u *caUnfilledMetrics) collectors() []prometheus.Collector {
	var cs []prometheus.Collector
	for _, g := range u.gauges {
		cs = append(cs, g)
	}
	cs = append(cs, u.vecs...)
	cs = append(cs, u.skipped)
	for _, h := range u.histograms {
		cs = append(cs, h)
	}
	return cs
}
