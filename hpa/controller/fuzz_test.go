package controller

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/hpa"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
)

// Fuzz targets of the pod loop's inputs from users: a PodAutoscaler as the
// API server stores it, and the annotations of a HorizontalPodAutoscaler.
// A sync must never panic (a recovered panic fails them), and a rescale
// stays within [minReplicas, maxReplicas]. Run one with
// `go test ./hpa/controller -run '^$' -fuzz '^FuzzPodAutoscalerSync$' -fuzztime 1m`.

// fuzzSource answers every metric with the same values.
func fuzzSource(v1, v2 int64) metrics.Source {
	return metrics.SourceFunc(func(_ context.Context, r metrics.Request) hpa.MetricData {
		d := hpa.MetricData{ObjectValue: v1, ExternalValues: []int64{v1, v2}, PodMetrics: hpa.PodMetrics{}, Timestamp: r.Now.Add(-30 * time.Second)}
		for _, p := range r.Pods {
			d.PodMetrics[p.Name] = hpa.PodMetric{Value: v2, Timestamp: d.Timestamp, Window: time.Minute}
		}
		return d
	})
}

// fuzzHarness is a harness whose deployment "ns/web" has current replicas
// (and up to five pods) and whose metrics all read v1 and v2.
func fuzzHarness(t *testing.T, current int32, v1, v2 int64) *harness {
	h := newHarness(t, hpa.DefaultConfig())
	h.c.cfg.Observer = NewObserver(prometheus.NewRegistry())
	h.source = fuzzSource(v1, v2)
	h.scales.set("ns", "web", current, "app=web")
	for i := range min(max(int(current), 0), 5) {
		h.addPod("ns", "web-"+string(rune('a'+i)), "web")
	}
	return h
}

// fuzzSync syncs ns/web and checks the outcome.
func (h *harness) fuzzSync(t *testing.T, c *Controller, spec autoscalingv2.HorizontalPodAutoscalerSpec, current int32) {
	t.Helper()
	_, err := c.Sync(quiet(), "ns/web")
	if p := testutil.ToFloat64(h.c.cfg.Observer.panics); p != 0 {
		t.Fatalf("a panic was recovered: %v", err)
	}
	minR := int32(1)
	if spec.MinReplicas != nil {
		minR = *spec.MinReplicas
	}
	if got := h.scales.replicas("ns", "web"); got != current && 1 <= minR && minR <= spec.MaxReplicas && (got < minR || got > spec.MaxReplicas) {
		t.Fatalf("rescaled %d -> %d, outside [%d, %d]", current, got, minR, spec.MaxReplicas)
	}
}

// FuzzPodAutoscalerSync syncs any PodAutoscaler the API could hold.
func FuzzPodAutoscalerSync(f *testing.F) {
	ext := `{"type":"External","external":{"metric":{"name":"q"},"target":{"type":"AverageValue","averageValue":"10"}}`
	f.Add(`{"spec":{"maxReplicas":10,"metrics":[`+ext+`,"watermarks":{"high":"10P"}}]}}`, int32(4), int64(40000), int64(0))
	f.Add(`{"spec":{"maxReplicas":10,"metrics":[`+ext+`,"watermarks":{"high":"1e18","low":"1n","maxScaleUpPercent":2147483647}}]}}`, int32(4), int64(1), int64(0))
	f.Add(`{"spec":{"maxReplicas":10,"metrics":[`+ext+`}],"behavior":{"scaleDown":{"stabilizationWindowSeconds":60}}}}`, int32(1), int64(30000), int64(0))
	f.Add(`{"spec":{"minReplicas":2,"maxReplicas":20,"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":50}},"watermarks":{"low":"40"}}]},`+
		`"status":{"conditions":[{"type":"ScaledToZero","status":"True","reason":"ScaledToZero"}],"history":{"recommendations":[{"replicas":9,"timestamp":"2099-01-01T00:00:00Z"}]}}}`,
		int32(6), int64(0), int64(1))
	f.Add(`{"spec":{"maxReplicas":10,"metrics":[`+strings.Replace(ext, `"10"`, `"1e-2000000000"`, 1)+`,"watermarks":{"low":1e-2000000000}}]}}`, int32(4), int64(1), int64(0))
	f.Add(`{"spec":{"maxReplicas":20,"metrics":[{"type":"Object","object":{"describedObject":{"kind":"Service","name":"web"},"metric":{"name":"m"},"target":{"type":"AverageValue","averageValue":"1"}}}]}}`,
		int32(10), int64(-1000), int64(0))
	f.Fuzz(func(t *testing.T, raw string, current int32, v1, v2 int64) {
		var pa v1alpha1.PodAutoscaler
		if json.Unmarshal([]byte(raw), &pa) != nil || len(pa.Spec.Metrics) > 8 {
			return
		}
		pa.Namespace, pa.Name, pa.Generation, pa.ResourceVersion = "ns", "web", 1, "1"
		pa.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
		h := fuzzHarness(t, current, v1, v2)
		h.addPA(&pa)
		spec, _ := pa.Spec.HPASpec()
		h.fuzzSync(t, h.c, spec, current)
	})
}

