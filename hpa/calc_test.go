package hpa

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podsN returns n ready pods p0.. requesting req milli-cpu each.
func podsN(n int, req int64, opts ...podOpt) []*v1.Pod {
	out := make([]*v1.Pod, n)
	for i := range out {
		out[i] = mkPod("p"+string(rune('0'+i)), req, opts...)
	}
	return out
}

// uniform returns samples of v for every pod.
func uniform(pods []*v1.Pod, v int64) PodMetrics {
	m := map[string]int64{}
	for _, p := range pods {
		m[p.Name] = v
	}
	return samples(m)
}

// TestUtilizationWorkedExamples covers the doc's utilization examples,
// including truncation to a whole percent before the tolerance check.
func TestUtilizationWorkedExamples(t *testing.T) {
	tests := []struct {
		name     string
		usage    int64 // per pod, request is 1000m
		target   int32
		want     int32
		wantUtil int32
		pods     int
	}{
		{"200m vs 100m doubles", 200, 10, 8, 20, 4},
		{"87% against 80% stays within tolerance", 870, 80, 4, 87, 4},
		{"88.9% truncates to 88%: 88/80 = 1.1 is within (inclusive)", 889, 80, 4, 88, 4},
		{"90% of 80% leaves the band", 900, 80, 5, 90, 4},
		{"scale down 40% of 80%", 400, 80, 2, 40, 4},
		{"90% of 100% is on the lower edge (inclusive)", 900, 100, 10, 90, 10},
		{"89% of 100% is outside", 890, 100, 9, 89, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.pods
			pods := podsN(n, 1000)
			p, err := ResourceUtilizationReplicas(podInputAt(int32(n), pods, uniform(pods, tc.usage)), v1.ResourceCPU, "", tc.target)
			if err != nil {
				t.Fatal(err)
			}
			if p.Replicas != tc.want || p.Utilization != tc.wantUtil || p.Value != tc.usage {
				t.Fatalf("got %+v, want replicas %d utilization %d value %d", p, tc.want, tc.wantUtil, tc.usage)
			}
		})
	}
}

// TestPlainWorkedExamples covers average-value targets: 200m against 100m
// doubles the pods; the average is an integer milli-value.
func TestPlainWorkedExamples(t *testing.T) {
	pods := podsN(3, 1000)
	p, err := PlainReplicas(podInputAt(3, pods, uniform(pods, 200)), "", 100)
	if err != nil || p.Replicas != 6 || p.Value != 200 {
		t.Fatalf("got %+v, %v; want 6 replicas at 200m", p, err)
	}
	// Integer average: (100+100+101)/3 = 100 exactly at target.
	m := samples(map[string]int64{"p0": 100, "p1": 100, "p2": 101})
	p, err = PlainReplicas(podInputAt(3, pods, m), "", 100)
	if err != nil || p.Replicas != 3 || p.Value != 100 {
		t.Fatalf("got %+v, %v; want 3 replicas at 100m", p, err)
	}
}

