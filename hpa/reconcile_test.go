package hpa

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// reconcileAt builds a ReconcileInput with one External AverageValue metric
// (target 1000m) proposing `proposal` replicas.
func reconcileAt(now time.Time, current, minR, maxR int32, proposal int64, b *autoscalingv2.HorizontalPodAutoscalerBehavior, h History) ReconcileInput {
	return ReconcileInput{
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			MinReplicas: &minR, MaxReplicas: maxR, Behavior: b, Metrics: []autoscalingv2.MetricSpec{extAvg("queue", 1000)},
		},
		History:  h,
		Snapshot: Snapshot{Now: now, SpecReplicas: current, StatusReplicas: current},
		Data:     []MetricData{proposing(proposal)},
	}
}

// condition returns the decision's condition of type t.
func (d Decision) condition(t autoscalingv2.HorizontalPodAutoscalerConditionType) (Condition, bool) {
	for _, c := range d.Conditions {
		if c.Type == t {
			return c, true
		}
	}
	return Condition{}, false
}

func TestReconcileBranches(t *testing.T) {
	cfg := DefaultConfig()
	t.Run("zero replicas disables scaling", func(t *testing.T) {
		d := Reconcile(cfg, reconcileAt(epoch(), 0, 0, 10, 5, nil, History{}))
		c, _ := d.condition(autoscalingv2.ScalingActive)
		if d.Rescale || d.DesiredReplicas != 0 || c.Reason != ReasonScalingDisabled || c.Status != v1.ConditionFalse || d.MetricStatuses != nil {
			t.Fatalf("got %+v", d)
		}
		if len(d.History.Recommendations) != 1 || d.History.Recommendations[0].Replicas != 0 {
			t.Fatalf("history not seeded: %+v", d.History)
		}
	})
	t.Run("above max clamps without metrics", func(t *testing.T) {
		d := Reconcile(cfg, reconcileAt(epoch(), 12, 1, 10, 50, nil, History{}))
		if !d.Rescale || d.DesiredReplicas != 10 || d.Reason != reasonAboveMax || len(d.Conditions) != 1 || d.MetricStatuses != nil {
			t.Fatalf("got %+v", d)
		}
	})
	t.Run("below min clamps without metrics", func(t *testing.T) {
		d := Reconcile(cfg, reconcileAt(epoch(), 2, 3, 10, 1, nil, History{}))
		if !d.Rescale || d.DesiredReplicas != 3 || d.Reason != reasonBelowMin || d.Conditions[0].Reason != ReasonSucceededGetScale {
			t.Fatalf("got %+v", d)
		}
	})
	t.Run("minReplicas defaults to 1", func(t *testing.T) {
		in := reconcileAt(epoch(), 4, 1, 10, 0, nil, History{Recommendations: recs(4, time.Hour)})
		in.Spec.MinReplicas = nil
		d := Reconcile(cfg, in)
		if d.DesiredReplicas != 1 || d.Reason != reasonBelow {
			t.Fatalf("got %+v", d)
		}
		if c, _ := d.condition(autoscalingv2.ScalingLimited); c.Reason != ReasonTooFewReplicas || c.Status != v1.ConditionTrue {
			t.Fatalf("limited %+v", c)
		}
	})
	t.Run("a negative proposal counts as 0", func(t *testing.T) {
		minR := int32(0)
		in := reconcileAt(epoch(), 4, 0, 10, 0, nil, History{Recommendations: recs(4, time.Hour)})
		in.Spec.MinReplicas = &minR
		in.Spec.Metrics = []autoscalingv2.MetricSpec{objValue("hits", 1000)}
		in.Data = []MetricData{{ObjectValue: -3000}}
		in.Pods = podsN(4, 1000)
		d := Reconcile(cfg, in)
		c, _ := d.condition(autoscalingv2.ScalingLimited)
		if d.MetricReplicas != -12 || d.DesiredReplicas != 0 || c.Reason != ReasonDesiredWithinRange || c.Status != v1.ConditionFalse {
			t.Fatalf("got %+v", d)
		}
		if last := d.History.Recommendations[len(d.History.Recommendations)-1]; last.Replicas != 0 {
			t.Fatalf("stored %d, want 0", last.Replicas)
		}
	})
	t.Run("failed metrics: no decision", func(t *testing.T) {
		in := reconcileAt(epoch(), 4, 1, 10, 1, nil, History{})
		in.Data[0].Err = errDown
		d := Reconcile(cfg, in)
		c, _ := d.condition(autoscalingv2.ScalingActive)
		if d.Rescale || d.DesiredReplicas != -1 || c.Reason != ReasonFailedGetExternalMetric || d.Err == nil || len(d.MetricStatuses) != 1 {
			t.Fatalf("got %+v", d)
		}
		if _, ok := d.condition(autoscalingv2.ScalingLimited); ok {
			t.Fatal("ScalingLimited must not be set without a decision")
		}
	})
}

