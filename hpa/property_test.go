package hpa

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Property tests: seeded random inputs, invariants that must always hold.

const propertyCases = 4000

// randomRules returns random scaling rules, or nil.
func (g *gen) randomRules() *autoscalingv2.HPAScalingRules {
	if g.chance(0.3) {
		return nil
	}
	sels := []autoscalingv2.ScalingPolicySelect{autoscalingv2.MaxChangePolicySelect, autoscalingv2.MinChangePolicySelect, autoscalingv2.DisabledPolicySelect}
	r := &autoscalingv2.HPAScalingRules{}
	if g.chance(0.7) {
		r.SelectPolicy = &sels[g.r.IntN(3)]
	}
	if g.chance(0.7) {
		w := int32(g.between(0, 600))
		r.StabilizationWindowSeconds = &w
	}
	for range g.between(0, 3) {
		typ := autoscalingv2.PodsScalingPolicy
		if g.chance(0.5) {
			typ = autoscalingv2.PercentScalingPolicy
		}
		r.Policies = append(r.Policies, autoscalingv2.HPAScalingPolicy{Type: typ, Value: int32(g.between(1, 300)), PeriodSeconds: int32(g.between(1, 1800))})
	}
	return r
}

// randomHistory returns a random history with second-aligned times.
func (g *gen) randomHistory() History {
	var h History
	for range g.between(0, 6) {
		h.Recommendations = append(h.Recommendations, Recommendation{Replicas: int32(g.between(0, 60)), Timestamp: metav1.NewTime(g.ago(0, 1200))})
	}
	for range g.between(0, 4) {
		h.ScaleUpEvents = append(h.ScaleUpEvents, ScaleEvent{ReplicaChange: int32(g.between(1, 20)), Timestamp: metav1.NewTime(g.ago(0, 1200)), Outdated: g.chance(0.2)})
	}
	for range g.between(0, 4) {
		h.ScaleDownEvents = append(h.ScaleDownEvents, ScaleEvent{ReplicaChange: int32(g.between(1, 20)), Timestamp: metav1.NewTime(g.ago(0, 1200)), Outdated: g.chance(0.2)})
	}
	return h
}

// randomReconcile returns a random autoscaler sync: 1-3 metrics of random
// kinds with random data, some failing, random bounds, behavior and history.
func (g *gen) randomReconcile() ReconcileInput {
	minR := int32(g.between(0, 5))
	maxR := minR + int32(g.between(0, 40))
	if maxR == 0 {
		maxR = 1
	}
	current := int32(g.between(0, int(maxR)+5))
	if g.chance(0.7) { // mostly inside the range, where metrics decide
		current = minR + int32(g.between(0, int(maxR-minR)))
		current = max(current, 1)
	}
	pods := g.pods(int(current), podShape{resource: v1.ResourceCPU, requests: true, sidecars: true})
	in := ReconcileInput{
		Spec:     autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: &minR, MaxReplicas: maxR},
		History:  g.randomHistory(),
		Snapshot: Snapshot{Now: g.now, SpecReplicas: current, StatusReplicas: int32(g.between(0, int(current)+2)), Pods: pods},
	}
	if g.chance(0.5) {
		in.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: g.randomRules(), ScaleDown: g.randomRules()}
	}
	for i := range g.between(1, 3) {
		kind := diffKinds[g.r.IntN(len(diffKinds))]
		c := diffCase{kind: kind, resource: v1.ResourceCPU, container: "c0", target: int64(g.between(1, 2500))}
		if kind == "utilization" || kind == "containerUtilization" {
			c.target = int64(g.between(10, 150))
		}
		in.Spec.Metrics = append(in.Spec.Metrics, c.spec())
		d := MetricData{PodMetrics: g.podMetrics(pods, 3000), ObjectValue: int64(g.between(0, 40000)), ExternalValues: g.values(20000), Timestamp: g.ago(0, 60)}
		if g.chance(0.15) {
			d.Err = fmt.Errorf("fetch %d failed", i)
		}
		in.Data = append(in.Data, d)
		var w *Watermarks
		if g.chance(0.2) {
			w = &Watermarks{High: qp("2"), Low: qp("500m"), MaxScaleUpPercent: int32p(int32(g.between(0, 100)))}
		}
		in.Watermarks = append(in.Watermarks, w)
	}
	return in
}

// TestPropertyBounds: whenever a decision is made for a running target, it
// lies in [min, max].
func TestPropertyBounds(t *testing.T) {
	decided := 0
	for i := range propertyCases {
		in := newGen(uint64(i), epoch()).randomReconcile()
		d := Reconcile(DefaultConfig(), in)
		if in.SpecReplicas == 0 || d.DesiredReplicas == -1 {
			continue
		}
		decided++
		if d.DesiredReplicas < *in.Spec.MinReplicas || d.DesiredReplicas > in.Spec.MaxReplicas {
			t.Fatalf("seed %d: desired %d outside [%d, %d]", i, d.DesiredReplicas, *in.Spec.MinReplicas, in.Spec.MaxReplicas)
		}
		if d.Rescale != (d.DesiredReplicas != in.SpecReplicas) {
			t.Fatalf("seed %d: rescale %v for %d -> %d", i, d.Rescale, in.SpecReplicas, d.DesiredReplicas)
		}
	}
	if decided < propertyCases/2 {
		t.Fatalf("only %d decisions in %d cases", decided, propertyCases)
	}
}