// TestFoldBackPortedRows ports upstream replica calculator rows (re-derived
// for production readiness defaults and one container per pod).
func TestFoldBackPortedRows(t *testing.T) {
	type row struct {
		name       string
		current    int32
		pods       []*v1.Pod
		metrics    map[string]int64
		target     int32
		want, util int32
		value      int64
	}
	tests := []row{
		{name: "ScaleUpUnreadyLessScale: unready counts 0 on a scale-up", current: 3,
			pods:    []*v1.Pod{mkPod("p0", 1000, neverReady()), mkPod("p1", 1000), mkPod("p2", 1000)},
			metrics: map[string]int64{"p0": 300, "p1": 500, "p2": 700}, target: 30, want: 4, util: 60, value: 600},
		{name: "MissingMetricsUnreadyChange: fold-back flips direction, keep current", current: 3,
			pods:    []*v1.Pod{mkPod("p0", 1000, neverReady()), mkPod("p1", 1000), mkPod("p2", 1000)},
			metrics: map[string]int64{"p0": 100, "p1": 450}, target: 50, want: 3, util: 45, value: 450},
		{name: "MissingMetricsUnreadyScaleUp", current: 3,
			pods:    []*v1.Pod{mkPod("p0", 1000, neverReady()), mkPod("p1", 1000), mkPod("p2", 1000)},
			metrics: map[string]int64{"p0": 100, "p1": 2000}, target: 50, want: 4, util: 200, value: 2000},
		{name: "MissingMetricsHotCpuScaleUp: within cpu initialisation and stale", current: 3,
			pods:    []*v1.Pod{mkPod("p0", 1000, startedAgo(time.Minute), readyAgo(10*time.Second)), mkPod("p1", 1000), mkPod("p2", 1000)},
			metrics: map[string]int64{"p0": 100, "p1": 2000}, target: 50, want: 4, util: 200, value: 2000},
		{name: "MissingMetricsUnreadyScaleDown: missing assumed at 100% of request", current: 4,
			pods:    []*v1.Pod{mkPod("p0", 1000, neverReady()), mkPod("p1", 1000), mkPod("p2", 1000), mkPod("p3", 1000)},
			metrics: map[string]int64{"p0": 100, "p1": 100, "p2": 100}, target: 50, want: 3, util: 10, value: 100},
		{name: "MissingMetricsScaleDownTargetOver100: missing assumed at the 300% target", current: 4,
			pods:    []*v1.Pod{mkPod("p0", 1000, neverReady()), mkPod("p1", 1000), mkPod("p2", 2000), mkPod("p3", 2000)},
			metrics: map[string]int64{"p0": 200, "p1": 100, "p2": 100}, target: 300, want: 2, util: 6, value: 100},
		{name: "DuringRollingUpdateWithMaxSurge: guard keeps current", current: 2,
			pods:    podsN(3, 1000),
			metrics: map[string]int64{"p0": 100, "p1": 100}, target: 50, want: 2, util: 10, value: 100},
		{name: "unready pods are not folded back on a scale-down", current: 4,
			pods:    []*v1.Pod{mkPod("p0", 1000, phase(v1.PodPending)), mkPod("p1", 1000), mkPod("p2", 1000), mkPod("p3", 1000)},
			metrics: map[string]int64{"p1": 100, "p2": 100, "p3": 100}, target: 50, want: 1, util: 10, value: 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ResourceUtilizationReplicas(podInputAt(tc.current, tc.pods, samples(tc.metrics)), v1.ResourceCPU, "", tc.target)
			if err != nil {
				t.Fatal(err)
			}
			if p.Replicas != tc.want || p.Utilization != tc.util || p.Value != tc.value {
				t.Fatalf("got %+v, want replicas %d utilization %d value %d", p, tc.want, tc.util, tc.value)
			}
		})
	}
}

// TestPlainFoldBack: missing pods sit exactly at the target on a scale-down,
// and the rolling-update guard applies to custom metrics too.
func TestPlainFoldBack(t *testing.T) {
	pods := podsN(3, 1000)
	// DuringRollingUpdateWithMaxSurgeCM: avg 10000 vs 17000; the missing pod
	// at 17000 gives avg 12333 -> ceil(0.725*3)=3 > 2: keep 2.
	p, err := PlainReplicas(podInputAt(2, pods, samples(map[string]int64{"p0": 10000, "p1": 10000})), "", 17000)
	if err != nil || p.Replicas != 2 || p.Value != 10000 {
		t.Fatalf("got %+v, %v; want 2 replicas at 10000m", p, err)
	}
	// Four pods, one missing, avg 1000 vs 4000: (3000+4000)/4=1750 -> ceil(0.4375*4)=2.
	pods = podsN(4, 1000)
	p, err = PlainReplicas(podInputAt(4, pods, samples(map[string]int64{"p0": 1000, "p1": 1000, "p2": 1000})), "", 4000)
	if err != nil || p.Replicas != 2 {
		t.Fatalf("got %+v, %v; want 2", p, err)
	}
	// Custom metrics ignore readiness: a Ready=False running pod still counts.
	pods = []*v1.Pod{mkPod("p0", 1000, neverReady()), mkPod("p1", 1000)}
	p, err = PlainReplicas(podInputAt(2, pods, samples(map[string]int64{"p0": 400, "p1": 400})), "", 100)
	if err != nil || p.Replicas != 8 {
		t.Fatalf("custom metric with an unready pod: got %+v, %v; want 8", p, err)
	}
}

