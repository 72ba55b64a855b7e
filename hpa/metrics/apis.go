package metrics

import (
	"context"
	"errors"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	custommetricsv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	"k8s.io/metrics/pkg/apis/metrics/v1beta1"
	resourceclient "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"
	customclient "k8s.io/metrics/pkg/client/custom_metrics"
	externalclient "k8s.io/metrics/pkg/client/external_metrics"

	"github.com/tidal-autoscaler/tidal/hpa"
)

// defaultCustomMetricWindow is the window assumed for a custom metric whose
// value does not state one, as Kubernetes assumes it.
const defaultCustomMetricWindow = time.Minute

// errPrometheusUnconfigured is the failure of a Prometheus metric when no
// Prometheus server is configured.
var errPrometheusUnconfigured = errors.New("the metric carries a PromQL query but no Prometheus server is configured (--prometheus-url)")

// APIs reads metrics from the Kubernetes metrics APIs, as the built-in HPA
// controller does.
type APIs struct {
	Resource resourceclient.PodMetricsesGetter
	Custom   customclient.CustomMetricsClient
	External externalclient.ExternalMetricsClient
}

// APIClients are the clients NewAPIs builds, with the discovery cache the
// custom metrics client needs refreshed now and then (see Invalidate).
type APIClients struct {
	*APIs
	versions customclient.AvailableAPIsGetter
}

// NewAPIs builds the three metrics API clients from a client configuration;
// mapper resolves the kinds of Object metrics, disc finds the custom
// metrics API's version.
func NewAPIs(cfg *rest.Config, mapper meta.RESTMapper, disc discovery.DiscoveryInterface) (*APIClients, error) {
	res, err := resourceclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("metrics.k8s.io client: %w", err)
	}
	ext, err := externalclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("external.metrics.k8s.io client: %w", err)
	}
	versions := customclient.NewAvailableAPIsGetter(disc)
	return &APIClients{
		APIs:     &APIs{Resource: res, Custom: customclient.NewForConfig(cfg, mapper, versions), External: ext},
		versions: versions,
	}, nil
}

// Invalidate forgets the custom metrics API version found by discovery, so
// that the next request looks again (call it every few minutes: the API may
// be installed or upgraded while tidal runs).
func (c *APIClients) Invalidate() { c.versions.Invalidate() }

// Fetch reads one metric from the API its type belongs to.
func (a *APIs) Fetch(ctx context.Context, req Request) hpa.MetricData {
	m := req.Metric
	switch {
	case m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil:
		return a.resource(ctx, req, m.Resource.Name, "")
	case m.Type == autoscalingv2.ContainerResourceMetricSourceType && m.ContainerResource != nil:
		return a.resource(ctx, req, m.ContainerResource.Name, m.ContainerResource.Container)
	case m.Type == autoscalingv2.PodsMetricSourceType && m.Pods != nil:
		return a.pods(req, m.Pods.Metric)
	case m.Type == autoscalingv2.ObjectMetricSourceType && m.Object != nil:
		return a.object(req, m.Object)
	case m.Type == autoscalingv2.ExternalMetricSourceType && m.External != nil:
		if _, ok := PromQL(m); ok {
			return failed(errPrometheusUnconfigured)
		}
		return a.external(req, m.External.Metric)
	}
	return failed(fmt.Errorf("metric type %q has no source", m.Type))
}

// resource reads per-pod usage from metrics.k8s.io: the sum over the pod's
// containers, or the named container's usage. A pod lacking the resource in
// any container (or lacking the container) gets no sample.
func (a *APIs) resource(ctx context.Context, req Request, name corev1.ResourceName, container string) hpa.MetricData {
	list, err := a.Resource.PodMetricses(req.Namespace).List(ctx, metav1.ListOptions{LabelSelector: req.Selector.String()})
	if err != nil {
		return failed(fmt.Errorf("unable to fetch metrics from resource metrics API: %w", err))
	}
	if len(list.Items) == 0 {
		return failed(errors.New("no metrics returned from resource metrics API"))
	}
	out := make(hpa.PodMetrics, len(list.Items))
	for i := range list.Items {
		pm := &list.Items[i]
		if v, ok := podUsage(pm, name, container); ok {
			out[pm.Name] = hpa.PodMetric{Timestamp: pm.Timestamp.Time, Window: pm.Window.Duration, Value: v}
		}
	}
	return hpa.MetricData{PodMetrics: out, Timestamp: list.Items[0].Timestamp.Time}
}