// TestPropertyNoScaleDownOnInvalidMetric: with a target inside [min, max],
// if any metric is invalid the sync never lowers the replica count: it
// either makes no decision (-1, no rescale) or keeps or raises the count.
func TestPropertyNoScaleDownOnInvalidMetric(t *testing.T) {
	checked, blocked := 0, 0
	for i := range propertyCases {
		in := newGen(uint64(i)+1e6, epoch()).randomReconcile()
		in.Data[len(in.Data)-1].Err = errDown
		if in.SpecReplicas == 0 || in.SpecReplicas < *in.Spec.MinReplicas || in.SpecReplicas > in.Spec.MaxReplicas {
			continue
		}
		checked++
		d := Reconcile(DefaultConfig(), in)
		if d.DesiredReplicas == -1 {
			blocked++
			if d.Rescale {
				t.Fatalf("seed %d: rescale without a decision", i)
			}
			continue
		}
		if d.DesiredReplicas < in.SpecReplicas || d.Err == nil {
			t.Fatalf("seed %d: %d -> %d with an invalid metric (err %v)", i, in.SpecReplicas, d.DesiredReplicas, d.Err)
		}
	}
	if checked < propertyCases/2 || blocked == 0 {
		t.Fatalf("weak run: %d checked, %d blocked", checked, blocked)
	}
}

// TestPropertyStabilizationWithBehavior: with behavior, the stabilized count
// equals current clamped into [min of proposal and recommendations newer than
// the up window, max of proposal and recommendations newer than the down
// window]. Hence it always lies between current and the proposal: it never
// turns a scale-down into a scale-up or overshoots the proposal, and when the
// proposal and every recommendation in the down window are below current the
// result is below current.
func TestPropertyStabilizationWithBehavior(t *testing.T) {
	for i := range propertyCases {
		g := newGen(uint64(i)+2e6, epoch())
		h := g.randomHistory()
		current, proposal := int32(g.between(0, 60)), int32(g.between(0, 60))
		upW, downW := time.Duration(g.between(0, 600))*time.Second, time.Duration(g.between(0, 900))*time.Second
		got, log := StabilizeWithBehavior(h.Recommendations, current, proposal, upW, downW, g.now)
		lo, hi := proposal, proposal
		allBelow := proposal < current
		for _, r := range h.Recommendations {
			age := g.now.Sub(r.Timestamp.Time)
			if age < upW {
				lo = min(lo, r.Replicas)
			}
			if age < downW {
				hi = max(hi, r.Replicas)
				allBelow = allBelow && r.Replicas < current
			}
		}
		if want := min(max(current, lo), hi); got != want {
			t.Fatalf("seed %d: got %d, want clamp(%d, %d, %d) = %d", i, got, current, lo, hi, want)
		}
		if got < min(current, proposal) || got > max(current, proposal) {
			t.Fatalf("seed %d: %d is not between current %d and proposal %d", i, got, current, proposal)
		}
		if allBelow && got >= current {
			t.Fatalf("seed %d: every recent recommendation below %d, yet %d", i, current, got)
		}
		if n := len(log) - len(h.Recommendations); (n != 0 && n != 1) || storedAt(log, proposal, g.now) != storedAt(h.Recommendations, proposal, g.now)+1 {
			t.Fatalf("seed %d: proposal not stored exactly once: %v", i, replicasOf(log))
		}
	}
}

// storedAt counts recommendations of p stamped at now.
func storedAt(log []Recommendation, p int32, now time.Time) int {
	n := 0
	for _, r := range log {
		if r.Replicas == p && r.Timestamp.Time.Equal(now) {
			n++
		}
	}
	return n
}

// TestPropertyLegacyStabilization: without behavior, the stabilized count is
// max(proposal, recommendations not older than the window). It exceeds
// current only if such a recommendation exceeds current (the legacy path has
// no "between current and proposal" guarantee).
func TestPropertyLegacyStabilization(t *testing.T) {
	raisedByHistory := 0
	for i := range propertyCases {
		g := newGen(uint64(i)+3e6, epoch())
		h := g.randomHistory()
		current, proposal := int32(g.between(0, 60)), int32(g.between(0, 60))
		window := time.Duration(g.between(0, 900)) * time.Second
		got, _ := Stabilize(h.Recommendations, proposal, window, g.now)
		want, recentAbove := proposal, false
		for _, r := range h.Recommendations {
			if g.now.Sub(r.Timestamp.Time) <= window {
				want = max(want, r.Replicas)
				recentAbove = recentAbove || r.Replicas > current
			}
		}
		if got != want {
			t.Fatalf("seed %d: got %d, want %d", i, got, want)
		}
		if proposal <= current && got > current {
			if !recentAbove {
				t.Fatalf("seed %d: raised %d above current %d without a recent higher recommendation", i, got, current)
			}
			raisedByHistory++
		}
	}
	if raisedByHistory == 0 {
		t.Fatal("the generator never exercised a history-driven raise")
	}
}