// TestGroupPods checks the classification rules, cpu readiness included.
func TestGroupPods(t *testing.T) {
	tests := []struct {
		name     string
		pod      *v1.Pod
		resource v1.ResourceName
		metric   bool
		want     string // ready, unready, missing, ignored
	}{
		{"running ready with sample", mkPod("a", 1), v1.ResourceCPU, true, "ready"},
		{"failed is ignored", mkPod("a", 1, phase(v1.PodFailed)), v1.ResourceCPU, true, "ignored"},
		{"deleted is ignored even if running", mkPod("a", 1, deleted()), v1.ResourceMemory, true, "ignored"},
		{"pending is unready even with a sample", mkPod("a", 1, phase(v1.PodPending)), v1.ResourceMemory, true, "unready"},
		{"pending without sample is unready, not missing", mkPod("a", 1, phase(v1.PodPending)), v1.ResourceCPU, false, "unready"},
		{"running without sample is missing", mkPod("a", 1, neverReady()), v1.ResourceCPU, false, "missing"},
		{"succeeded with sample counts as ready for memory", mkPod("a", 1, phase(v1.PodSucceeded), noReadyCondition()), v1.ResourceMemory, true, "ready"},
		{"no Ready condition is unready for cpu", mkPod("a", 1, noReadyCondition()), v1.ResourceCPU, true, "unready"},
		{"no start time is unready for cpu", mkPod("a", 1, func(p *v1.Pod) { p.Status.StartTime = nil }), v1.ResourceCPU, true, "unready"},
		{"never ready is unready for cpu", mkPod("a", 1, neverReady()), v1.ResourceCPU, true, "unready"},
		{"never ready counts for memory", mkPod("a", 1, neverReady()), v1.ResourceMemory, true, "ready"},
		{"became unready later still counts for cpu", mkPod("a", 1, becameUnready()), v1.ResourceCPU, true, "ready"},
		{"initialising, ready, full window since transition", mkPod("a", 1, startedAgo(time.Minute), readyAgo(50*time.Second)), v1.ResourceCPU, true, "ready"},
		{"initialising, ready, sample older than transition+window", mkPod("a", 1, startedAgo(time.Minute), readyAgo(30*time.Second)), v1.ResourceCPU, true, "unready"},
		{"initialising and not ready", mkPod("a", 1, startedAgo(time.Minute), readyAgo(50*time.Second), func(p *v1.Pod) {
			p.Status.Conditions[0].Status = v1.ConditionFalse
		}), v1.ResourceCPU, true, "unready"},
		{"exactly 5m after start is past initialisation", mkPod("a", 1, startedAgo(5*time.Minute), readyAgo(5*time.Second)), v1.ResourceCPU, true, "ready"},
		{"Ready=False 30s after start is past the readiness delay", mkPod("a", 1, becameUnready(), func(p *v1.Pod) {
			p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(p.Status.StartTime.Add(30 * time.Second))
		}), v1.ResourceCPU, true, "ready"},
		{"Ready=False 29s after start was never ready", mkPod("a", 1, becameUnready(), func(p *v1.Pod) {
			p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(p.Status.StartTime.Add(29 * time.Second))
		}), v1.ResourceCPU, true, "unready"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := PodMetrics{}
			if tc.metric {
				m = samples(map[string]int64{"a": 1})
			}
			g := GroupPods([]*v1.Pod{tc.pod}, m, tc.resource, epoch(), DefaultReadiness())
			got := map[bool]string{true: "ready"}[g.Ready == 1]
			switch {
			case len(g.Unready) == 1:
				got = "unready"
			case len(g.Missing) == 1:
				got = "missing"
			case len(g.Ignored) == 1:
				got = "ignored"
			}
			if got != tc.want {
				t.Fatalf("got %s (%+v), want %s", got, g, tc.want)
			}
		})
	}
}

