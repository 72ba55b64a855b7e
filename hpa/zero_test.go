package hpa

import (
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func qty(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

// ext is an External Value metric with a target of 10.
func extValue10(name string) autoscalingv2.MetricSpec {
	q := resource.MustParse("10")
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: name}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: &q}}}
}

// series is External data whose series sum to v (in units).
func series(v ...float64) MetricData {
	var out []int64
	for _, x := range v {
		out = append(out, int64(x*1000))
	}
	return MetricData{ExternalValues: out}
}

func TestActivate(t *testing.T) {
	queue, other := extValue10("queue"), extValue10("other")
	object := objValue("rps", 5000)
	for _, tc := range []struct {
		name       string
		specs      []autoscalingv2.MetricSpec
		data       []MetricData
		thresholds []*resource.Quantity
		active     bool
		failures   int
	}{
		{name: "no threshold: zero is idle", specs: []autoscalingv2.MetricSpec{queue}, data: []MetricData{series(0)}},
		{name: "no threshold: above zero activates", specs: []autoscalingv2.MetricSpec{queue}, data: []MetricData{series(0.001)}, active: true},
		{name: "below the threshold", specs: []autoscalingv2.MetricSpec{queue}, data: []MetricData{series(4)}, thresholds: []*resource.Quantity{qty("5")}},
		{name: "at the threshold is idle", specs: []autoscalingv2.MetricSpec{queue}, data: []MetricData{series(5)}, thresholds: []*resource.Quantity{qty("5")}},
		{name: "above the threshold", specs: []autoscalingv2.MetricSpec{queue}, data: []MetricData{series(5.001)}, thresholds: []*resource.Quantity{qty("5")}, active: true},
		{name: "the series are summed", specs: []autoscalingv2.MetricSpec{queue}, data: []MetricData{series(3, 3)}, thresholds: []*resource.Quantity{qty("5")}, active: true},
		{name: "object metric", specs: []autoscalingv2.MetricSpec{object}, data: []MetricData{{ObjectValue: 1}}, active: true},
		{name: "read error is not idle", specs: []autoscalingv2.MetricSpec{queue}, data: []MetricData{{Err: errDown}}, failures: 1},
		{name: "no series is not idle", specs: []autoscalingv2.MetricSpec{queue}, data: []MetricData{{}}, failures: 1},
		{name: "missing data is not idle", specs: []autoscalingv2.MetricSpec{queue}, failures: 1},
		{name: "one of two above", specs: []autoscalingv2.MetricSpec{queue, other}, data: []MetricData{series(0), series(2)},
			thresholds: []*resource.Quantity{nil, qty("1")}, active: true},
		{name: "both idle", specs: []autoscalingv2.MetricSpec{queue, other}, data: []MetricData{series(0), series(1)},
			thresholds: []*resource.Quantity{nil, qty("1")}},
		{name: "one failed, the other above: active", specs: []autoscalingv2.MetricSpec{queue, other}, data: []MetricData{{Err: errDown}, series(2)},
			active: true, failures: 1},
		{name: "one failed, the other idle: unknown", specs: []autoscalingv2.MetricSpec{queue, other}, data: []MetricData{{Err: errDown}, series(0)}, failures: 1},
		{name: "cpu is not read", specs: []autoscalingv2.MetricSpec{cpuUtil(50), queue}, data: []MetricData{{Err: errDown}, series(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Activate(tc.specs, tc.data, tc.thresholds)
			if a.Active != tc.active || len(a.Failures) != tc.failures || (a.Err != nil) != (tc.failures > 0) {
				t.Fatalf("got %+v, want active %v with %d failures", a, tc.active, tc.failures)
			}
			if tc.failures > 0 && (a.Condition.Status != v1.ConditionFalse || a.Condition.Reason == "") {
				t.Fatalf("failure condition %+v", a.Condition)
			}
		})
	}
}

// zeroInput is a PodAutoscaler-like input with minReplicas 0 and one
// External Value metric (target 10, activation threshold 2).
func zeroInput(current int32, value float64, b *autoscalingv2.HorizontalPodAutoscalerBehavior, h History) ReconcileInput {
	zero := int32(0)
	return ReconcileInput{
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			MinReplicas: &zero, MaxReplicas: 10, Behavior: b, Metrics: []autoscalingv2.MetricSpec{extValue10("queue")},
		},
		History:     h,
		Snapshot:    Snapshot{Now: epoch(), SpecReplicas: current, StatusReplicas: current, Pods: podsN(int(current), 1000)},
		Data:        []MetricData{series(value)},
		Activation:  []*resource.Quantity{qty("2")},
		ScaleToZero: true,
	}
}

