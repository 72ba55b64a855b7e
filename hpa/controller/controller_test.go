package controller

import (
	"errors"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/hpa"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
)

func TestScaleUpWritesStatusAndEvent(t *testing.T) {
	h := newHarness(t, hpa.DefaultConfig())
	h.deployment("ns", "web", 2)
	h.addPA(cpuPA("ns", "web", 50, 1, 10))
	h.sim.Set("cpu", metrics.Constant(0.2)) // 100m per pod: 100% of the request

	h.sync("ns/web")
	if got := h.scales.replicas("ns", "web"); got != 4 {
		t.Fatalf("replicas %d, want 4 (100%% utilization on a 50%% target)", got)
	}
	ev := h.events()
	if !hasEvent(ev, "Normal SuccessfulRescale New size: 4; reason: cpu resource utilization (percentage of request) above target") {
		t.Fatalf("events %q", ev)
	}
	st := h.pa("ns/web").Status
	if st.CurrentReplicas != 2 || st.DesiredReplicas != 4 || st.LastScaleTime == nil || !st.LastScaleTime.Time.Equal(epoch) {
		t.Fatalf("status %+v", st.HorizontalPodAutoscalerStatus)
	}
	if c := condition(st.HorizontalPodAutoscalerStatus, autoscalingv2.AbleToScale); c.Reason != hpa.ReasonSucceededRescale || c.Status != corev1.ConditionTrue {
		t.Fatalf("AbleToScale %+v", c)
	}
	if c := condition(st.HorizontalPodAutoscalerStatus, autoscalingv2.ScalingActive); c.Reason != hpa.ReasonValidMetricFound {
		t.Fatalf("ScalingActive %+v", c)
	}
	if c := condition(st.HorizontalPodAutoscalerStatus, autoscalingv2.ScalingLimited); c.Status != corev1.ConditionFalse || c.Reason != hpa.ReasonDesiredWithinRange {
		t.Fatalf("ScalingLimited %+v", c)
	}
	if st.Targets != "cpu: 100%/50%" || st.Reference != "Deployment/web" {
		t.Fatalf("display fields %q %q", st.Targets, st.Reference)
	}
	if st.ObservedGeneration == nil || *st.ObservedGeneration != 1 {
		t.Fatalf("observedGeneration %v", st.ObservedGeneration)
	}
	// The first sync seeds the current count, as Kubernetes does, then
	// records its own recommendation.
	if st.History == nil || len(st.History.Recommendations) != 2 || st.History.Recommendations[1].Replicas != 4 {
		t.Fatalf("history %+v", st.History)
	}
}

func TestStatusWrittenOnlyWhenChanged(t *testing.T) {
	h := newHarness(t, hpa.DefaultConfig())
	h.deployment("ns", "web", 3)
	h.addPA(cpuPA("ns", "web", 50, 1, 10))
	h.sim.Set("cpu", metrics.Constant(0.15)) // 50%: on target

	h.sync("ns/web")
	if h.pas.writes != 1 || h.scales.updates != 0 {
		t.Fatalf("first sync: %d status writes, %d scale updates; want 1 and 0", h.pas.writes, h.scales.updates)
	}
	h.sync("ns/web")
	if h.pas.writes != 1 {
		t.Fatalf("a second sync in the same second with the same inputs wrote the status again")
	}
	h.clock.Step(15 * time.Second)
	h.sync("ns/web")
	if h.pas.writes != 2 {
		t.Fatalf("a later sync must record its recommendation: %d writes", h.pas.writes)
	}
	if recs := h.pa("ns/web").Status.History.Recommendations; len(recs) != 1 || !recs[0].Timestamp.Time.Equal(epoch.Add(15*time.Second)) {
		t.Fatalf("equal recommendations should be compacted to the newest: %+v", recs)
	}
}

