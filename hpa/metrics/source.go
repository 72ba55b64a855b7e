// Package metrics fetches the metric values the pod loop's calculation
// (package hpa) runs on.
//
// A Source answers one Request, one metric of one autoscaler, with an
// hpa.MetricData; a failure is returned inside it (MetricData.Err), so that
// the calculation marks that metric invalid and never scales down on it.
// The sources are:
//
//   - APIs: the Kubernetes metrics APIs through the k8s.io/metrics clients:
//     metrics.k8s.io for Resource and ContainerResource metrics,
//     custom.metrics.k8s.io for Pods and Object metrics,
//     external.metrics.k8s.io for External metrics;
//   - Prometheus: External metrics named "prometheus" whose selector carries
//     a PromQL query in its "query" label, read from a Prometheus server's
//     HTTP API;
//   - Simulated: values computed from a load curve that a demo or a test
//     sets, for clusters without a metrics pipeline (`tidal-local`);
//   - Router: sends PromQL metrics to Prometheus and the rest to another
//     source.
package metrics

import (
	"context"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tidal-autoscaler/tidal/hpa"
)

// PrometheusMetricName is the External metric name that selects the
// Prometheus source; PrometheusQueryLabel is the selector label holding the
// PromQL query.
const (
	PrometheusMetricName = "prometheus"
	PrometheusQueryLabel = "query"
)

// Request is one metric of one autoscaler to fetch.
type Request struct {
	// Namespace is the autoscaler's namespace.
	Namespace string
	// Autoscaler is the autoscaler's name.
	Autoscaler string
	// Selector is the scale target's pod selector.
	Selector labels.Selector
	// Pods are the pods Selector matches in the controller's cache.
	Pods []*corev1.Pod
	// Metric is the spec.metrics entry.
	Metric autoscalingv2.MetricSpec
	// Now is the time of the sync.
	Now time.Time
}

// Source fetches one metric's values. Errors are reported in
// MetricData.Err.
type Source interface {
	Fetch(ctx context.Context, req Request) hpa.MetricData
}

// SourceFunc adapts a function to Source.
type SourceFunc func(ctx context.Context, req Request) hpa.MetricData

// Fetch calls f.
func (f SourceFunc) Fetch(ctx context.Context, req Request) hpa.MetricData { return f(ctx, req) }

// PromQL returns the PromQL query of a Prometheus metric: an External metric
// named "prometheus" with a selector label "query".
func PromQL(spec autoscalingv2.MetricSpec) (string, bool) {
	if spec.Type != autoscalingv2.ExternalMetricSourceType || spec.External == nil {
		return "", false
	}
	id := spec.External.Metric
	if id.Name != PrometheusMetricName || id.Selector == nil {
		return "", false
	}
	q, ok := id.Selector.MatchLabels[PrometheusQueryLabel]
	return q, ok && q != ""
}

// Router sends Prometheus metrics (see PromQL) to Prometheus and every other
// metric to Default. A nil Prometheus leaves Prometheus metrics to Default.
type Router struct {
	Default    Source
	Prometheus Source
}

// Fetch routes the request.
func (r Router) Fetch(ctx context.Context, req Request) hpa.MetricData {
	if _, ok := PromQL(req.Metric); ok && r.Prometheus != nil {
		return r.Prometheus.Fetch(ctx, req)
	}
	return r.Default.Fetch(ctx, req)
}

// failed is the data of a metric that could not be fetched.
func failed(err error) hpa.MetricData { return hpa.MetricData{Err: err} }

// metricSelector converts a metric identifier's selector as Kubernetes does:
// a missing selector selects every series.
func metricSelector(id autoscalingv2.MetricIdentifier) (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(id.Selector)
}
