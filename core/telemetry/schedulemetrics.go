package telemetry

import "github.com/prometheus/client_golang/prometheus"

// scheduleMetrics are the metrics of scheduled node group sizes and
// allocation triggers.
type scheduleMetrics struct {
	scheduledMin   *prometheus.GaugeVec
	triggered      *prometheus.CounterVec
	allocationRate *prometheus.GaugeVec
}

func newScheduleMetrics(reg prometheus.Registerer) *scheduleMetrics {
	m := &scheduleMetrics{
		scheduledMin: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tidal_node_group_scheduled_min_size",
			Help: "The minimum size the active entries of the tidal-schedules ConfigMap set for the node group (0: none).",
		}, []string{"node_group"}),
		triggered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidal_allocation_trigger_scale_ups_total",
			Help: "Scale-ups an allocation trigger of the tidal-schedules ConfigMap asked for, by trigger and node group.",
		}, []string{"rule", "node_group"}),
		allocationRate: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tidal_allocation_rate",
			Help: "Requests of scheduled pods over allocatable of ready nodes, in percent, for the cluster and each node group (scope) by resource.",
		}, []string{"scope", "resource"}),
	}
	reg.MustRegister(m.scheduledMin, m.triggered, m.allocationRate)
	return m
}

func (m *Metrics) ScheduledMin(group string, size int) {
	m.sched.scheduledMin.WithLabelValues(group).Set(float64(size))
}

func (m *Metrics) AllocationTriggered(rule, group string) {
	m.sched.triggered.WithLabelValues(rule, group).Inc()
}

func (m *Metrics) AllocationRate(scope, resource string, percent float64) {
	m.sched.allocationRate.WithLabelValues(scope, resource).Set(percent)
}

// ResetAllocationRates drops the allocation rates of the last iteration,
// so that scopes gone since have no series.
func (m *Metrics) ResetAllocationRates() { m.sched.allocationRate.Reset() }