func TestMetricOutageHoldsReplicas(t *testing.T) {
	h := newHarness(t, hpa.DefaultConfig())
	h.deployment("ns", "web", 4)
	h.addPA(cpuPA("ns", "web", 50, 1, 10))
	h.sim.Set("cpu", metrics.Constant(0.2)) // on target
	h.sync("ns/web")
	h.events()

	// The metrics pipeline goes down while the load is gone: no scale-down
	// on a metric that cannot be read, even long after the window.
	h.sim.Fail("cpu", errors.New("metrics-server unavailable"))
	for range 30 {
		h.clock.Step(time.Minute)
		h.sync("ns/web")
	}
	if got := h.scales.replicas("ns", "web"); got != 4 {
		t.Fatalf("replicas %d during the outage, want 4 held", got)
	}
	st := h.pa("ns/web").Status.HorizontalPodAutoscalerStatus
	c := condition(st, autoscalingv2.ScalingActive)
	if c.Status != corev1.ConditionFalse || c.Reason != hpa.ReasonFailedGetResourceMetric || !strings.Contains(c.Message, "metrics-server unavailable") {
		t.Fatalf("ScalingActive %+v", c)
	}
	if st.DesiredReplicas != 4 || st.CurrentReplicas != 4 {
		t.Fatalf("status %+v", st)
	}
	ev := h.events()
	if !hasEvent(ev, "Warning FailedGetResourceMetric") || !hasEvent(ev, "Warning FailedComputeMetricsReplicas invalid metrics (1 invalid out of 1)") {
		t.Fatalf("events %q", ev)
	}

	// A second, healthy metric may scale up but never down while the first fails.
	pa := h.pa("ns/web").DeepCopy()
	pa.Spec.Metrics = append(pa.Spec.Metrics, v1alpha1.MetricSpec{MetricSpec: autoscalingv2.MetricSpec{
		Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: "queue"},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewQuantity(10, resource.DecimalSI)}}}})
	pa.Generation++
	h.addPA(pa)
	h.sim.Set("queue", metrics.Constant(10)) // 1 replica's worth: a scale-down
	h.sync("ns/web")
	if got := h.scales.replicas("ns", "web"); got != 4 {
		t.Fatalf("scaled to %d on a healthy metric while another failed", got)
	}
	h.sim.Set("queue", metrics.Constant(60)) // 6 replicas' worth: a scale-up
	h.sync("ns/web")
	if got := h.scales.replicas("ns", "web"); got != 6 {
		t.Fatalf("replicas %d, want the scale-up to 6 the healthy metric asks for", got)
	}
}

func TestFailedGetScale(t *testing.T) {
	h := newHarness(t, hpa.DefaultConfig())
	h.deployment("ns", "web", 2)
	h.addPA(cpuPA("ns", "web", 50, 1, 10))
	h.scales.getErr = errors.New("deployments.apps \"web\" is forbidden")
	if _, err := h.c.Sync(quiet(), "ns/web"); err == nil {
		t.Fatal("want an error (retried with backoff)")
	}
	c := condition(h.pa("ns/web").Status.HorizontalPodAutoscalerStatus, autoscalingv2.AbleToScale)
	if c.Status != corev1.ConditionFalse || c.Reason != hpa.ReasonFailedGetScale {
		t.Fatalf("AbleToScale %+v", c)
	}
	if ev := h.events(); !hasEvent(ev, "Warning FailedGetScale deployments.apps \"web\" is forbidden") {
		t.Fatalf("events %q", ev)
	}
}

func TestRescaleRetriesConflictsAndReportsFailure(t *testing.T) {
	h := newHarness(t, hpa.DefaultConfig())
	h.deployment("ns", "web", 2)
	h.addPA(cpuPA("ns", "web", 50, 1, 10))
	h.sim.Set("cpu", metrics.Constant(0.2))
	h.scales.conflicts = 2
	h.sync("ns/web")
	if got := h.scales.replicas("ns", "web"); got != 4 {
		t.Fatalf("replicas %d after conflicts, want 4", got)
	}

	h.follow("ns", "web")
	h.clock.Step(time.Minute)
	h.sim.Set("cpu", metrics.Constant(0.8))
	h.scales.updateErr = apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web", errors.New("no"))
	if _, err := h.c.Sync(quiet(), "ns/web"); err == nil {
		t.Fatal("want an error from a failed rescale")
	}
	st := h.pa("ns/web").Status.HorizontalPodAutoscalerStatus
	if c := condition(st, autoscalingv2.AbleToScale); c.Reason != hpa.ReasonFailedUpdateScale || c.Status != corev1.ConditionFalse {
		t.Fatalf("AbleToScale %+v", c)
	}
	if st.DesiredReplicas != 4 || st.CurrentReplicas != 4 {
		t.Fatalf("a failed rescale must keep the last desired count: %+v", st)
	}
	if ev := h.events(); !hasEvent(ev, "Warning FailedRescale New size: 8; reason: cpu resource utilization (percentage of request) above target; error:") {
		t.Fatalf("events %q", ev)
	}
}