// TestRequests ports upstream's TestCalculateRequests rows (pod-level
// resources on) and its non-existent container case.
func TestRequests(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	cpu := func(v int64) v1.ResourceRequirements {
		return v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: milliQ(v)}}
	}
	pod := func(spec v1.PodSpec) []*v1.Pod {
		return []*v1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "test-pod"}, Spec: spec}}
	}
	two := []v1.Container{{Name: "container1", Resources: cpu(100)}, {Name: "container2", Resources: cpu(50)}}
	podLevel := &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: milliQ(800)}}
	tests := []struct {
		name      string
		pods      []*v1.Pod
		container string
		want      []int64
		wantErr   string
	}{
		{name: "void", pods: nil, want: []int64{}},
		{name: "sum container requests", pods: pod(v1.PodSpec{Containers: two}), want: []int64{150}},
		{name: "pod-level requests override containers", pods: pod(v1.PodSpec{Resources: podLevel, Containers: two}), want: []int64{800}},
		{name: "missing container request fails", pods: pod(v1.PodSpec{Containers: []v1.Container{{Name: "container1"}, two[1]}}),
			wantErr: "missing request for cpu in container container1 of Pod test-pod"},
		{name: "pod-level requests cover a missing container request",
			pods: pod(v1.PodSpec{Resources: podLevel, Containers: []v1.Container{{Name: "container1"}, two[1]}}), want: []int64{800}},
		{name: "named container", pods: pod(v1.PodSpec{Containers: two}), container: "container1", want: []int64{100}},
		{name: "named container ignores pod-level", pods: pod(v1.PodSpec{Resources: podLevel, Containers: two}), container: "container1", want: []int64{100}},
		{name: "sidecars count, plain init containers do not", pods: pod(v1.PodSpec{
			Containers: []v1.Container{{Name: "container1", Resources: cpu(100)}},
			InitContainers: []v1.Container{
				{Name: "init-container1", Resources: cpu(20)},
				{Name: "restartable-container1", RestartPolicy: &always, Resources: cpu(50)},
			}}), want: []int64{150}},
		{name: "a sidecar can be named", pods: pod(v1.PodSpec{Containers: two,
			InitContainers: []v1.Container{{Name: "sc", RestartPolicy: &always, Resources: cpu(70)}}}), container: "sc", want: []int64{70}},
		{name: "non-existent container", pods: pod(v1.PodSpec{Containers: two}), container: "non-existent-container",
			wantErr: "container non-existent-container not found in Pod test-pod"},
		{name: "pod-level overhead is added", pods: pod(v1.PodSpec{Resources: podLevel, Containers: two,
			Overhead: v1.ResourceList{v1.ResourceCPU: milliQ(30)}}), want: []int64{830}},
		{name: "pod-level memory only: cpu falls back to the aggregate, which skips missing requests",
			pods: pod(v1.PodSpec{Resources: &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}},
				Containers: []v1.Container{{Name: "container1"}, two[1]}}), want: []int64{50}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Requests(tc.pods, tc.container, v1.ResourceCPU)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// TestObjectExternal covers Value and AverageValue targets of Object and
