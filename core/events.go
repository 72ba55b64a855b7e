package core

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/tidal-autoscaler/tidal/core/scaleup"
	"github.com/tidal-autoscaler/tidal/core/telemetry"
)

// Metrics are the node loop's Prometheus metrics (core/telemetry).
type Metrics = telemetry.Metrics

// NewMetrics creates the node loop's metrics and registers them with reg;
// CA's per node group gauges only when perNodeGroup.
func NewMetrics(reg prometheus.Registerer, perNodeGroup bool) *Metrics {
	return telemetry.NewMetrics(reg, perNodeGroup)
}

// newEventDeduper records the loop's events; pods it only pictures get
// none.
func newEventDeduper(r record.EventRecorder, c clock.Clock, recordDuplicates bool) *telemetry.Events {
	return telemetry.NewEvents(r, c, recordDuplicates, scaleup.IsPictured)
}