func TestSelectorProblems(t *testing.T) {
	h := newHarness(t, hpa.DefaultConfig())
	h.sim.Set("cpu", metrics.Constant(0.2))
	h.deployment("ns", "web", 2)
	h.scales.set("ns", "web", 2, "")
	h.addPA(cpuPA("ns", "web", 50, 1, 10))
	h.sync("ns/web")
	c := condition(h.pa("ns/web").Status.HorizontalPodAutoscalerStatus, autoscalingv2.ScalingActive)
	if c.Reason != hpa.ReasonInvalidSelector || !hasEvent(h.events(), "Warning SelectorRequired") {
		t.Fatalf("missing selector: %+v", c)
	}

	// Two autoscalers whose targets select the same pods.
	h.scales.set("ns", "web", 2, "app=web")
	h.scales.set("ns", "web2", 2, "app in (web)")
	pa2 := cpuPA("ns", "web2", 50, 1, 10)
	h.addPA(pa2)
	h.sync("ns/web")
	h.sync("ns/web2")
	c = condition(h.pa("ns/web2").Status.HorizontalPodAutoscalerStatus, autoscalingv2.ScalingActive)
	if c.Reason != hpa.ReasonAmbiguousSelector || !strings.Contains(c.Message, "[ns/web2 ns/web]") {
		t.Fatalf("ambiguous selector: %+v", c)
	}
	if h.scales.replicas("ns", "web2") != 2 {
		t.Fatal("an ambiguous autoscaler scaled")
	}
	// Once the other one is deleted, scaling resumes.
	_ = h.informer.GetIndexer().Delete(h.pa("ns/web"))
	h.c.remove(cpuPA("ns", "web", 50, 1, 10))
	h.sync("ns/web2")
	if c := condition(h.pa("ns/web2").Status.HorizontalPodAutoscalerStatus, autoscalingv2.ScalingActive); c.Reason != hpa.ReasonValidMetricFound {
		t.Fatalf("after the other was deleted: %+v", c)
	}
}

func TestOutsideBoundsAndZero(t *testing.T) {
	h := newHarness(t, hpa.DefaultConfig())
	h.deployment("ns", "web", 12)
	h.addPA(cpuPA("ns", "web", 50, 2, 10))
	h.sync("ns/web") // no load set: metrics are not even read above max
	if got := h.scales.replicas("ns", "web"); got != 10 {
		t.Fatalf("replicas %d, want clamped to max 10", got)
	}
	if ev := h.events(); !hasEvent(ev, "Normal SuccessfulRescale New size: 10; reason: Current number of replicas above Spec.MaxReplicas") {
		t.Fatalf("events %q", ev)
	}
	h.scales.set("ns", "web", 0, "app=web")
	h.clock.Step(time.Minute)
	h.sync("ns/web")
	st := h.pa("ns/web").Status.HorizontalPodAutoscalerStatus
	if c := condition(st, autoscalingv2.ScalingActive); c.Reason != hpa.ReasonScalingDisabled || h.scales.replicas("ns", "web") != 0 || st.DesiredReplicas != 0 {
		t.Fatalf("scaled to zero by hand: %+v", st)
	}
}

// A new controller (a restart, or a new leader) starts from the history in
// the object: the scale-down window is not forgotten, and a rate limit
// counts the rescales made before the restart.
func TestHistorySurvivesRestart(t *testing.T) {
	cfg := hpa.DefaultConfig()
	cfg.DownscaleStabilizationWindow = 5 * time.Minute
	h := newHarness(t, cfg)
	h.deployment("ns", "web", 2)
	pa := cpuPA("ns", "web", 50, 1, 10)
	pa.Spec.Behavior = &v1alpha1.Behavior{ScaleDown: &v1alpha1.ScalingRules{
		StabilizationWindowSeconds: ptr.To[int32](0),
		Policies:                   []v1alpha1.ScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 600}},
	}}
	h.addPA(pa)
	h.sim.Set("cpu", metrics.Constant(0.2))
	h.sync("ns/web")
	h.follow("ns", "web")
	if got := h.scales.replicas("ns", "web"); got != 4 {
		t.Fatalf("replicas %d, want 4", got)
	}
	h.sim.Set("cpu", metrics.Constant(0.01)) // the load is gone, well after the scale-up
	h.clock.Step(11 * time.Minute)
	h.sync("ns/web")
	h.follow("ns", "web")
	if got := h.scales.replicas("ns", "web"); got != 3 {
		t.Fatalf("replicas %d, want one pod down (policy: 1 pod per 10 minutes)", got)
	}

	// Restart: a fresh controller over the same objects.
	restarted := newHarness(t, cfg)
	restarted.scales, restarted.pods, restarted.sim, restarted.source = h.scales, h.pods, h.sim, h.sim
	restarted.c.cfg.Scales, restarted.c.cfg.Pods = h.scales, h.c.cfg.Pods
	restarted.addPA(h.pa("ns/web"))
	restarted.clock.SetTime(h.clock.Now().Add(15 * time.Second))
	restarted.sync("ns/web")
	if got := h.scales.replicas("ns", "web"); got != 3 {
		t.Fatalf("after the restart replicas went to %d: the policy's period was forgotten", got)
	}
	restarted.clock.Step(10 * time.Minute)
	restarted.sync("ns/web")
	if got := h.scales.replicas("ns", "web"); got != 2 {
		t.Fatalf("after the period replicas %d, want 2", got)
	}
}

