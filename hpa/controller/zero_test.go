package controller

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/hpa"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
)

// zeroPA scales web on cpu and on an External "queue" (Value target 10,
// activation threshold 2) from minReplicas 0, scaling down without a
// stabilization window.
func zeroPA() *v1alpha1.PodAutoscaler {
	pa := cpuPA("ns", "web", 50, 0, 10)
	pa.Spec.Metrics = append(pa.Spec.Metrics, v1alpha1.MetricSpec{
		MetricSpec: autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: "queue"},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: resource.NewQuantity(10, resource.DecimalSI)}}},
		ActivationThreshold: resource.NewQuantity(2, resource.DecimalSI),
	})
	pa.Spec.Behavior = &v1alpha1.Behavior{ScaleDown: &v1alpha1.ScalingRules{StabilizationWindowSeconds: ptr.To[int32](0)}}
	return pa
}

// readTypes records which metric types a source was asked for.
type readTypes struct {
	mu    sync.Mutex
	types []autoscalingv2.MetricSourceType
}

func (r *readTypes) take() []autoscalingv2.MetricSourceType {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.types
	r.types = nil
	return out
}

func TestScaleToZeroAndBack(t *testing.T) {
	h := newHarness(t, hpa.DefaultConfig())
	reads := &readTypes{}
	h.source = metrics.SourceFunc(func(ctx context.Context, r metrics.Request) hpa.MetricData {
		reads.mu.Lock()
		reads.types = append(reads.types, r.Metric.Type)
		reads.mu.Unlock()
		return h.sim.Fetch(ctx, r)
	})
	var rescales []Rescale
	h.c.cfg.OnRescale = func(_ context.Context, r Rescale) { rescales = append(rescales, r) }
	h.deployment("ns", "web", 0)
	h.addPA(zeroPA())
	h.sim.Set("queue", metrics.Constant(2)) // at the threshold: idle
	h.sim.Set("cpu", metrics.Constant(0.05))

	h.sync("ns/web")
	if got := h.scales.replicas("ns", "web"); got != 0 || h.scales.updates != 0 {
		t.Fatalf("idle at zero: replicas %d after %d updates", got, h.scales.updates)
	}
	if got := reads.take(); len(got) != 1 || got[0] != autoscalingv2.ExternalMetricSourceType {
		t.Fatalf("at zero read %v, want only the External metric", got)
	}
	st := h.pa("ns/web").Status.HorizontalPodAutoscalerStatus
	if got := h.pa("ns/web").Status.Targets; got != "cpu: <unknown>/50%, queue: 2/10" {
		t.Fatalf("targets at zero %q: the activation metric's value, the unread cpu unknown", got)
	}
	if c := condition(st, autoscalingv2.ScaledToZero); c.Status != corev1.ConditionTrue {
		t.Fatalf("ScaledToZero %+v", c)
	}
	if c := condition(st, autoscalingv2.ScalingActive); c.Status != corev1.ConditionTrue || c.Reason != hpa.ReasonBelowActivation {
		t.Fatalf("ScalingActive %+v", c)
	}

	// A failed read at zero is never taken for idle or active.
	h.sim.Fail("queue", errors.New("adapter down"))
	h.clock.Step(15 * time.Second)
	h.sync("ns/web")
	st = h.pa("ns/web").Status.HorizontalPodAutoscalerStatus
	if c := condition(st, autoscalingv2.ScalingActive); h.scales.updates != 0 || c.Status != corev1.ConditionFalse || c.Reason != hpa.ReasonFailedGetExternalMetric {
		t.Fatalf("read error at zero: %d updates, ScalingActive %+v", h.scales.updates, c)
	}
	if ev := h.events(); !hasEvent(ev, "Warning FailedGetExternalMetric") {
		t.Fatalf("events %q", ev)
	}

	// 0 -> 1 at once, though 45 asks for 5 replicas.
	h.sim.Set("queue", metrics.Constant(45))
	h.clock.Step(15 * time.Second)
	h.sync("ns/web")
	if got := h.scales.replicas("ns", "web"); got != 1 {
		t.Fatalf("activation: replicas %d, want 1", got)
	}
	if len(rescales) != 1 || rescales[0].From != 0 || rescales[0].To != 1 {
		t.Fatalf("the node loop was told %+v, want one rescale 0 -> 1 (provision-ahead plans the first replica's node)", rescales)
	}
	if ev := h.events(); !hasEvent(ev, "Normal SuccessfulRescale New size: 1; reason: external metric queue(nil) above its activation threshold") {
		t.Fatalf("events %q", ev)
	}
	if c := condition(h.pa("ns/web").Status.HorizontalPodAutoscalerStatus, autoscalingv2.ScaledToZero); c.Type != "" {
		t.Fatalf("ScaledToZero kept after activation: %+v", c)
	}

	for _, typ := range reads.take() {
		if typ != autoscalingv2.ExternalMetricSourceType {
			t.Fatalf("read a %s metric at zero", typ)
		}
	}

	// 1 -> N: the usual calculation, every metric read.
	h.follow("ns", "web")
	h.clock.Step(15 * time.Second)
	h.sync("ns/web")
	if got := h.scales.replicas("ns", "web"); got != 5 {
		t.Fatalf("from one replica: %d, want 5 (45 on a target of 10)", got)
	}
	if got := reads.take(); len(got) != 2 || got[0] != autoscalingv2.ResourceMetricSourceType {
		t.Fatalf("read %v, want every metric once", got)
	}

	// N -> 0 when the queue is at or below its activation threshold.
	h.follow("ns", "web")
	h.sim.Set("queue", metrics.Constant(1))
	h.clock.Step(15 * time.Second)
	h.sync("ns/web")
	if got := h.scales.replicas("ns", "web"); got != 0 {
		t.Fatalf("idle: replicas %d, want 0", got)
	}
	if ev := h.events(); !hasEvent(ev, "Normal SuccessfulRescale New size: 0; reason: All activation metrics at or below") {
		t.Fatalf("events %q", ev)
	}
}

