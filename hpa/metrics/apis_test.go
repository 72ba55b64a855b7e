package metrics

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	custommetrics "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	externalmetrics "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"
	resourcemetrics "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/hpa"
)

var sampleTime = metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))

// fakeMetricsAPI serves the three metrics APIs' JSON the way an aggregated
// API server does, from canned objects, and records the requests.
type fakeMetricsAPI struct {
	t        *testing.T
	requests []string
	routes   map[string]any // path → response object
	fail     bool
}

func (f *fakeMetricsAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests = append(f.requests, r.URL.RequestURI())
	body, ok := f.routes[r.URL.Path]
	switch {
	case r.URL.Path == "/api":
		body, ok = metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}}, true
	case r.URL.Path == "/apis":
		body, ok = metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{{
			Name:             "custom.metrics.k8s.io",
			Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: "custom.metrics.k8s.io/v1beta2", Version: "v1beta2"}},
			PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "custom.metrics.k8s.io/v1beta2", Version: "v1beta2"},
		}}}, true
	case f.fail:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status: metav1.StatusFailure, Code: 503, Reason: metav1.StatusReasonServiceUnavailable, Message: "metrics backend is down"})
		return
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(body); err != nil {
		f.t.Errorf("encode %s: %v", r.URL.Path, err)
	}
}

func newFakeAPIs(t *testing.T, f *fakeMetricsAPI) *APIClients {
	t.Helper()
	f.t = t
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	cfg := &rest.Config{Host: srv.URL}
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}, {Group: "networking.k8s.io", Version: "v1"}})
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewAPIs(cfg, mapper, disc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func podMetrics(name string, containers map[string]string) resourcemetrics.PodMetrics {
	pm := resourcemetrics.PodMetrics{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Timestamp:  sampleTime,
		Window:     metav1.Duration{Duration: 30 * time.Second},
	}
	for _, c := range []string{"app", "sidecar"} {
		if v, ok := containers[c]; ok {
			usage := corev1.ResourceList{}
			if v != "" {
				usage[corev1.ResourceCPU] = resource.MustParse(v)
			}
			pm.Containers = append(pm.Containers, resourcemetrics.ContainerMetrics{Name: c, Usage: usage})
		}
	}
	return pm
}

func cpuRequest(container string) Request {
	m := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU}}
	if container != "" {
		m = autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType,
			ContainerResource: &autoscalingv2.ContainerResourceMetricSource{Name: corev1.ResourceCPU, Container: container}}
	}
	return Request{Namespace: "ns", Selector: labels.SelectorFromSet(labels.Set{"app": "web"}), Metric: m}
}

func TestAPIsResourceMetrics(t *testing.T) {
	f := &fakeMetricsAPI{routes: map[string]any{
		"/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods": resourcemetrics.PodMetricsList{
			TypeMeta: metav1.TypeMeta{Kind: "PodMetricsList", APIVersion: "metrics.k8s.io/v1beta1"},
			Items: []resourcemetrics.PodMetrics{
				podMetrics("a", map[string]string{"app": "300m", "sidecar": "50m"}),
				podMetrics("b", map[string]string{"app": "200m", "sidecar": ""}), // sidecar without cpu
				podMetrics("c", map[string]string{"sidecar": "10m"}),             // no app container
				podMetrics("d", map[string]string{}),                             // no containers
			},
		},
	}}
	c := newFakeAPIs(t, f)

	d := c.Fetch(context.Background(), cpuRequest(""))
	if d.Err != nil {
		t.Fatal(d.Err)
	}
	if len(d.PodMetrics) != 2 || d.PodMetrics["a"].Value != 350 || d.PodMetrics["c"].Value != 10 {
		t.Fatalf("pod sums %+v: want a=350 and c=10 only (b lacks cpu in a container, d has none)", d.PodMetrics)
	}
	if got := d.PodMetrics["a"]; got.Window != 30*time.Second || !got.Timestamp.Equal(sampleTime.Time) || !d.Timestamp.Equal(sampleTime.Time) {
		t.Fatalf("sample timing %+v, timestamp %v", got, d.Timestamp)
	}
	if !strings.Contains(f.requests[0], "labelSelector=app%3Dweb") {
		t.Fatalf("request %q does not carry the pod selector", f.requests[0])
	}

	d = c.Fetch(context.Background(), cpuRequest("app"))
	if d.Err != nil || len(d.PodMetrics) != 2 || d.PodMetrics["a"].Value != 300 || d.PodMetrics["b"].Value != 200 {
		t.Fatalf("container samples %+v (err %v): want a=300 b=200", d.PodMetrics, d.Err)
	}

	f.routes["/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods"] = resourcemetrics.PodMetricsList{}
	if d := c.Fetch(context.Background(), cpuRequest("")); d.Err == nil || !strings.Contains(d.Err.Error(), "no metrics returned") {
		t.Fatalf("empty list: err %v", d.Err)
	}
	f.fail = true
	if d := c.Fetch(context.Background(), cpuRequest("")); d.Err == nil || !strings.Contains(d.Err.Error(), "metrics backend is down") {
		t.Fatalf("failing API: err %v", d.Err)
	}
}

