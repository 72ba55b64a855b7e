package telemetry

import "github.com/prometheus/client_golang/prometheus"

// consolidationMetrics are the metrics of replacements.
type consolidationMetrics struct {
	proposed     prometheus.Gauge
	saving       *prometheus.CounterVec
	replacements *prometheus.CounterVec
}

func newConsolidationMetrics(reg prometheus.Registerer) *consolidationMetrics {
	m := &consolidationMetrics{
		proposed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tidal_consolidation_proposed_saving_per_hour",
			Help: "What the replacements the last iteration proposed would save per hour, in the providers' price unit.",
		}),
		saving: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidal_consolidation_saving_per_hour_total",
			Help: "Saving per hour of replacements, by stage: started (new nodes requested), done (the replacement settled and its old nodes are gone).",
		}, []string{"stage"}),
		replacements: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidal_consolidation_replacements_total",
			Help: "Replacements by kind (single, multi) and result: started, drained, done (old nodes gone), kept (an old node still there after its drain), timed_out, stopped (a pod would not land), abandoned, refused.",
		}, []string{"kind", "result"}),
	}
	reg.MustRegister(m.proposed, m.saving, m.replacements)
	return m
}

// ConsolidationProposed sets what the last proposed replacements save.
func (m *Metrics) ConsolidationProposed(perHour float64) { m.consolidation.proposed.Set(perHour) }

// Replacement counts a replacement's result; started and done add its
// saving to the stage's total.
func (m *Metrics) Replacement(kind, result string, saving float64) {
	m.consolidation.replacements.WithLabelValues(kind, result).Inc()
	switch result {
	case "started", "done":
		m.consolidation.saving.WithLabelValues(result).Add(saving)
	}
}