func TestScheduleRaisesMinimumAndReportsBadEntries(t *testing.T) {
	h := newHarness(t, hpa.DefaultConfig())
	h.deployment("ns", "web", 2)
	pa := cpuPA("ns", "web", 50, 1, 10)
	pa.Spec.Schedules = []v1alpha1.Schedule{
		{Name: "noon", Start: "0 12 * * *", Duration: metav1.Duration{Duration: time.Hour}, MinReplicas: 4},
		{Name: "mars", Start: "0 12 * * *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "Mars/Olympus", MinReplicas: 9},
		{Name: "never", Start: "61 * * * *", Duration: metav1.Duration{Duration: time.Hour}, MinReplicas: 9},
	}
	h.addPA(pa)
	h.sim.Set("cpu", metrics.Constant(0.1)) // 50%: on target

	h.sync("ns/web") // epoch is 12:00 UTC: noon is open
	if got := h.scales.replicas("ns", "web"); got != 4 {
		t.Fatalf("replicas %d, want 4 (noon's minimum; the bad entries ignored)", got)
	}
	ev := h.events()
	if !hasEvent(ev, `Warning InvalidSchedule schedule "mars": timeZone "Mars/Olympus"`) || !hasEvent(ev, `Warning InvalidSchedule schedule "never": start "61 * * * *"`) {
		t.Fatalf("events %q", ev)
	}
	if !hasEvent(ev, "Normal SuccessfulRescale New size: 4; reason: Current number of replicas below Spec.MinReplicas (minReplicas raised to 4 by schedule noon)") {
		t.Fatalf("events %q", ev)
	}
	st := h.pa("ns/web").Status.HorizontalPodAutoscalerStatus
	c := condition(st, ConditionSchedulesValid)
	if c.Status != corev1.ConditionFalse || c.Reason != EventInvalidSchedule || !strings.Contains(c.Message, "mars") || !strings.Contains(c.Message, "never") {
		t.Fatalf("SchedulesValid %+v", c)
	}

	// Once the window closes the minimum is spec's again: the metrics
	// decide (on target at 4 replicas: stay).
	h.follow("ns", "web")
	h.clock.Step(time.Hour)
	h.sync("ns/web")
	if c := condition(h.pa("ns/web").Status.HorizontalPodAutoscalerStatus, autoscalingv2.ScalingLimited); c.Reason == hpa.ReasonTooFewReplicas {
		t.Fatalf("the closed window still limits: %+v", c)
	}
}

func TestScheduleRequeuesAtWindowOpening(t *testing.T) {
	h := newHarness(t, hpa.DefaultConfig())
	h.deployment("ns", "web", 2)
	pa := cpuPA("ns", "web", 50, 1, 10)
	pa.Spec.Schedules = []v1alpha1.Schedule{{Name: "next", Start: "1 12 * * *", Duration: metav1.Duration{Duration: time.Hour}, MinReplicas: 4}}
	h.addPA(pa)
	h.sim.Set("cpu", metrics.Constant(0.1))
	// 12:00:59.8: the window opens in 200 ms, well before the next
	// periodic sync.
	h.clock.SetTime(epoch.Add(time.Minute - 200*time.Millisecond))
	h.sync("ns/web")
	if h.c.queue.Len() != 0 {
		t.Fatalf("queued at once: %d", h.c.queue.Len())
	}
	deadline := time.Now().Add(5 * time.Second)
	for h.c.queue.Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("not queued again when the window opens")
		}
		time.Sleep(10 * time.Millisecond) // polling the queue, not waiting for an outcome
	}
	key, _ := h.c.queue.Get()
	if key != "ns/web" {
		t.Fatalf("queued %q", key)
	}
	h.c.queue.Done(key)
}