// TestPropertyWatermarks: above the widened high watermark the proposal
// grows (at most to the step limit), below the widened low watermark it
// shrinks (at least to the step floor), in between it is current; and the
// proposal never decreases as the value increases.
func TestPropertyWatermarks(t *testing.T) {
	for i := range propertyCases {
		g := newGen(uint64(i)+4e6, epoch())
		current := int32(g.between(1, 200))
		low := int64(g.between(1, 5000))
		high := low + int64(g.between(0, 5000))
		w := &Watermarks{High: milliQp(high), Low: milliQp(low), MaxScaleUpPercent: int32p(int32(g.between(0, 200))), MaxScaleDownPercent: int32p(int32(g.between(0, 100)))}
		if g.chance(0.3) {
			w.MaxScaleUpPercent, w.MaxScaleDownPercent = nil, nil
		}
		minR, maxR := int32(g.between(0, int(current))), current+int32(g.between(0, 300))
		prev := int32(-1)
		for v := int64(0); v <= 2*high+100; v += int64(g.between(1, 97)) {
			got, err := WatermarkReplicas(current, v, w, minR, maxR)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case v*100 > high*101:
				if got <= current && got != maxR || w.MaxScaleUpPercent != nil && got > ScaleUpStep(current, *w.MaxScaleUpPercent, maxR) {
					t.Fatalf("seed %d: above high: %d -> %d at %d (high %d)", i, current, got, v, high)
				}
			case v*100 < low*99:
				if got >= current && got != minR || w.MaxScaleDownPercent != nil && got < ScaleDownStep(current, *w.MaxScaleDownPercent, minR) {
					t.Fatalf("seed %d: below low: %d -> %d at %d (low %d)", i, current, got, v, low)
				}
			default:
				if got != current {
					t.Fatalf("seed %d: inside the band: %d -> %d", i, current, got)
				}
			}
			if got < prev {
				t.Fatalf("seed %d: proposal fell from %d to %d as the value rose to %d", i, prev, got, v)
			}
			prev = got
		}
	}
}

func milliQp(v int64) *resource.Quantity { q := milliQ(v); return &q }

// TestPropertyPureAndPersistable: Reconcile never modifies its input, and the
// history it returns survives JSON unchanged and yields the same decision
// when used again.
func TestPropertyPureAndPersistable(t *testing.T) {
	for i := range propertyCases / 4 {
		g := newGen(uint64(i)+5e6, epoch())
		in := g.randomReconcile()
		snapshot := deepCopyInput(in)
		d := Reconcile(DefaultConfig(), in)
		if !reflect.DeepEqual(snapshot, deepCopyInput(in)) || !historiesEqual(in.History, snapshot.History) {
			t.Fatalf("seed %d: Reconcile modified its input", i)
		}
		back := roundTrip(t, d.History)
		next := in
		next.History, next.Now = d.History, in.Now.Add(15*time.Second)
		again := next
		again.History = back
		d1, d2 := Reconcile(DefaultConfig(), next), Reconcile(DefaultConfig(), again)
		if d1.DesiredReplicas != d2.DesiredReplicas || !historiesEqual(d1.History, d2.History) {
			t.Fatalf("seed %d: persisted history changes the next decision", i)
		}
	}
}

// deepCopyInput copies the parts of an input Reconcile could modify.
func deepCopyInput(in ReconcileInput) ReconcileInput {
	out := in
	out.Spec = *in.Spec.DeepCopy()
	out.History = *in.History.DeepCopy()
	out.Pods = make([]*v1.Pod, len(in.Pods))
	for i, p := range in.Pods {
		out.Pods[i] = p.DeepCopy()
	}
	out.Data = make([]MetricData, len(in.Data))
	for i, d := range in.Data {
		d.ExternalValues = append([]int64(nil), d.ExternalValues...)
		m := PodMetrics{}
		for k, v := range d.PodMetrics {
			m[k] = v
		}
		d.PodMetrics = m
		out.Data[i] = d
	}
	return out
}

// TestHistoryJSONShape pins the persisted field names.
func TestHistoryJSONShape(t *testing.T) {
	h := History{
		Recommendations: []Recommendation{{Replicas: 3, Timestamp: mtime(0)}},
		ScaleDownEvents: []ScaleEvent{{ReplicaChange: 2, Timestamp: mtime(-time.Minute), Outdated: true}},
	}
	raw, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"recommendations":[{"replicas":3,"timestamp":"2026-03-01T12:00:00Z"}],"scaleDownEvents":[{"replicaChange":2,"timestamp":"2026-03-01T11:59:00Z","outdated":true}]}`
	if string(raw) != want {
		t.Fatalf("got %s\nwant %s", raw, want)
	}
}
