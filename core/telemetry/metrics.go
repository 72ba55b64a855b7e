package telemetry

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the node loop's Prometheus metrics: tidal's own, named after
// Cluster Autoscaler's with the tidal_ prefix and labelled by node group,
// and beside them CA's families under CA's names (cametrics.go).
type Metrics struct {
	FunctionDuration       *prometheus.HistogramVec
	UnschedulablePods      *prometheus.GaugeVec
	ClusterSafeToAutoscale prometheus.Gauge
	Nodes                  *prometheus.GaugeVec
	NodeGroups             prometheus.Gauge
	NodeGroupSize          *prometheus.GaugeVec
	NodeGroupBackoff       *prometheus.GaugeVec
	ScaledUpNodes          *prometheus.CounterVec
	ScaleUps               *prometheus.CounterVec
	FailedScaleUps         *prometheus.CounterVec
	Errors                 *prometheus.CounterVec
	LastActivity           *prometheus.GaugeVec

	UnneededNodes       prometheus.Gauge
	UnremovableNodes    *prometheus.GaugeVec
	ScaleDownInCooldown prometheus.Gauge
	ScaledDownNodes     *prometheus.CounterVec
	FailedScaleDowns    *prometheus.CounterVec
	EvictedPods         *prometheus.CounterVec

	// Nominations counts status.nominatedNodeName writes to planned
	// nodes, by result (set, cleared, failed).
	Nominations *prometheus.CounterVec

	// Shadow mode (--dry-run): the decisions not carried out.
	DryRunDecisions  *prometheus.CounterVec
	DryRunNodes      *prometheus.CounterVec
	DryRunTargetSize *prometheus.GaugeVec

	// CA are Cluster Autoscaler's families (cametrics.go).
	CA            *CAMetrics
	sched         *scheduleMetrics
	consolidation *consolidationMetrics
	interrupt     *interruptMetrics
}

// NewMetrics creates the metrics and registers them with reg; CA's per
// node group gauges only when perNodeGroup (--emit-per-nodegroup-metrics).
func NewMetrics(reg prometheus.Registerer, perNodeGroup bool) *Metrics {
	m := &Metrics{
		FunctionDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tidal_function_duration_seconds",
			Help:    "Time taken by the phases of the node loop (main is a whole iteration).",
			Buckets: []float64{0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"function"}),
		UnschedulablePods: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tidal_unschedulable_pods_count",
			Help: "Unschedulable pods at the last iteration, by what the node loop made of them.",
		}, []string{"reason"}),
		ClusterSafeToAutoscale: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tidal_cluster_safe_to_autoscale",
			Help: "1 when the cluster is healthy enough to scale, 0 when too many nodes are unready.",
		}),
		Nodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tidal_nodes_count",
			Help: "Registered nodes by state.",
		}, []string{"state"}),
		NodeGroups: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tidal_node_groups_count",
			Help: "Node groups managed.",
		}),
		NodeGroupSize: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tidal_node_group_size",
			Help: "Node group sizes: min, max, target, upcoming.",
		}, []string{"node_group", "kind"}),
		NodeGroupBackoff: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tidal_node_group_backoff_status",
			Help: "1 while a node group is backed off after a failed scale-up.",
		}, []string{"node_group"}),
		ScaledUpNodes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidal_scaled_up_nodes_total",
			Help: "Nodes requested by scale-ups.",
		}, []string{"node_group"}),
		ScaleUps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidal_scale_ups_total",
			Help: "Scale-up requests made (one per node group per decision).",
		}, []string{"node_group"}),
		FailedScaleUps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidal_failed_scale_ups_total",
			Help: "Scale-ups that failed: the cloud refused, launches failed, or nodes did not come in time.",
		}, []string{"node_group", "reason"}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidal_errors_total",
			Help: "Node-loop iterations that ended in an error, by kind.",
		}, []string{"type"}),
		LastActivity: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tidal_last_activity",
			Help: "Unix time of the last node-loop activity of each kind.",
		}, []string{"activity"}),
	}
	m.UnneededNodes = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "tidal_unneeded_nodes_count",
		Help: "Nodes whose pods all fit elsewhere, at the last iteration.",
	})
	m.UnremovableNodes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tidal_unremovable_nodes_count",
		Help: "Scale-down candidates that must stay, by reason.",
	}, []string{"reason"})
	m.ScaleDownInCooldown = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "tidal_scale_down_in_cooldown",
		Help: "1 while scale-down waits after a scale-up, a deletion or a failure.",
	})
	m.ScaledDownNodes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tidal_scaled_down_nodes_total",
		Help: "Nodes removed, by node group and why (empty, underutilized, unready).",
	}, []string{"node_group", "reason"})
	m.FailedScaleDowns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tidal_failed_scale_downs_total",
		Help: "Node removals abandoned (the node stays, untainted).",
	}, []string{"node_group"})
	m.EvictedPods = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tidal_evicted_pods_total",
		Help: "Evictions by result: succeeded, retried (refused, tried again), failed.",
	}, []string{"eviction_result"})
	m.DryRunDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tidal_dry_run_decisions_total",
		Help: "With --dry-run: decisions made and not carried out, each counted once while it stands, by kind (scale_up, scale_down, cancel, replace) and node group.",
	}, []string{"kind", "node_group"})
	m.DryRunNodes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tidal_dry_run_nodes_total",
		Help: "With --dry-run: nodes the decisions would have added (scale_up), removed (scale_down) or cancelled (cancel), by node group.",
	}, []string{"kind", "node_group"})
	m.DryRunTargetSize = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tidal_dry_run_node_group_target_size",
		Help: "With --dry-run: the target size each node group would have had after the last iteration's scale-ups.",
	}, []string{"node_group"})
	m.Nominations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tidal_pod_nominations_total",
		Help: "Writes of status.nominatedNodeName of pending pods to the nodes planned for them, by result: set, cleared (withdrawn), failed.",
	}, []string{"result"})
	reg.MustRegister(m.DryRunDecisions, m.DryRunNodes, m.DryRunTargetSize, m.Nominations)
	reg.MustRegister(m.UnneededNodes, m.UnremovableNodes, m.ScaleDownInCooldown, m.ScaledDownNodes, m.FailedScaleDowns, m.EvictedPods)
	reg.MustRegister(m.FunctionDuration, m.UnschedulablePods, m.ClusterSafeToAutoscale, m.Nodes, m.NodeGroups,
		m.NodeGroupSize, m.NodeGroupBackoff, m.ScaledUpNodes, m.ScaleUps, m.FailedScaleUps, m.Errors, m.LastActivity)
	m.sched = newScheduleMetrics(reg)
	m.consolidation = newConsolidationMetrics(reg)
	m.interrupt = newInterruptMetrics(reg)
	m.CA = newCAMetrics(perNodeGroup)
	reg.MustRegister(m.CA.collectors()...)
	return m
}