// podUsage is one pod's usage of a resource, in milli-units.
func podUsage(pm *v1beta1.PodMetrics, name corev1.ResourceName, container string) (int64, bool) {
	if container != "" {
		for _, c := range pm.Containers {
			if c.Name == container {
				q, ok := c.Usage[name]
				return q.MilliValue(), ok
			}
		}
		return 0, false
	}
	if len(pm.Containers) == 0 {
		return 0, false
	}
	var sum int64
	for _, c := range pm.Containers {
		q, ok := c.Usage[name]
		if !ok {
			return 0, false
		}
		sum += q.MilliValue()
	}
	return sum, true
}

// pods reads a per-pod metric from custom.metrics.k8s.io.
func (a *APIs) pods(req Request, id autoscalingv2.MetricIdentifier) hpa.MetricData {
	sel, err := metricSelector(id)
	if err != nil {
		return failed(err)
	}
	list, err := a.Custom.NamespacedMetrics(req.Namespace).GetForObjects(schema.GroupKind{Kind: "Pod"}, req.Selector, id.Name, sel)
	if err != nil {
		return failed(fmt.Errorf("unable to fetch metrics from custom metrics API: %w", err))
	}
	if len(list.Items) == 0 {
		return failed(errors.New("no metrics returned from custom metrics API"))
	}
	out := make(hpa.PodMetrics, len(list.Items))
	for _, v := range list.Items {
		window := defaultCustomMetricWindow
		if v.WindowSeconds != nil {
			window = time.Duration(*v.WindowSeconds) * time.Second
		}
		out[v.DescribedObject.Name] = hpa.PodMetric{Timestamp: v.Timestamp.Time, Window: window, Value: v.Value.MilliValue()}
	}
	return hpa.MetricData{PodMetrics: out, Timestamp: list.Items[0].Timestamp.Time}
}

// object reads one object's metric from custom.metrics.k8s.io.
func (a *APIs) object(req Request, src *autoscalingv2.ObjectMetricSource) hpa.MetricData {
	sel, err := metricSelector(src.Metric)
	if err != nil {
		return failed(err)
	}
	ref := src.DescribedObject
	gk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind()
	var v *custommetricsv1beta2.MetricValue
	if gk == (schema.GroupKind{Kind: "Namespace"}) {
		// The autoscaler's own namespace, whatever the name says: a
		// reference does not leave its namespace.
		v, err = a.Custom.RootScopedMetrics().GetForObject(gk, req.Namespace, src.Metric.Name, sel)
	} else {
		v, err = a.Custom.NamespacedMetrics(req.Namespace).GetForObject(gk, ref.Name, src.Metric.Name, sel)
	}
	if err != nil {
		return failed(fmt.Errorf("unable to fetch metrics from custom metrics API: %w", err))
	}
	return hpa.MetricData{ObjectValue: v.Value.MilliValue(), Timestamp: v.Timestamp.Time}
}

// external reads an external metric's series from external.metrics.k8s.io.
func (a *APIs) external(req Request, id autoscalingv2.MetricIdentifier) hpa.MetricData {
	sel, err := metricSelector(id)
	if err != nil {
		return failed(err)
	}
	list, err := a.External.NamespacedMetrics(req.Namespace).List(id.Name, sel)
	if err != nil {
		return failed(fmt.Errorf("unable to fetch metrics from external metrics API: %w", err))
	}
	if len(list.Items) == 0 {
		return failed(errors.New("no metrics returned from external metrics API"))
	}
	values := make([]int64, len(list.Items))
	for i, v := range list.Items {
		values[i] = v.Value.MilliValue()
	}
	return hpa.MetricData{ExternalValues: values, Timestamp: list.Items[0].Timestamp.Time}
}
