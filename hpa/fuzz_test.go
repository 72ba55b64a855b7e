package hpa

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Fuzz targets: the calculation must answer every input the API accepts,
// and answer it within its bounds. `go test` runs their seeds; run one with
// `go test ./hpa -run '^$' -fuzz '^FuzzReconcile$' -fuzztime 1m`.

// maxFuzzExponent bounds the decimal exponent of fuzzed quantities: the
// quantity parser itself (apimachinery's, in the API server too) takes
// time in proportion to a negative exponent's size.
const maxFuzzExponent = 10000

// fuzzQuantity parses s as the API server would, or reports false.
func fuzzQuantity(s string) (*resource.Quantity, bool) {
	if s == "" || len(s) > 64 {
		return nil, false
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 && i+1 < len(s) {
		var exp float64
		if err := json.Unmarshal([]byte(strings.TrimPrefix(s[i+1:], "+")), &exp); err != nil || math.Abs(exp) > maxFuzzExponent {
			return nil, false
		}
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return nil, false
	}
	return &q, true
}

// FuzzWatermarkReplicas: for any quantities and settings, the answer is
// that of rational arithmetic, and a count in [0, MaxInt32].
func FuzzWatermarkReplicas(f *testing.F) {
	f.Add("10P", "", int32(-1), int32(-1), int32(-1), int32(-1), int32(5), int64(math.MaxInt64))
	f.Add("1e18", "1n", int32(-1), int32(-1), int32(math.MaxInt32), int32(-1), int32(5), int64(1))
	f.Add("1200m", "400m", int32(1), int32(1), int32(20), int32(10), int32(5), int64(1500))
	f.Add("90", "40", int32(0), int32(100), int32(-1), int32(100), int32(math.MaxInt32), int64(-1))
	f.Add("1Ei", "1e-7", int32(100), int32(0), int32(0), int32(0), int32(1), int64(math.MinInt64))
	f.Fuzz(func(t *testing.T, high, low string, highTol, lowTol, up, down, current int32, value int64) {
		w := Watermarks{}
		w.High, _ = fuzzQuantity(high)
		w.Low, _ = fuzzQuantity(low)
		for _, f := range []struct {
			dst **int32
			v   int32
		}{{&w.HighTolerancePercent, highTol}, {&w.LowTolerancePercent, lowTol}, {&w.MaxScaleUpPercent, up}, {&w.MaxScaleDownPercent, down}} {
			if f.v >= 0 {
				*f.dst = int32p(f.v)
			}
		}
		current = max(current, 1)
		got, err := WatermarkReplicas(current, value, &w, 1, math.MaxInt32)
		if err != nil {
			if len(w.Validate(nil)) == 0 {
				t.Fatalf("valid watermarks %+v rejected: %v", w, err)
			}
			return
		}
		if got < 0 {
			t.Fatalf("negative count %d", got)
		}
		if want := ratWatermark(current, value, &w, 1, math.MaxInt32); got != want {
			t.Fatalf("high %v low %v, current %d, value %dm: got %d, rational arithmetic %d", w.High, w.Low, current, value, got, want)
		}
	})
}

// fuzzNow is the fuzz targets' sync time, off a whole second.
func fuzzNow() time.Time { return epoch().Add(700 * time.Millisecond) }

// FuzzReconcile: a sync of any spec (bounds, metrics, behavior as JSON),
// any watermarks and history (as the annotations hold them), any replica
// counts and metric values never panics; when it decides, the count lies
// within [minReplicas, maxReplicas] of a valid spec; the status has one
// condition per type; the history survives JSON.
func FuzzReconcile(f *testing.F) {
	ext := `{"maxReplicas":10,"metrics":[{"type":"External","external":{"metric":{"name":"q"},"target":{"type":"AverageValue","averageValue":"10"}}}]`
	f.Add(ext+`,"behavior":{"scaleDown":{"stabilizationWindowSeconds":60}}}`, ``, ``, int32(1), int32(1), int64(30000), int64(0), uint8(0))
	f.Add(ext+`}`, ``, ``, int32(4), int32(4), int64(10000), int64(0), uint8(0))
	f.Add(`{"maxReplicas":20,"metrics":[{"type":"Object","object":{"describedObject":{"kind":"Service","name":"web"},"metric":{"name":"m"},"target":{"type":"AverageValue","averageValue":"1"}}}]}`,
		``, ``, int32(10), int32(10), int64(-1000), int64(0), uint8(0))
	f.Add(`{"minReplicas":2,"maxReplicas":20,"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":50}}},`+
		`{"type":"Pods","pods":{"metric":{"name":"p"},"target":{"type":"AverageValue","averageValue":"100m"}}}],`+
		`"behavior":{"scaleUp":{"selectPolicy":"Min","policies":[{"type":"Percent","value":2147483647,"periodSeconds":1}]},"scaleDown":{"tolerance":"1e100","policies":[{"type":"Pods","value":-5,"periodSeconds":0}]}}}`,
		`[{"high":"10P"},{"high":"1e18","low":"1n","maxScaleUpPercent":2147483647}]`,
		`{"recommendations":[{"replicas":-4,"timestamp":"2099-01-01T00:00:00Z"}],"scaleUpEvents":[{"replicaChange":2147483647,"timestamp":"2026-03-01T11:59:59Z"}]}`,
		int32(5), int32(0), int64(math.MaxInt64), int64(math.MinInt64), uint8(2))
	f.Add(`{"maxReplicas":3,"metrics":[{"type":"External","external":{"metric":{"name":"q"},"target":{"type":"Value","value":"0"}}}]}`,
		`[{"low":"1e100000","lowTolerancePercent":0}]`, ``, int32(2147483647), int32(-3), int64(1), int64(2), uint8(1))
	f.Fuzz(func(t *testing.T, specJSON, marksJSON, historyJSON string, current, statusReplicas int32, v1, v2 int64, failMask uint8) {
		var spec autoscalingv2.HorizontalPodAutoscalerSpec
		if json.Unmarshal([]byte(specJSON), &spec) != nil || len(spec.Metrics) > 8 {
			return
		}
		var marks []*Watermarks
		_ = json.Unmarshal([]byte(marksJSON), &marks)
		h := persisted(historyJSON)
		in := ReconcileInput{
			Spec: DefaultSpec(spec), Watermarks: marks, History: h,
			Snapshot: Snapshot{Now: fuzzNow(), SpecReplicas: current, StatusReplicas: statusReplicas, Pods: podsN(min(max(int(current), 0), 5), 500)},
		}
		for i := range in.Spec.Metrics {
			d := MetricData{ObjectValue: v1, ExternalValues: []int64{v1, v2}, PodMetrics: uniform(in.Pods, v2), Timestamp: fuzzNow().Add(-30 * time.Second)}
			if failMask&(1<<i) != 0 {
				d.Err = errDown
			}
			in.Data = append(in.Data, d)
		}
		d := Reconcile(DefaultConfig(), in)
		checkDecision(t, in, d)
	})
}

// persisted is the history an annotation holds, as tidal reads it after
// writing it: timestamps in whole seconds, as metav1.Time encodes them.
func persisted(raw string) History {
	var h History
	_ = json.Unmarshal([]byte(raw), &h)
	b, _ := json.Marshal(h)
	h = History{}
	_ = json.Unmarshal(b, &h)
	return h
}

// checkDecision asserts what holds for every decision.
func checkDecision(t *testing.T, in ReconcileInput, d Decision) {
	t.Helper()
	minR := specMinReplicas(in.Spec)
	if d.DesiredReplicas != -1 && in.SpecReplicas > 0 && 1 <= minR && minR <= in.Spec.MaxReplicas &&
		(d.DesiredReplicas < minR || d.DesiredReplicas > in.Spec.MaxReplicas) {
		t.Fatalf("desired %d outside [%d, %d] (current %d)", d.DesiredReplicas, minR, in.Spec.MaxReplicas, in.SpecReplicas)
	}
	if d.DesiredReplicas != -1 && d.Rescale != (d.DesiredReplicas != in.SpecReplicas) {
		t.Fatalf("rescale %v for %d -> %d", d.Rescale, in.SpecReplicas, d.DesiredReplicas)
	}
	st := d.Status(autoscalingv2.HorizontalPodAutoscalerStatus{}, in.SpecReplicas, in.Now, nil)
	seen := map[autoscalingv2.HorizontalPodAutoscalerConditionType]bool{}
	for _, c := range st.Conditions {
		if seen[c.Type] || c.Reason == "" {
			t.Fatalf("conditions %+v", st.Conditions)
		}
		seen[c.Type] = true
	}
	b, err := json.Marshal(d.History)
	if err != nil {
		t.Fatalf("history does not encode: %v", err)
	}
	var back History
	if err := json.Unmarshal(b, &back); err != nil || !historiesEqual(back, d.History) {
		t.Fatalf("history %s does not survive JSON: %v", b, err)
	}
}

// FuzzReconcileNumbers explores the numbers of one sync directly: bounds,
// windows, policies, tolerance, a metric of each kind with any target and
// value, a history entry of any age and size, and watermarks.
func FuzzReconcileNumbers(f *testing.F) {
	f.Add(int32(1), int32(1), int32(10), int32(-1), int32(60), uint8(0), uint8(0), int32(4), int32(15), "", uint8(0), "10", int64(30000), int32(0), int32(-1), int32(0), int32(0), "", "")
	f.Add(int32(10), int32(1), int32(20), int32(0), int32(0), uint8(3), uint8(3), int32(100), int32(15), "0.1", uint8(3), "1", int64(-1000), int32(10), int32(5), int32(2), int32(3), "", "")
	f.Add(int32(4), int32(1), int32(10), int32(math.MaxInt32), int32(math.MinInt32), uint8(1), uint8(2), int32(math.MaxInt32), int32(math.MinInt32), "1e100", uint8(5), "1n", int64(math.MaxInt64), int32(math.MaxInt32), int32(-60), int32(math.MaxInt32), int32(1), "10P", "")
	f.Add(int32(math.MaxInt32), int32(0), int32(math.MaxInt32), int32(-5), int32(3600), uint8(2), uint8(1), int32(-7), int32(0), "-0.5", uint8(6), "0", int64(math.MinInt64), int32(math.MinInt32), int32(0), int32(math.MinInt32), int32(-1), "1e18", "1n")
	f.Fuzz(func(t *testing.T, current, minR, maxR, upWindow, downWindow int32, upSel, downSel uint8, value32, period int32,
		tolerance string, kind uint8, target string, value int64, recReplicas, recAge, change, changeAge int32, high, low string) {
		sels := []autoscalingv2.ScalingPolicySelect{autoscalingv2.MaxChangePolicySelect, autoscalingv2.MinChangePolicySelect, autoscalingv2.DisabledPolicySelect, ""}
		rules := func(window int32, sel uint8, typ autoscalingv2.HPAScalingPolicyType) *autoscalingv2.HPAScalingRules {
			r := &autoscalingv2.HPAScalingRules{SelectPolicy: &sels[int(sel)%len(sels)],
				Policies: []autoscalingv2.HPAScalingPolicy{{Type: typ, Value: value32, PeriodSeconds: period}}}
			if window >= -1 {
				r.StabilizationWindowSeconds = &window
			}
			if q, ok := fuzzQuantity(tolerance); ok {
				r.Tolerance = q
			}
			return r
		}
		spec := autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: &minR, MaxReplicas: maxR}
		if upWindow != -1 || downWindow != -1 {
			spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: rules(upWindow, upSel, autoscalingv2.PercentScalingPolicy), ScaleDown: rules(downWindow, downSel, autoscalingv2.PodsScalingPolicy)}
		}
		tq, ok := fuzzQuantity(target)
		if !ok {
			return
		}
		spec.Metrics = []autoscalingv2.MetricSpec{fuzzMetric(kind, tq)}
		var w Watermarks
		w.High, _ = fuzzQuantity(high)
		w.Low, _ = fuzzQuantity(low)
		var marks []*Watermarks
		if w.High != nil || w.Low != nil {
			marks = []*Watermarks{&w}
		}
		now := fuzzNow()
		h := History{
			Recommendations: []Recommendation{{Replicas: recReplicas, Timestamp: stamp(now.Add(-time.Duration(recAge) * time.Second))}},
			ScaleUpEvents:   []ScaleEvent{{ReplicaChange: change, Timestamp: stamp(now.Add(-time.Duration(changeAge) * time.Second))}},
			ScaleDownEvents: []ScaleEvent{{ReplicaChange: -change, Timestamp: stamp(now.Add(-time.Duration(changeAge) * time.Second))}},
		}
		pods := podsN(min(max(int(current), 0), 5), 500)
		in := ReconcileInput{
			Spec: DefaultSpec(spec), Watermarks: marks, History: h,
			Snapshot: Snapshot{Now: now, SpecReplicas: current, StatusReplicas: current, Pods: pods},
			Data:     []MetricData{{ObjectValue: value, ExternalValues: []int64{value}, PodMetrics: uniform(pods, value), Timestamp: now.Add(-30 * time.Second)}},
		}
		checkDecision(t, in, Reconcile(DefaultConfig(), in))
	})
}

// fuzzMetric is a metric of one of seven kinds with target q.
func fuzzMetric(kind uint8, q *resource.Quantity) autoscalingv2.MetricSpec {
	util := int32(q.Value())
	id := autoscalingv2.MetricIdentifier{Name: "m"}
	avg := autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q}
	val := autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: q}
	obj := autoscalingv2.CrossVersionObjectReference{Kind: "Service", Name: "svc"}
	switch kind % 7 {
	case 0:
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{Metric: id, Target: avg}}
	case 1:
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{Metric: id, Target: val}}
	case 2:
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{DescribedObject: obj, Metric: id, Target: val}}
	case 3:
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{DescribedObject: obj, Metric: id, Target: avg}}
	case 4:
		return autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{Metric: id, Target: avg}}
	case 5:
		return cpuUtil(util)
	}
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: "memory", Target: avg}}
}