// dryRunDecision counts a decision of shadow mode and its nodes.
func (m *Metrics) DryRunDecision(kind, group string, nodes int) {
	m.DryRunDecisions.WithLabelValues(kind, group).Inc()
	m.DryRunNodes.WithLabelValues(kind, group).Add(float64(nodes))
}

func (m *Metrics) Observe(function string, d time.Duration) {
	m.FunctionDuration.WithLabelValues(function).Observe(d.Seconds())
	m.CA.FunctionDuration.WithLabelValues(caFunction(function)).Observe(d.Seconds())
	m.CA.FunctionDurationSummary.WithLabelValues(caFunction(function)).Observe(d.Seconds())
}

// activity records when a part of the loop (main, scaleUp, scaleDown) last
// ran.
func (m *Metrics) Activity(name string, at time.Time) {
	m.LastActivity.WithLabelValues(name).Set(float64(at.Unix()))
	m.CA.LastActivity.WithLabelValues(name).Set(float64(at.Unix()))
}

// loopError counts an iteration that failed, by errorType.
func (m *Metrics) LoopError(errType string) {
	m.Errors.WithLabelValues(errType).Inc()
	m.CA.ErrorsCount.WithLabelValues(errType).Inc()
}

// scaledUp counts one scale-up request of group by nodes.
func (m *Metrics) ScaledUp(group string, nodes int) {
	m.ScaledUpNodes.WithLabelValues(group).Add(float64(nodes))
	m.ScaleUps.WithLabelValues(group).Inc()
	m.CA.ScaleUpCount.WithLabelValues(withGPU()...).Add(float64(nodes))
}

// failedScaleUp counts a failed scale-up of group and the nodes it did not
// bring; reason is tidal's.
func (m *Metrics) FailedScaleUp(group, reason string, nodes int) {
	m.FailedScaleUps.WithLabelValues(group, reason).Inc()
	m.CA.FailedScaleUpCount.WithLabelValues(withGPU(caFailedScaleUpReason(reason))...).Inc()
	m.CA.FailedNodeCreations.WithLabelValues(caFailedScaleUpReason(reason)).Add(float64(nodes))
}

// scaledDown counts a node of group removed as kind (empty, underutilized,
// unready).
func (m *Metrics) ScaledDown(group, kind string) {
	m.ScaledDownNodes.WithLabelValues(group, kind).Inc()
	m.CA.ScaleDownCount.WithLabelValues(withGPU(kind)...).Inc()
}

// evicted counts an eviction by result: succeeded, retried, failed. CA
// counts no retries.
func (m *Metrics) Evicted(result string) {
	m.EvictedPods.WithLabelValues(result).Inc()
	if result != "retried" {
		m.CA.EvictionsCount.WithLabelValues(result).Inc()
	}
}
