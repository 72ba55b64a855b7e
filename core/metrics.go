package core

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the node loop's Prometheus metrics. Names follow Cluster
// Autoscaler's, with the tidal_ prefix.
type Metrics struct {
	LoopDuration        *prometheus.HistogramVec
	UnschedulablePods   prometheus.Gauge
	ScaledUpNodes       *prometheus.CounterVec
	FailedScaleUps      *prometheus.CounterVec
	Errors              *prometheus.CounterVec
	LastActivity        *prometheus.GaugeVec
	NodeGroupTargetSize *prometheus.GaugeVec
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		LoopDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tidal_function_duration_seconds",
			Help:    "Time taken by parts of the node loop.",
			Buckets: []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"function"}),
		UnschedulablePods: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tidal_unschedulable_pods_count",
			Help: "Pods the scheduler marked unschedulable, at the last node-loop run.",
		}),
		ScaledUpNodes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidal_scaled_up_nodes_total",
			Help: "Nodes requested by scale-ups.",
		}, []string{"node_group"}),
		FailedScaleUps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidal_failed_scale_ups_total",
			Help: "Scale-up requests the cloud refused or failed.",
		}, []string{"node_group", "reason"}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidal_errors_total",
			Help: "Node-loop runs that ended in an error, by the step that failed.",
		}, []string{"type"}),
		LastActivity: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tidal_last_activity",
			Help: "Unix time of the last node-loop activity of each kind.",
		}, []string{"activity"}),
		NodeGroupTargetSize: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tidal_node_group_target_count",
			Help: "Target size of each node group.",
		}, []string{"node_group"}),
	}
	reg.MustRegister(m.LoopDuration, m.UnschedulablePods, m.ScaledUpNodes, m.FailedScaleUps, m.Errors,
		m.LastActivity, m.NodeGroupTargetSize)
	return m
}
