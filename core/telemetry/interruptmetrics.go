package telemetry

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// interruptMetrics are the metrics of nodes the cloud takes away on its
// own (interruptions).
type interruptMetrics struct {
	messages *prometheus.CounterVec
	replaced *prometheus.CounterVec
	failed   *prometheus.CounterVec
	marked   prometheus.Histogram
	handled  prometheus.Histogram
	ready    *prometheus.HistogramVec
}

func newInterruptMetrics(reg prometheus.Registerer) *interruptMetrics {
	m := &interruptMetrics{
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidal_interruption_messages_total",
			Help: "Messages of the interruption queue, by kind: spot-interruption, rebalance-recommendation, scheduled-change, state-change, or why they were dropped (unknown, ignored, malformed).",
		}, []string{"kind"}),
		replaced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidal_replaced_nodes_total",
			Help: "Nodes drained and deleted ahead of the cloud taking them, by node group and cause (the interruption's kind).",
		}, []string{"node_group", "cause"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidal_failed_replacements_total",
			Help: "Replacements of nodes that did not finish (tried again at the next iteration), by node group and cause.",
		}, []string{"node_group", "cause"}),
		marked: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tidal_interruption_marked_seconds",
			Help:    "From the cloud's event to the node tainted and cordoned.",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60},
		}),
		handled: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tidal_interruption_handled_seconds",
			Help:    "From the cloud's event to the node drained and deleted.",
			Buckets: []float64{1, 5, 10, 20, 30, 60, 90, 120, 180, 300, 600},
		}),
		ready: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tidal_interruption_replacement_ready_seconds",
			Help:    "From the cloud's event to capacity Ready for every pod of the node it takes away (the loop finds room for them on Ready nodes), by kind.",
			Buckets: []float64{0.5, 1, 2, 5, 10, 20, 30, 60, 90, 120, 180, 300},
		}, []string{"kind"}),
	}
	reg.MustRegister(m.messages, m.replaced, m.failed, m.marked, m.handled, m.ready)
	return m
}

// InterruptionMessages counts n messages of a kind (or a drop reason).
func (m *Metrics) InterruptionMessages(kind string, n int) {
	m.interrupt.messages.WithLabelValues(kind).Add(float64(n))
}

// InterruptionMarked observes the time from the event to the node marked.
func (m *Metrics) InterruptionMarked(d time.Duration) { m.interrupt.marked.Observe(d.Seconds()) }

// Replaced counts a node drained and deleted ahead of the cloud, and the
// time since the event.
func (m *Metrics) Replaced(group, cause string, sinceEvent time.Duration) {
	m.interrupt.replaced.WithLabelValues(group, cause).Inc()
	m.interrupt.handled.Observe(sinceEvent.Seconds())
}

// ReplaceFailed counts a replacement that did not finish.
func (m *Metrics) ReplaceFailed(group, cause string) {
	m.interrupt.failed.WithLabelValues(group, cause).Inc()
}

// ReplacementReady observes the time from the cloud's event to capacity
// Ready for the pods of the node it takes away.
func (m *Metrics) ReplacementReady(kind string, d time.Duration) {
	m.interrupt.ready.WithLabelValues(kind).Observe(d.Seconds())
}
