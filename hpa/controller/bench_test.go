package controller

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/hpa"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
)

const (
	fleetSize = 2000
	fleetPods = 20
)

// fleet is a controller over 2,000 PodAutoscalers of 20 pods each, all in
// one namespace (the worst case for pod listing and the ambiguity check),
// with a fake metric source serving precomputed samples. Every autoscaler
// has a cpu Utilization metric; every other one also a Pods metric and a
// behavior; every fourth watermarks.
type fleet struct {
	*harness
	keys []string
}

func newFleet(tb testing.TB) *fleet {
	h := newHarness(tb, hpa.DefaultConfig())
	podInformer := cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.Pod{}, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	pods, err := NewIndexedPods(podInformer)
	if err != nil {
		tb.Fatal(err)
	}
	h.c.cfg.Pods = pods
	h.c.cfg.Recorder = discardRecorder{}
	data := map[string][2]hpa.PodMetrics{}
	start := metav1.NewTime(epoch.Add(-time.Hour))
	f := &fleet{harness: h}
	seed := uint64(7)
	next := func(lo, hi int64) int64 { // xorshift: deterministic samples
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return lo + int64(seed%uint64(hi-lo))
	}
	for i := range fleetSize {
		app := fmt.Sprintf("app-%d", i)
		h.scales.set("bench", app, fleetPods, "app="+app)
		cpu, qps := hpa.PodMetrics{}, hpa.PodMetrics{}
		for j := range fleetPods {
			name := fmt.Sprintf("%s-%d", app, j)
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: name, Labels: map[string]string{"app": app, "pod-template-hash": "5d8f7c"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &start, Conditions: []corev1.PodCondition{{
					Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: start}}},
			}
			if err := podInformer.GetIndexer().Add(p); err != nil {
				tb.Fatal(err)
			}
			cpu[name] = hpa.PodMetric{Value: next(100, 900), Timestamp: epoch, Window: 30 * time.Second}
			qps[name] = hpa.PodMetric{Value: next(1000, 9000), Timestamp: epoch, Window: 30 * time.Second}
		}
		data["app="+app] = [2]hpa.PodMetrics{cpu, qps}

		pa := cpuPA("bench", app, 60, 2, 60)
		pa.Spec.ScaleTargetRef.Name = app
		if i%2 == 1 {
			pa.Spec.Metrics = append(pa.Spec.Metrics, v1alpha1.MetricSpec{MetricSpec: autoscalingv2.MetricSpec{
				Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "qps"},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewQuantity(5, resource.DecimalSI)}}}})
			pa.Spec.Behavior = &v1alpha1.Behavior{ScaleDown: &v1alpha1.ScalingRules{
				Policies: []v1alpha1.ScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 60}}}}
		}
		if i%4 == 0 {
			pa.Spec.Metrics[0].Watermarks = &v1alpha1.Watermarks{High: ptr.To(resource.MustParse("80")), Low: ptr.To(resource.MustParse("40"))}
		}
		h.addPA(pa)
		f.keys = append(f.keys, "bench/"+app)
	}
	h.source = metrics.SourceFunc(func(_ context.Context, r metrics.Request) hpa.MetricData {
		d := data[r.Selector.String()]
		if r.Metric.Type == autoscalingv2.PodsMetricSourceType {
			return hpa.MetricData{PodMetrics: d[1], Timestamp: epoch}
		}
		return hpa.MetricData{PodMetrics: d[0], Timestamp: epoch}
	})
	return f
}

// pass syncs every autoscaler once, 15 seconds after the previous pass.
func (f *fleet) pass(tb testing.TB) (rescaled int) {
	f.clock.Step(15 * time.Second)
	ctx := quiet()
	before := f.scales.updates
	for _, k := range f.keys {
		if _, err := f.c.Sync(ctx, k); err != nil {
			tb.Fatalf("sync %s: %v", k, err)
		}
	}
	return f.scales.updates - before
}

// cpuTime is the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestFleetIsNotDegenerate checks that the fleet BenchmarkFleetPass times
// does real work: some autoscalers rescale on the first pass, not all. The
// speed target itself (under 2 s of CPU per pass) is checked by the
// benchmark, with its figures in docs/performance.md.
func TestFleetIsNotDegenerate(t *testing.T) {
	f := newFleet(t)
	first := f.pass(t) // seeds every history and writes every status
	f.pass(t)
	if first == 0 || first == fleetSize {
		t.Fatalf("degenerate fleet: %d of %d rescale", first, fleetSize)
	}
}

// BenchmarkFleetPass reports the cost of one full pass (ns/op) and its CPU
// time (cpu-ms/pass).
func BenchmarkFleetPass(b *testing.B) {
	f := newFleet(b)
	f.pass(b)
	b.ReportAllocs()
	b.ResetTimer()
	startCPU := cpuTime()
	for b.Loop() {
		f.pass(b)
	}
	b.ReportMetric(float64((cpuTime()-startCPU).Milliseconds())/float64(b.N), "cpu-ms/pass")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*fleetSize), "ns/autoscaler")
}

// discardRecorder drops events (the fake recorder's channel would fill).
type discardRecorder struct{}

func (discardRecorder) Event(_ k8sruntime.Object, _, _, _ string)            {}
func (discardRecorder) Eventf(_ k8sruntime.Object, _, _, _ string, _ ...any) {}
func (discardRecorder) AnnotatedEventf(_ k8sruntime.Object, _ map[string]string, _, _, _ string, _ ...any) {
}