func TestAPIsCustomAndExternalMetrics(t *testing.T) {
	qps := func(pod, v string, window *int64) custommetrics.MetricValue {
		return custommetrics.MetricValue{
			DescribedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: pod},
			Metric:          custommetrics.MetricIdentifier{Name: "qps"},
			Timestamp:       sampleTime, WindowSeconds: window, Value: resource.MustParse(v),
		}
	}
	f := &fakeMetricsAPI{routes: map[string]any{
		"/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/pods/*/qps": custommetrics.MetricValueList{
			TypeMeta: metav1.TypeMeta{Kind: "MetricValueList", APIVersion: "custom.metrics.k8s.io/v1beta2"},
			Items:    []custommetrics.MetricValue{qps("a", "10", nil), qps("b", "2500m", ptr.To[int64](20))},
		},
		"/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/ingresses.networking.k8s.io/main/hits": custommetrics.MetricValueList{
			TypeMeta: metav1.TypeMeta{Kind: "MetricValueList", APIVersion: "custom.metrics.k8s.io/v1beta2"},
			Items: []custommetrics.MetricValue{{DescribedObject: corev1.ObjectReference{Kind: "Ingress", Name: "main"},
				Metric: custommetrics.MetricIdentifier{Name: "hits"}, Timestamp: sampleTime, Value: resource.MustParse("42")}},
		},
		"/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/metrics/load": custommetrics.MetricValueList{
			TypeMeta: metav1.TypeMeta{Kind: "MetricValueList", APIVersion: "custom.metrics.k8s.io/v1beta2"},
			Items: []custommetrics.MetricValue{{DescribedObject: corev1.ObjectReference{Kind: "Namespace", Name: "ns"},
				Metric: custommetrics.MetricIdentifier{Name: "load"}, Timestamp: sampleTime, Value: resource.MustParse("7")}},
		},
		"/apis/external.metrics.k8s.io/v1beta1/namespaces/ns/queue": externalmetrics.ExternalMetricValueList{
			TypeMeta: metav1.TypeMeta{Kind: "ExternalMetricValueList", APIVersion: "external.metrics.k8s.io/v1beta1"},
			Items: []externalmetrics.ExternalMetricValue{
				{MetricName: "queue", Timestamp: sampleTime, Value: resource.MustParse("3")},
				{MetricName: "queue", Timestamp: sampleTime, Value: resource.MustParse("4500m")},
			},
		},
	}}
	c := newFakeAPIs(t, f)
	ctx := context.Background()
	base := cpuRequest("")

	pods := base
	pods.Metric = autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "qps", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"verb": "GET"}}}}}
	d := c.Fetch(ctx, pods)
	if d.Err != nil || d.PodMetrics["a"].Value != 10000 || d.PodMetrics["b"].Value != 2500 {
		t.Fatalf("pods metric %+v (err %v)", d.PodMetrics, d.Err)
	}
	if d.PodMetrics["a"].Window != time.Minute || d.PodMetrics["b"].Window != 20*time.Second {
		t.Fatalf("windows %+v: want the 1m default and the stated 20s", d.PodMetrics)
	}
	last := f.requests[len(f.requests)-1]
	if !strings.Contains(last, "labelSelector=app%3Dweb") || !strings.Contains(last, "metricLabelSelector=verb%3DGET") {
		t.Fatalf("pods metric request %q lacks a selector", last)
	}

	obj := base
	obj.Metric = autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
		DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Name: "main"},
		Metric:          autoscalingv2.MetricIdentifier{Name: "hits"}}}
	if d := c.Fetch(ctx, obj); d.Err != nil || d.ObjectValue != 42000 || !d.Timestamp.Equal(sampleTime.Time) {
		t.Fatalf("object metric %+v", d)
	}
	obj.Metric.Object.DescribedObject = autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Namespace", Name: "elsewhere"}
	obj.Metric.Object.Metric.Name = "load"
	if d := c.Fetch(ctx, obj); d.Err != nil || d.ObjectValue != 7000 {
		t.Fatalf("namespace metric %+v: want the autoscaler's own namespace asked for", d)
	}

	ext := base
	ext.Metric = autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "queue"}}}
	if d := c.Fetch(ctx, ext); d.Err != nil || len(d.ExternalValues) != 2 || d.ExternalValues[0] != 3000 || d.ExternalValues[1] != 4500 {
		t.Fatalf("external metric %+v", d)
	}

	prom := base
	prom.Metric = promMetric("sum(up)")
	if d := c.Fetch(ctx, prom); d.Err == nil || !strings.Contains(d.Err.Error(), "--prometheus-url") {
		t.Fatalf("a PromQL metric without Prometheus: err %v", d.Err)
	}
}

func promMetric(query string) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: PrometheusMetricName,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{PrometheusQueryLabel: query}}}}}
}

func TestPromQLAndRouter(t *testing.T) {
	if q, ok := PromQL(promMetric(`sum(rate(http_requests_total{job="web"}[1m]))`)); !ok || q != `sum(rate(http_requests_total{job="web"}[1m]))` {
		t.Fatalf("PromQL = %q, %v", q, ok)
	}
	other := promMetric("x")
	other.External.Metric.Name = "queue"
	if _, ok := PromQL(other); ok {
		t.Fatal("a metric not named prometheus was taken for a query")
	}
	var got string
	src := func(name string) Source {
		return SourceFunc(func(context.Context, Request) (d hpa.MetricData) { got = name; return d })
	}
	r := Router{Default: src("default"), Prometheus: src("prometheus")}
	r.Fetch(context.Background(), Request{Metric: promMetric("x")})
	if got != "prometheus" {
		t.Fatalf("PromQL metric went to %s", got)
	}
	r.Fetch(context.Background(), Request{Metric: other})
	if got != "default" {
		t.Fatalf("plain external metric went to %s", got)
	}
	r.Prometheus = nil
	r.Fetch(context.Background(), Request{Metric: promMetric("x")})
	if got != "default" {
		t.Fatalf("without Prometheus, PromQL metric went to %s", got)
	}
}