// External metrics.
func TestObjectExternal(t *testing.T) {
	tol := UniformTolerances(DefaultTolerance)
	ready := []*v1.Pod{mkPod("a", 1), mkPod("b", 1), mkPod("c", 1, neverReady()), mkPod("d", 1, phase(v1.PodPending))}
	// Value: ratio 2, multiplied by the 2 Running&Ready pods, not by current.
	p, err := ObjectValueReplicas(5, 2000, 1000, tol, ready)
	if err != nil || p.Replicas != 4 || p.Value != 2000 {
		t.Fatalf("object value: got %+v, %v; want 4", p, err)
	}
	// Scale from zero: ceil(ratio) without tolerance, no pods needed.
	p, err = ObjectValueReplicas(0, 1050, 1000, tol, nil)
	if err != nil || p.Replicas != 2 {
		t.Fatalf("from zero: got %+v, %v; want ceil(1.05)=2", p, err)
	}
	p, err = ExternalValueReplicas(0, []int64{0}, 1000, tol, nil)
	if err != nil || p.Replicas != 0 {
		t.Fatalf("from zero at 0 usage: got %+v, %v; want 0", p, err)
	}
	// Within tolerance no pods are listed; outside, an empty list fails.
	if p, err = ObjectValueReplicas(3, 1050, 1000, tol, nil); err != nil || p.Replicas != 3 {
		t.Fatalf("within tolerance: got %+v, %v; want 3", p, err)
	}
	if _, err = ObjectValueReplicas(3, 3000, 1000, tol, nil); err == nil {
		t.Fatal("expected an error without pods")
	}
	// No Running&Ready pod: the proposal is 0 (upstream behaviour).
	if p, err = ExternalValueReplicas(3, []int64{1000, 2000}, 1000, tol, []*v1.Pod{mkPod("x", 1, phase(v1.PodPending))}); err != nil || p.Replicas != 0 || p.Value != 3000 {
		t.Fatalf("no ready pods: got %+v, %v; want 0 at 3000m", p, err)
	}
	// A pod being deleted still counts when Running and Ready (upstream quirk).
	if p, err = ObjectValueReplicas(5, 2000, 1000, tol, append(ready, mkPod("e", 1, deleted()))); err != nil || p.Replicas != 6 {
		t.Fatalf("deleted ready pod: got %+v, %v; want ceil(2*3)=6", p, err)
	}
	// AverageValue: ratio against status replicas; answer ceil(usage/target).
	p = ObjectAverageValueReplicas(4, 10000, 1000, tol)
	if p.Replicas != 10 || p.Value != 2500 {
		t.Fatalf("object per-pod: got %+v; want 10 replicas at 2500m", p)
	}
	if p = ObjectAverageValueReplicas(4, 4200, 1000, tol); p.Replicas != 4 || p.Value != 1050 {
		t.Fatalf("object per-pod within tolerance: got %+v; want 4 at 1050m", p)
	}
	// Overflow: the Value sum saturates at MaxInt64 (upstream TestReplicaCalcExternalMetricUsageOverflow).
	big := int64(1<<62) + 1
	if p, err = ExternalValueReplicas(3, []int64{big, big}, 1<<63-1, tol, ready); err != nil || p.Replicas != 3 || p.Value != 1<<63-1 {
		t.Fatalf("value overflow: got %+v, %v; want 3 at MaxInt64", p, err)
	}
	if p, err = ExternalAverageValueReplicas(3, []int64{big, big}, 1, tol); err != nil || p.Replicas != 1<<31-1 || p.Value != 1<<63-1 {
		t.Fatalf("per-pod overflow: got %+v, %v; want MaxInt32 at MaxInt64", p, err)
	}
	if _, err = ExternalValueReplicas(3, nil, 1, tol, ready); err == nil {
		t.Fatal("expected an error for an external metric without series")
	}
}