func TestWatermarksFromSpec(t *testing.T) {
	h := newHarness(t, hpa.DefaultConfig())
	h.deployment("ns", "web", 4)
	pa := cpuPA("ns", "web", 50, 1, 20)
	pa.Spec.Metrics[0].Watermarks = &v1alpha1.Watermarks{High: ptr.To(resource.MustParse("80")), Low: ptr.To(resource.MustParse("40"))}
	h.addPA(pa)
	h.sim.Set("cpu", metrics.Constant(0.24)) // 60%: inside the band, although above the 50% target
	h.sync("ns/web")
	if got := h.scales.replicas("ns", "web"); got != 4 {
		t.Fatalf("replicas %d inside the band, want 4", got)
	}
	if ts := h.pa("ns/web").Status.Targets; ts != "cpu: 60%/40%..80%" {
		t.Fatalf("targets %q", ts)
	}
	h.sim.Set("cpu", metrics.Constant(0.4)) // 100%: above high
	h.clock.Step(15 * time.Second)
	h.sync("ns/web")
	if got := h.scales.replicas("ns", "web"); got != 5 {
		t.Fatalf("replicas %d, want ceil(4*100/80) = 5", got)
	}
}

func TestCompactHistoryKeepsOutcomes(t *testing.T) {
	at := func(s int) metav1.Time { return metav1.NewTime(epoch.Add(time.Duration(s) * time.Second)) }
	h := hpa.History{Recommendations: []hpa.Recommendation{
		{Replicas: 5, Timestamp: at(0)}, {Replicas: 3, Timestamp: at(15)}, {Replicas: 5, Timestamp: at(30)}, {Replicas: 3, Timestamp: at(45)}, {Replicas: 4, Timestamp: at(60)},
	}}
	got := compactHistory(h).Recommendations
	want := []hpa.Recommendation{{Replicas: 5, Timestamp: at(30)}, {Replicas: 3, Timestamp: at(45)}, {Replicas: 4, Timestamp: at(60)}}
	if len(got) != len(want) {
		t.Fatalf("compacted %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Replicas != want[i].Replicas || !got[i].Timestamp.Equal(&want[i].Timestamp) {
			t.Fatalf("compacted %+v, want %+v", got, want)
		}
	}
	// Every stabilization over every window and instant agrees.
	for now := 60; now <= 400; now += 5 {
		for _, w := range []time.Duration{0, 10 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute} {
			for proposal := int32(1); proposal <= 6; proposal++ {
				t0 := epoch.Add(time.Duration(now) * time.Second)
				a, _ := hpa.Stabilize(h.Recommendations, proposal, w, t0)
				b, _ := hpa.Stabilize(got, proposal, w, t0)
				c, _ := hpa.StabilizeWithBehavior(h.Recommendations, 4, proposal, w, 2*w, t0)
				d, _ := hpa.StabilizeWithBehavior(got, 4, proposal, w, 2*w, t0)
				if a != b || c != d {
					t.Fatalf("at +%ds window %v proposal %d: %d/%d vs %d/%d", now, w, proposal, a, c, b, d)
				}
			}
		}
	}
}

// TestScaledToZeroRemovedOnRescale: without the HPAScaleToZero gate,
// Kubernetes drops a ScaledToZero condition (left by a controller that had
// the gate) when it rescales, and keeps it otherwise.
func TestScaledToZeroRemovedOnRescale(t *testing.T) {
	h := newHarness(t, hpa.DefaultConfig())
	h.deployment("ns", "web", 2)
	pa := cpuPA("ns", "web", 50, 1, 10)
	pa.Status.Conditions = []autoscalingv2.HorizontalPodAutoscalerCondition{{
		Type: autoscalingv2.ScaledToZero, Status: corev1.ConditionTrue, Reason: "ScaledToZero", LastTransitionTime: metav1.NewTime(epoch.Add(-time.Hour)),
	}}
	h.addPA(pa)
	h.sim.Set("cpu", metrics.Constant(0.1)) // 50%: on target

	h.sync("ns/web")
	if c := condition(h.pa("ns/web").Status.HorizontalPodAutoscalerStatus, autoscalingv2.ScaledToZero); c.Status != corev1.ConditionTrue {
		t.Fatalf("a sync without rescale dropped ScaledToZero: %+v", h.pa("ns/web").Status.Conditions)
	}
	h.sim.Set("cpu", metrics.Constant(0.2)) // 100%: scale up
	h.clock.Step(15 * time.Second)
	h.sync("ns/web")
	st := h.pa("ns/web").Status.HorizontalPodAutoscalerStatus
	if h.scales.replicas("ns", "web") != 4 || condition(st, autoscalingv2.ScaledToZero).Type != "" {
		t.Fatalf("after a rescale to %d: conditions %+v, want no ScaledToZero", h.scales.replicas("ns", "web"), st.Conditions)
	}
}