func TestReconcileAtZero(t *testing.T) {
	cfg := DefaultConfig()
	t.Run("idle stays at zero", func(t *testing.T) {
		d := Reconcile(cfg, zeroInput(0, 2, nil, History{}))
		c, _ := d.condition(autoscalingv2.ScalingActive)
		z, _ := d.condition(autoscalingv2.ScaledToZero)
		if d.Rescale || d.DesiredReplicas != 0 || c.Reason != ReasonBelowActivation || z.Status != v1.ConditionTrue {
			t.Fatalf("got %+v", d)
		}
		if d.MetricStatuses[0].External == nil || d.MetricStatuses[0].External.Current.Value.MilliValue() != 2000 {
			t.Fatalf("status %+v", d.MetricStatuses)
		}
	})
	t.Run("above activation: one replica at once", func(t *testing.T) {
		// 95 on a target of 10 would ask for 10 replicas: activation
		// writes 1, and the next sync calculates from there.
		d := Reconcile(cfg, zeroInput(0, 95, nil, History{}))
		if !d.Rescale || d.DesiredReplicas != 1 || !strings.Contains(d.Reason, "above its activation threshold") {
			t.Fatalf("got %+v", d)
		}
	})
	t.Run("activation ignores stabilization and policies", func(t *testing.T) {
		disabled := autoscalingv2.DisabledPolicySelect
		b := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: new(int32(600)), SelectPolicy: &disabled}}
		h := History{Recommendations: recs(0, time.Minute)}
		if d := Reconcile(cfg, zeroInput(0, 3, b, h)); !d.Rescale || d.DesiredReplicas != 1 {
			t.Fatalf("got %+v", d)
		}
	})
	t.Run("read error at zero: no decision, no write", func(t *testing.T) {
		in := zeroInput(0, 0, nil, History{})
		in.Data = []MetricData{{Err: errDown}}
		d := Reconcile(cfg, in)
		c, _ := d.condition(autoscalingv2.ScalingActive)
		if d.Rescale || d.DesiredReplicas != -1 || c.Status != v1.ConditionFalse || c.Reason != ReasonFailedGetExternalMetric || len(d.Failures) != 1 {
			t.Fatalf("got %+v", d)
		}
	})
	t.Run("without the opt-in: upstream's disabled scaling", func(t *testing.T) {
		in := zeroInput(0, 95, nil, History{})
		in.ScaleToZero = false
		d := Reconcile(cfg, in)
		if c, _ := d.condition(autoscalingv2.ScalingActive); d.Rescale || c.Reason != ReasonScalingDisabled {
			t.Fatalf("got %+v", d)
		}
	})
	t.Run("a schedule at zero raises to its minimum", func(t *testing.T) {
		in := zeroInput(0, 0, nil, History{})
		in.Floor = Floor{Replicas: 3, Windows: []string{"office"}}
		if d := Reconcile(cfg, in); !d.Rescale || d.DesiredReplicas != 3 || !strings.Contains(d.Reason, "office") {
			t.Fatalf("got %+v", d)
		}
	})
}

func TestReconcileActiveMayReturnToZero(t *testing.T) {
	cfg := DefaultConfig()
	fast := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: new(int32(0))}}
	t.Run("from one, the usual calculation runs", func(t *testing.T) {
		if d := Reconcile(cfg, zeroInput(1, 45, fast, History{Recommendations: recs(1, time.Hour)})); d.DesiredReplicas != 5 {
			t.Fatalf("got %+v", d)
		}
	})
	t.Run("idle: back to zero once stabilization allows", func(t *testing.T) {
		d := Reconcile(cfg, zeroInput(3, 1, fast, History{Recommendations: recs(3, time.Hour)}))
		if !d.Rescale || d.DesiredReplicas != 0 || d.Reason != reasonDeactivated {
			t.Fatalf("got %+v", d)
		}
	})
	t.Run("idle: held by the scale-down stabilization window", func(t *testing.T) {
		d := Reconcile(cfg, zeroInput(3, 1, nil, History{Recommendations: recs(3, time.Minute)}))
		if d.Rescale || d.DesiredReplicas != 3 {
			t.Fatalf("got %+v", d)
		}
	})
	t.Run("above activation but a small proposal: at least one", func(t *testing.T) {
		// 3 on a target of 10 from 1 replica is within... ceil(0.3) = 1;
		// from 2 replicas the proposal is 1: never 0 while active.
		in := zeroInput(2, 2.5, fast, History{Recommendations: recs(2, time.Hour)})
		in.Data = []MetricData{series(2.5)}
		if d := Reconcile(cfg, in); d.DesiredReplicas != 1 {
			t.Fatalf("got %+v", d)
		}
	})
	t.Run("a failed activation metric never reads as idle", func(t *testing.T) {
		in := zeroInput(2, 0, fast, History{Recommendations: recs(2, time.Hour)})
		in.Data = []MetricData{{Err: errDown}}
		if d := Reconcile(cfg, in); d.Rescale || d.DesiredReplicas != -1 {
			t.Fatalf("got %+v", d)
		}
	})
}