// FuzzHPAAnnotations syncs a HorizontalPodAutoscaler with any watermarks
// and history annotations (--hpa-objects), which anyone who may edit the
// object can write.
func FuzzHPAAnnotations(f *testing.F) {
	f.Add(`[{"high":"10P"},{"high":"1e18","low":"1n","maxScaleUpPercent":2147483647}]`, ``, int32(4), int64(40000), int64(1000))
	f.Add(`[null,{"low":"1e100000","lowTolerancePercent":0}]`, `{"recommendations":[{"replicas":-3,"timestamp":"2026-03-01T11:59:00Z"}]}`, int32(3), int64(1), int64(1))
	f.Add(`[{"high":"1","low":"2"}]`, `{"scaleUpEvents":[{"replicaChange":2147483647,"timestamp":"2099-01-01T00:00:00Z"}]}`, int32(2), int64(math.MaxInt64), int64(math.MinInt64))
	f.Add(`{}`, `[`, int32(0), int64(0), int64(0))
	f.Add(`[{"high":"1e-2000000000"},{"low":1e-2000000000}]`, ``, int32(4), int64(1), int64(1))
	f.Fuzz(func(t *testing.T, marks, history string, current int32, v1, v2 int64) {
		h := fuzzHarness(t, current, v1, v2)
		obj := hpaObject("ns", "web")
		obj.Spec.Metrics = append(obj.Spec.Metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType,
			External: &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "q"},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("10"))}}})
		obj.ResourceVersion = "1"
		obj.Annotations = map[string]string{WatermarksAnnotation: marks, HistoryAnnotation: history}
		inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &autoscalingv2.HorizontalPodAutoscaler{}, 0, cache.Indexers{})
		if err := inf.GetIndexer().Add(obj); err != nil {
			t.Fatal(err)
		}
		c, err := New(Config{
			Store: NewHPAStore(inf, indexerHPAClient{inf.GetIndexer()}), Pods: ListerPods{corelisters.NewPodLister(h.pods)},
			Scales: h.scales, Metrics: h.source, Recorder: h.recorder, Clock: h.clock, HPA: hpa.DefaultConfig(), Observer: h.c.cfg.Observer,
		})
		if err != nil {
			t.Fatal(err)
		}
		h.fuzzSync(t, c, obj.Spec, current)
	})
}

// indexerHPAClient writes HorizontalPodAutoscalers into an informer's
// indexer, as the API server and the watch together would.
type indexerHPAClient struct{ indexer cache.Indexer }

func (c indexerHPAClient) Get(_ context.Context, ns, name string) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	obj, ok, _ := c.indexer.GetByKey(ns + "/" + name)
	if !ok {
		return nil, apierrors.NewNotFound(autoscalingv2.Resource("horizontalpodautoscalers"), name)
	}
	return obj.(*autoscalingv2.HorizontalPodAutoscaler).DeepCopy(), nil
}

func (c indexerHPAClient) UpdateStatus(_ context.Context, o *autoscalingv2.HorizontalPodAutoscaler) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	o = o.DeepCopy()
	o.ResourceVersion += "+"
	return o, c.indexer.Update(o)
}

func (c indexerHPAClient) PatchAnnotation(ctx context.Context, ns, name, key, value string) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	o, err := c.Get(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	setAnnotation(o, key, value)
	return c.UpdateStatus(ctx, o)
}
