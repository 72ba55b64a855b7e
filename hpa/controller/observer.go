package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// Action and error labels of the reconciliation metrics.
const (
	actionScaleUp   = "scale_up"
	actionScaleDown = "scale_down"
	actionNone      = "none"

	errorNone     = "none"
	errorMetrics  = "metrics"
	errorInternal = "internal"
	errorSpec     = "spec"
)

// Observer holds the pod loop's Prometheus metrics. A nil *Observer
// records nothing.
type Observer struct {
	reconciles   *prometheus.CounterVec
	duration     prometheus.Histogram
	metricErrors *prometheus.CounterVec
	statusWrites prometheus.Counter
	panics       prometheus.Counter
	invalid      *prometheus.GaugeVec
	dryRescales  *prometheus.CounterVec
	dryDesired   *prometheus.GaugeVec
	costWrites   *prometheus.CounterVec
}

// NewObserver registers the pod loop's metrics:
//
//   - tidal_pod_autoscaler_reconciliations_total{action,error}: syncs by
//     what they did (scale_up, scale_down, none) and what failed (none,
//     metrics, spec, internal);
//   - tidal_pod_autoscaler_reconciliation_duration_seconds: sync latency;
//   - tidal_pod_autoscaler_metric_errors_total{metric_type}: metrics that
//     could not be computed;
//   - tidal_pod_autoscaler_status_writes_total: status updates sent;
//   - tidal_pod_autoscaler_reconciliation_panics_total: syncs that failed
//     inside tidal and were recovered (each is a bug: see the log);
//   - tidal_pod_autoscaler_invalid_specs{reason}: autoscalers not scaled
//     because tidal cannot use their spec (InvalidSpec, InvalidQuantity,
//     InvalidWatermarks; their condition and events say which field);
//   - tidal_dry_run_pod_autoscaler_rescales_total{namespace,name} and
//     tidal_dry_run_pod_autoscaler_desired_replicas{namespace,name}: with
//     --dry-run, the rescales not written and the last count wanted;
//   - tidal_pod_deletion_cost_writes_total{result}: pod-deletion-cost
//     writes before a scale-down (success, conflict, error).
func NewObserver(reg prometheus.Registerer) *Observer {
	o := &Observer{
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidal_pod_autoscaler_reconciliations_total",
			Help: "Pod autoscaler syncs by action taken and error met.",
		}, []string{"action", "error"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tidal_pod_autoscaler_reconciliation_duration_seconds",
			Help:    "Duration of one pod autoscaler sync.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
		metricErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidal_pod_autoscaler_metric_errors_total",
			Help: "Metrics that could not be computed, by metric source type.",
		}, []string{"metric_type"}),
		statusWrites: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tidal_pod_autoscaler_status_writes_total",
			Help: "Status updates the pod loop sent.",
		}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tidal_pod_autoscaler_reconciliation_panics_total",
			Help: "Pod autoscaler syncs that failed inside tidal and were recovered.",
		}),
		invalid: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tidal_pod_autoscaler_invalid_specs",
			Help: "Pod autoscalers not scaled because tidal cannot use their spec, by reason.",
		}, []string{"reason"}),
		dryRescales: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidal_dry_run_pod_autoscaler_rescales_total",
			Help: "With --dry-run: rescales the pod loop decided and did not write.",
		}, []string{"namespace", "name"}),
		dryDesired: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tidal_dry_run_pod_autoscaler_desired_replicas",
			Help: "With --dry-run: the replica count the pod loop last wanted to write.",
		}, []string{"namespace", "name"}),
		costWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidal_pod_deletion_cost_writes_total",
			Help: "Writes of pod-deletion-cost on replicas before a scale-down, by result (success, conflict, error).",
		}, []string{"result"}),
	}
	// Every metric type has its error series from the start, so that an
	// alert on their rate reads series that exist.
	for _, t := range []autoscalingv2.MetricSourceType{autoscalingv2.ObjectMetricSourceType, autoscalingv2.PodsMetricSourceType,
		autoscalingv2.ResourceMetricSourceType, autoscalingv2.ContainerResourceMetricSourceType, autoscalingv2.ExternalMetricSourceType} {
		o.metricErrors.WithLabelValues(string(t))
	}
	for _, r := range invalidReasons {
		o.invalid.WithLabelValues(r)
	}
	reg.MustRegister(o.reconciles, o.duration, o.metricErrors, o.statusWrites, o.panics, o.invalid, o.dryRescales, o.dryDesired, o.costWrites)
	return o
}

func (o *Observer) reconciled(action, errLabel string, took time.Duration) {
	if o == nil {
		return
	}
	o.reconciles.WithLabelValues(action, errLabel).Inc()
	o.duration.Observe(took.Seconds())
}

func (o *Observer) metricFailed(metricType string) {
	if o != nil {
		o.metricErrors.WithLabelValues(metricType).Inc()
	}
}

func (o *Observer) statusWritten() {
	if o != nil {
		o.statusWrites.Inc()
	}
}

func (o *Observer) deletionCostWritten(result string) {
	if o != nil {
		o.costWrites.WithLabelValues(result).Inc()
	}
}

func (o *Observer) panicked() {
	if o != nil {
		o.panics.Inc()
	}
}

// invalidReasons are the reasons of Autoscaler.SpecErr.
var invalidReasons = []string{EventInvalidSpec, EventInvalidQuantity, EventInvalidWatermarks}

// invalidSpecs sets the number of invalid autoscalers by reason.
func (o *Observer) invalidSpecs(byReason map[string]int) {
	if o == nil {
		return
	}
	for _, r := range invalidReasons {
		o.invalid.WithLabelValues(r).Set(float64(byReason[r]))
	}
}

func (o *Observer) dryRunRescale(namespace, name string, desired int32) {
	if o == nil {
		return
	}
	o.dryRescales.WithLabelValues(namespace, name).Inc()
}

func (o *Observer) dryRunDesired(namespace, name string, desired int32) {
	if o == nil {
		return
	}
	o.dryDesired.WithLabelValues(namespace, name).Set(float64(desired))
}