// TestReconcileSeedHoldsScaleDown: a new autoscaler seeds {current, now} and
// so does not scale down within the downscale window, but scales up at once.
func TestReconcileSeedHoldsScaleDown(t *testing.T) {
	cfg := DefaultConfig()
	d := Reconcile(cfg, reconcileAt(epoch(), 6, 1, 20, 2, nil, History{}))
	if d.Rescale || d.DesiredReplicas != 6 || d.Reason != reasonBelow {
		t.Fatalf("first sync scaled down: %+v", d)
	}
	if c, _ := d.condition(autoscalingv2.AbleToScale); c.Reason != ReasonScaleDownStabilized {
		t.Fatalf("AbleToScale %+v", c)
	}
	h := d.History
	d = Reconcile(cfg, reconcileAt(at(4*time.Minute), 6, 1, 20, 2, nil, h))
	if d.Rescale {
		t.Fatalf("scaled down inside the window: %+v", d)
	}
	d = Reconcile(cfg, reconcileAt(at(5*time.Minute+time.Second), 6, 1, 20, 2, nil, d.History))
	if !d.Rescale || d.DesiredReplicas != 2 {
		t.Fatalf("did not scale down after the window: %+v", d)
	}
	d = Reconcile(cfg, reconcileAt(epoch(), 6, 1, 20, 9, nil, History{}))
	if !d.Rescale || d.DesiredReplicas != 9 || d.Reason != "external metric queue(nil) above target" {
		t.Fatalf("fresh scale-up: %+v", d)
	}
	wantOrder := []autoscalingv2.HorizontalPodAutoscalerConditionType{autoscalingv2.AbleToScale, autoscalingv2.ScalingActive, autoscalingv2.ScalingLimited}
	for i, c := range d.Conditions {
		if c.Type != wantOrder[i] {
			t.Fatalf("condition order %v", d.Conditions)
		}
	}
}

// TestReconcileBehaviorScenario replays the doc's 80 -> 10 example across
// syncs, recording scale events and persisting the history through JSON.
func TestReconcileBehaviorScenario(t *testing.T) {
	cfg := DefaultConfig()
	zero := int32(0)
	b := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: rules(4, 60, 10, 60, 0)}
	b.ScaleDown.StabilizationWindowSeconds = &zero
	steps := []struct {
		after   time.Duration
		current int32
		want    int32
	}{
		{0, 80, 72},
		{30 * time.Second, 72, 72},
		{61 * time.Second, 72, 64},
		{90 * time.Second, 64, 64},
		{122 * time.Second, 64, 57}, // min(60, int32(64*0.9)=57)
	}
	var h History
	for _, s := range steps {
		d := Reconcile(cfg, reconcileAt(at(s.after), s.current, 1, 100, 10, b, h))
		if d.DesiredReplicas != s.want || d.Rescale != (s.want != s.current) {
			t.Fatalf("at +%v from %d: got %d (rescale %v), want %d", s.after, s.current, d.DesiredReplicas, d.Rescale, s.want)
		}
		if c, _ := d.condition(autoscalingv2.ScalingLimited); c.Reason != ReasonScaleDownLimit || c.Status != v1.ConditionTrue {
			t.Fatalf("at +%v: ScalingLimited %+v", s.after, c)
		}
		h = d.History
		if d.Rescale {
			h = RecordScaleEvent(h, b, s.current, d.DesiredReplicas, at(s.after))
		}
		h = roundTrip(t, h)
	}
	// Each event was older than the 60s period when the next was stored, so
	// it was reused: one entry remains.
	if len(h.ScaleDownEvents) != 1 || h.ScaleDownEvents[0].ReplicaChange != 7 || h.ScaleUpEvents != nil {
		t.Fatalf("events %+v", h)
	}
}