// TestComputeMetricStatusAndNames checks the status entries and the names
// Kubernetes gives metrics, including the Object AverageValue quirk and the
// zero timestamp of Value targets.
func TestComputeMetricStatusAndNames(t *testing.T) {
	pods := podsN(2, 1000)
	ts := at(-7 * time.Second)
	s := Snapshot{Now: epoch(), SpecReplicas: 2, StatusReplicas: 2, Pods: pods}
	p := Params{Tolerances: UniformTolerances(0.1), Readiness: DefaultReadiness()}
	v := resource.MustParse("500m")
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"q": "x"}}
	obj := autoscalingv2.CrossVersionObjectReference{Kind: "Ingress", Name: "web"}
	tests := []struct {
		name     string
		spec     autoscalingv2.MetricSpec
		data     MetricData
		wantName string
		wantTS   time.Time
		want     autoscalingv2.MetricValueStatus
	}{
		{"cpu utilization",
			autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: v1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: int32p(50)}}},
			MetricData{PodMetrics: uniform(pods, 500), Timestamp: ts},
			"cpu resource utilization (percentage of request)", ts,
			autoscalingv2.MetricValueStatus{AverageUtilization: int32p(50), AverageValue: resource.NewMilliQuantity(500, resource.DecimalSI)}},
		{"averageValue wins over the target type",
			autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: v1.ResourceMemory, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: int32p(50), AverageValue: &v}}},
			MetricData{PodMetrics: uniform(pods, 500), Timestamp: ts},
			"memory resource", ts,
			autoscalingv2.MetricValueStatus{AverageValue: resource.NewMilliQuantity(500, resource.BinarySI)}},
		{"container utilization",
			autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
				Name: v1.ResourceCPU, Container: "app", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: int32p(50)}}},
			MetricData{PodMetrics: uniform(pods, 250), Timestamp: ts},
			"cpu container resource utilization (percentage of request)", ts,
			autoscalingv2.MetricValueStatus{AverageUtilization: int32p(25), AverageValue: resource.NewMilliQuantity(250, resource.DecimalSI)}},
		{"pods",
			autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "qps"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &v}}},
			MetricData{PodMetrics: uniform(pods, 500), Timestamp: ts},
			"pods metric qps", ts,
			autoscalingv2.MetricValueStatus{AverageValue: resource.NewMilliQuantity(500, resource.DecimalSI)}},
		{"object value: zero timestamp",
			autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
				DescribedObject: obj, Metric: autoscalingv2.MetricIdentifier{Name: "hits"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: &v}}},
			MetricData{ObjectValue: 500, Timestamp: ts},
			"Ingress metric hits", time.Time{},
			autoscalingv2.MetricValueStatus{Value: resource.NewMilliQuantity(500, resource.DecimalSI)}},
		{"object average value is named like an external metric",
			autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
				DescribedObject: obj, Metric: autoscalingv2.MetricIdentifier{Name: "hits", Selector: sel}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &v}}},
			MetricData{ObjectValue: 1000, Timestamp: ts},
			"external metric hits(&LabelSelector{MatchLabels:map[string]string{q: x,},MatchExpressions:[]LabelSelectorRequirement{},})", ts,
			autoscalingv2.MetricValueStatus{AverageValue: resource.NewMilliQuantity(500, resource.DecimalSI)}},
		{"external value: zero timestamp",
			autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "queue"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: &v}}},
			MetricData{ExternalValues: []int64{200, 300}, Timestamp: ts},
			"external metric queue(nil)", time.Time{},
			autoscalingv2.MetricValueStatus{Value: resource.NewMilliQuantity(500, resource.DecimalSI)}},
		{"external average value",
			autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "queue"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &v}}},
			MetricData{ExternalValues: []int64{200, 801}, Timestamp: ts},
			"external metric queue(nil)", ts,
			autoscalingv2.MetricValueStatus{AverageValue: resource.NewMilliQuantity(501, resource.DecimalSI)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ComputeMetric(s, p, tc.spec, tc.data)
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if r.Name != tc.wantName || !r.Timestamp.Equal(tc.wantTS) || r.Status.Type != tc.spec.Type {
				t.Fatalf("name %q ts %v type %s; want %q %v %s", r.Name, r.Timestamp, r.Status.Type, tc.wantName, tc.wantTS, tc.spec.Type)
			}
			if got := currentOf(r.Status); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("status %+v, want %+v", got, tc.want)
			}
		})
	}
}

// currentOf extracts the current value of any status entry.
func currentOf(s autoscalingv2.MetricStatus) autoscalingv2.MetricValueStatus {
	switch {
	case s.Resource != nil:
		return s.Resource.Current
	case s.ContainerResource != nil:
		return s.ContainerResource.Current
	case s.Pods != nil:
		return s.Pods.Current
	case s.Object != nil:
		return s.Object.Current
	case s.External != nil:
		return s.External.Current
	}
	return autoscalingv2.MetricValueStatus{}
}

