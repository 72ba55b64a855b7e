package metrics

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func simPod(name string, phase corev1.PodPhase, deleting bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Status: corev1.PodStatus{Phase: phase}}
	if deleting {
		now := metav1.Now()
		p.DeletionTimestamp = &now
	}
	return p
}

func TestSimulatedSource(t *testing.T) {
	s := NewSimulated()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	pods := []*corev1.Pod{simPod("a", corev1.PodRunning, false), simPod("b", corev1.PodRunning, false),
		simPod("c", corev1.PodPending, false), simPod("d", corev1.PodRunning, true)}
	req := cpuRequest("")
	req.Pods, req.Now = pods, now

	if d := s.Fetch(context.Background(), req); d.Err == nil || !strings.Contains(d.Err.Error(), "no simulated load") {
		t.Fatalf("unset metric: err %v", d.Err)
	}
	start := now
	s.Set("cpu", func(at time.Time) float64 { return 1 + at.Sub(start).Minutes() }) // 1 core, +1 per minute
	d := s.Fetch(context.Background(), req)
	if d.Err != nil || len(d.PodMetrics) != 2 || d.PodMetrics["a"].Value != 500 || d.PodMetrics["b"].Value != 500 {
		t.Fatalf("1 core over 2 running pods: %+v (err %v)", d.PodMetrics, d.Err)
	}
	if m := d.PodMetrics["a"]; !m.Timestamp.Equal(now) || m.Window != DefaultSimulatedWindow {
		t.Fatalf("sample %+v", m)
	}
	req.Now = now.Add(2 * time.Minute)
	if d := s.Fetch(context.Background(), req); d.PodMetrics["a"].Value != 1500 {
		t.Fatalf("the curve at +2m: %+v", d.PodMetrics)
	}

	s.Set("ns/cpu", Constant(0.1))
	if d := s.Fetch(context.Background(), req); d.PodMetrics["a"].Value != 50 {
		t.Fatalf("a namespace's own load should win: %+v", d.PodMetrics)
	}
	s.Set(SimulatedKey("ns", "web", "cpu"), Constant(0.3))
	own := req
	own.Autoscaler = "web"
	if d := s.Fetch(context.Background(), own); d.PodMetrics["a"].Value != 150 {
		t.Fatalf("an autoscaler's own load should win: %+v", d.PodMetrics)
	}
	if d := s.Fetch(context.Background(), req); d.PodMetrics["a"].Value != 50 {
		t.Fatalf("another autoscaler's load leaked to this one: %+v", d.PodMetrics)
	}
	s.Fail("ns/cpu", errors.New("scrape failed"))
	if d := s.Fetch(context.Background(), req); d.Err == nil || !strings.Contains(d.Err.Error(), "scrape failed") {
		t.Fatalf("failing metric: err %v", d.Err)
	}

	s.Set("queue", Constant(7.5))
	ext := req
	ext.Metric = autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType,
		External: &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "queue"}}}
	if d := s.Fetch(context.Background(), ext); d.Err != nil || len(d.ExternalValues) != 1 || d.ExternalValues[0] != 7500 {
		t.Fatalf("external: %+v", d)
	}
	obj := req
	obj.Metric = autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType,
		Object: &autoscalingv2.ObjectMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "queue"}}}
	if d := s.Fetch(context.Background(), obj); d.Err != nil || d.ObjectValue != 7500 {
		t.Fatalf("object: %+v", d)
	}
	s.Set("prometheus", Constant(2))
	prom := req
	prom.Metric = promMetric("sum(x)")
	if d := s.Fetch(context.Background(), prom); d.Err != nil || d.ExternalValues[0] != 2000 {
		t.Fatalf("prometheus metric: %+v", d)
	}
}

// A listener is told of every change until it is removed (its pod loop's
// term ended); removing one leaves the others.
func TestSimulatedListenersCanBeRemoved(t *testing.T) {
	s := NewSimulated()
	var first, second int
	removeFirst := s.OnChange(func() { first++ })
	s.OnChange(func() { second++ })
	s.Set("cpu", Constant(1))
	removeFirst()
	s.Fail("cpu", errors.New("down"))
	s.Set("cpu", nil)
	if first != 1 || second != 3 {
		t.Fatalf("the removed listener was told %d time(s) (want 1), the kept one %d (want 3)", first, second)
	}
}