// roundTrip passes a history through JSON and requires it unchanged.
func roundTrip(t *testing.T, h History) History {
	t.Helper()
	raw, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var back History
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if !historiesEqual(h, back) {
		t.Fatalf("history changed through JSON:\n%+v\n%+v", h, back)
	}
	return back
}

// historiesEqual compares histories with time equality (not location).
func historiesEqual(a, b History) bool {
	if !equalRecs(a.Recommendations, b.Recommendations) || len(a.ScaleUpEvents) != len(b.ScaleUpEvents) || len(a.ScaleDownEvents) != len(b.ScaleDownEvents) {
		return false
	}
	same := func(x, y []ScaleEvent) bool {
		for i := range x {
			if x[i].ReplicaChange != y[i].ReplicaChange || x[i].Outdated != y[i].Outdated || !x[i].Timestamp.Equal(&y[i].Timestamp) {
				return false
			}
		}
		return true
	}
	return same(a.ScaleUpEvents, b.ScaleUpEvents) && same(a.ScaleDownEvents, b.ScaleDownEvents)
}

func TestApplyConditions(t *testing.T) {
	old := metav1.NewTime(at(-time.Hour))
	list := []autoscalingv2.HorizontalPodAutoscalerCondition{
		{Type: autoscalingv2.ScalingActive, Status: v1.ConditionTrue, Reason: "x", LastTransitionTime: old},
		{Type: autoscalingv2.AbleToScale, Status: v1.ConditionTrue, Reason: "y", LastTransitionTime: old},
	}
	now := metav1.NewTime(epoch())
	out := ApplyConditions(list, []Condition{
		{autoscalingv2.AbleToScale, v1.ConditionTrue, ReasonReadyForNewScale, "m1"},
		{autoscalingv2.ScalingActive, v1.ConditionFalse, ReasonFailedGetPodsMetric, "m2"},
		{autoscalingv2.ScalingLimited, v1.ConditionFalse, ReasonDesiredWithinRange, "m3"},
	}, now)
	want := []autoscalingv2.HorizontalPodAutoscalerCondition{
		{Type: autoscalingv2.ScalingActive, Status: v1.ConditionFalse, Reason: ReasonFailedGetPodsMetric, Message: "m2", LastTransitionTime: now},
		{Type: autoscalingv2.AbleToScale, Status: v1.ConditionTrue, Reason: ReasonReadyForNewScale, Message: "m1", LastTransitionTime: old},
		{Type: autoscalingv2.ScalingLimited, Status: v1.ConditionFalse, Reason: ReasonDesiredWithinRange, Message: "m3", LastTransitionTime: now},
	}
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("got %+v\nwant %+v", out, want)
	}
	if list[0].Reason != "x" {
		t.Fatal("input conditions were modified")
	}
	if c := SucceededRescaleCondition(7); c.Message != "the HPA controller was able to update the target scale to 7" || c.Status != v1.ConditionTrue {
		t.Fatalf("%+v", c)
	}
}
