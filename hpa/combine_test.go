package hpa

import (
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// extAvg is an External AverageValue metric whose proposal is ceil(usage/target).
func extAvg(name string, target int64) autoscalingv2.MetricSpec {
	q := milliQ(target)
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: name}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q}}}
}

// objValue is an Object Value metric.
func objValue(name string, target int64) autoscalingv2.MetricSpec {
	q := milliQ(target)
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
		DescribedObject: autoscalingv2.CrossVersionObjectReference{Kind: "Service", Name: "svc"},
		Metric:          autoscalingv2.MetricIdentifier{Name: name}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: &q}}}
}

// cpuUtil is a cpu Utilization metric.
func cpuUtil(target int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: v1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &target}}}
}

// proposing returns external data whose AverageValue proposal (target 1000m)
// is n replicas.
func proposing(n int64) MetricData { return MetricData{ExternalValues: []int64{n * 1000}} }

const errDown = constError("adapter unavailable")

func combineInput(spec int32, metrics []autoscalingv2.MetricSpec, data ...MetricData) MetricsInput {
	return MetricsInput{
		Snapshot: Snapshot{Now: epoch(), SpecReplicas: spec, StatusReplicas: spec, Pods: podsN(int(spec), 1000)},
		Params:   Params{Tolerances: UniformTolerances(0.1), Readiness: DefaultReadiness()},
		Metrics:  metrics, Data: data, MinReplicas: 1, MaxReplicas: 100,
	}
}

func TestComputeReplicasForMetrics(t *testing.T) {
	podsFail := autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "qps"}, Target: autoscalingv2.MetricTarget{AverageValue: resource.NewMilliQuantity(1, resource.DecimalSI)}}}
	tests := []struct {
		name       string
		in         MetricsInput
		want       int32
		wantName   string
		wantReason string
		wantErr    bool
	}{
		{"largest proposal wins", combineInput(5, []autoscalingv2.MetricSpec{extAvg("a", 1000), extAvg("b", 1000), extAvg("c", 1000)},
			proposing(3), proposing(9), proposing(7)), 9, "external metric b(nil)", ReasonValidMetricFound, false},
		{"an invalid metric does not block a scale-up", combineInput(5, []autoscalingv2.MetricSpec{extAvg("a", 1000), extAvg("b", 1000)},
			MetricData{Err: errDown}, proposing(8)), 8, "external metric b(nil)", ReasonValidMetricFound, true},
		{"an invalid metric does not block staying put", combineInput(5, []autoscalingv2.MetricSpec{extAvg("a", 1000), extAvg("b", 1000)},
			proposing(5), MetricData{Err: errDown}), 5, "external metric a(nil)", ReasonValidMetricFound, true},
		{"an invalid metric blocks a scale-down; the first failure's reason wins", combineInput(5,
			[]autoscalingv2.MetricSpec{extAvg("a", 1000), podsFail, cpuUtil(50)},
			proposing(2), MetricData{Err: errDown}, MetricData{Err: errDown}), -1, "", ReasonFailedGetPodsMetric, true},
		{"all invalid", combineInput(5, []autoscalingv2.MetricSpec{cpuUtil(50), extAvg("a", 1000)},
			MetricData{Err: errDown}, MetricData{Err: errDown}), -1, "", ReasonFailedGetResourceMetric, true},
		{"missing data counts as a failure", combineInput(5, []autoscalingv2.MetricSpec{extAvg("a", 1000), cpuUtil(50)},
			proposing(2)), -1, "", ReasonFailedGetResourceMetric, true},
		{"no metrics", combineInput(5, nil), -1, "", ReasonInvalidMetricSourceType, true},
		{"zero proposals: the later metric names the result (upstream quirk)", combineInput(5,
			[]autoscalingv2.MetricSpec{objValue("a", 1000), objValue("b", 1000)}, MetricData{}, MetricData{}), 0, "Service metric b", ReasonValidMetricFound, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ComputeReplicasForMetrics(tc.in)
			if c.Replicas != tc.want || c.MetricName != tc.wantName || c.Condition.Reason != tc.wantReason || (c.Err != nil) != tc.wantErr {
				t.Fatalf("got %d %q %s err=%v; want %d %q %s err=%v", c.Replicas, c.MetricName, c.Condition.Reason, c.Err, tc.want, tc.wantName, tc.wantReason, tc.wantErr)
			}
			if len(c.Statuses) != len(tc.in.Metrics) {
				t.Fatalf("%d statuses for %d metrics", len(c.Statuses), len(tc.in.Metrics))
			}
			if c.Replicas >= 0 && !strings.Contains(c.Condition.Message, c.MetricName) {
				t.Fatalf("condition message %q does not name %q", c.Condition.Message, c.MetricName)
			}
			for i, d := range tc.in.Data {
				if d.Err != nil && c.Statuses[i].Type != "" {
					t.Fatalf("status %d of a failed metric is %+v, want the zero value", i, c.Statuses[i])
				}
			}
			if c.Err != nil && tc.wantErr && !strings.Contains(c.Err.Error(), "invalid metrics (") && len(tc.in.Metrics) > 0 {
				t.Fatalf("error %q does not summarise the failures", c.Err)
			}
		})
	}
}