// TestComputeMetricFailures checks the ScalingActive reason of each type.
func TestComputeMetricFailures(t *testing.T) {
	s := Snapshot{Now: epoch(), SpecReplicas: 2, StatusReplicas: 2, Pods: podsN(2, 1000)}
	p := Params{Tolerances: UniformTolerances(0.1), Readiness: DefaultReadiness()}
	fetch := MetricData{Err: constError("metrics API down")}
	tests := []struct {
		spec   autoscalingv2.MetricSpec
		data   MetricData
		reason string
	}{
		{autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: v1.ResourceCPU,
			Target: autoscalingv2.MetricTarget{AverageUtilization: int32p(50)}}}, fetch, ReasonFailedGetResourceMetric},
		{autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: v1.ResourceCPU}},
			MetricData{PodMetrics: uniform(s.Pods, 1)}, ReasonFailedGetResourceMetric},
		{autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
			Name: v1.ResourceCPU, Container: "nope", Target: autoscalingv2.MetricTarget{AverageUtilization: int32p(50)}}},
			MetricData{PodMetrics: uniform(s.Pods, 1)}, ReasonFailedGetContainerResourceMetric},
		{autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{}}, MetricData{}, ReasonFailedGetPodsMetric},
		{autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{}}, MetricData{}, ReasonFailedGetObjectMetric},
		{autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{}}, MetricData{}, ReasonFailedGetExternalMetric},
		{autoscalingv2.MetricSpec{Type: "Bogus"}, MetricData{}, ReasonInvalidMetricSourceType},
	}
	for _, tc := range tests {
		r := ComputeMetric(s, p, tc.spec, tc.data)
		if r.Err == nil || r.Condition.Reason != tc.reason || r.Condition.Type != autoscalingv2.ScalingActive || r.Condition.Status != v1.ConditionFalse {
			t.Errorf("%s: got err %v condition %+v, want reason %s", tc.spec.Type, r.Err, r.Condition, tc.reason)
		}
		if r.Err != nil && !strings.HasPrefix(r.Condition.Message, "the HPA was unable to compute the replica count: ") {
			t.Errorf("%s: message %q", tc.spec.Type, r.Condition.Message)
		}
	}
}

// TestSamplesOfUnlistedPods: samples naming pods the lister does not know
// count as Kubernetes counts them: in the average and the sample count of
// average-value targets, only in the sample count for utilization.
func TestSamplesOfUnlistedPods(t *testing.T) {
	pods := podsN(2, 1000)
	m := samples(map[string]int64{"p0": 100, "p1": 100, "ghost": 700})
	// Plain: avg (100+100+700)/3 = 300 vs 100 -> ceil(3*2 ready) = 6.
	p, err := PlainReplicas(podInputAt(2, pods, m), "", 100)
	if err != nil || p.Value != 300 || p.Replicas != 6 {
		t.Fatalf("plain: got %+v, %v; want 300m and 6", p, err)
	}
	// Utilization ignores the ghost's usage (no request): 10% vs 50%.
	// A missing third pod triggers the fold-back, whose count includes the
	// ghost: (200+1000)/3000 = 40% -> ceil(0.8*4) = 4 (3 without the ghost).
	pods = podsN(3, 1000)
	u, err := ResourceUtilizationReplicas(podInputAt(4, pods, m), v1.ResourceCPU, "", 50)
	if err != nil || u.Utilization != 10 || u.Value != 100 || u.Replicas != 4 {
		t.Fatalf("utilization: got %+v, %v; want 10%%, 100m, 4", u, err)
	}
	// Only unlisted samples: utilization has no request to divide by.
	if _, err = ResourceUtilizationReplicas(podInputAt(1, podsN(1, 1000), samples(map[string]int64{"ghost": 5})), v1.ResourceCPU, "", 50); err == nil {
		t.Fatal("expected an error when no sample matches a listed pod")
	}
}
