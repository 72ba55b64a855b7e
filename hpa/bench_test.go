package hpa

import (
	"fmt"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
)

const (
	fleetAutoscalers = 2000
	fleetPods        = 20
)

// fleet builds 2,000 autoscalers of 20 pods each with synthetic in-memory
// metrics: a cpu Utilization metric, plus, on every other autoscaler, a
// Pods metric and a behavior; a quarter carry watermarks on the cpu metric.
func fleet() []ReconcileInput {
	g := newGen(7, epoch())
	out := make([]ReconcileInput, fleetAutoscalers)
	for i := range out {
		pods := make([]*v1.Pod, fleetPods)
		cpu, qps := PodMetrics{}, PodMetrics{}
		for j := range pods {
			pods[j] = mkPod(fmt.Sprintf("a%d-p%d", i, j), 500)
			if j%7 == 3 {
				pods[j].Status.Conditions[0].Status = v1.ConditionFalse
			}
			if j%11 != 5 { // some pods have no sample
				cpu[pods[j].Name] = PodMetric{Value: int64(g.between(100, 900)), Timestamp: at(-5 * time.Second), Window: 30 * time.Second}
				qps[pods[j].Name] = PodMetric{Value: int64(g.between(1000, 9000)), Timestamp: at(-5 * time.Second), Window: 30 * time.Second}
			}
		}
		minR := int32(2)
		in := ReconcileInput{
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: &minR, MaxReplicas: 60,
				Metrics: []autoscalingv2.MetricSpec{cpuUtil(60)}},
			History:  History{Recommendations: recs(fleetPods, 2*time.Minute, fleetPods+2, time.Minute)},
			Snapshot: Snapshot{Now: epoch(), SpecReplicas: fleetPods, StatusReplicas: fleetPods, Pods: pods},
			Data:     []MetricData{{PodMetrics: cpu, Timestamp: at(-5 * time.Second)}},
		}
		if i%2 == 1 {
			q := milliQ(5000)
			in.Spec.Metrics = append(in.Spec.Metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType,
				Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "qps"},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q}}})
			in.Data = append(in.Data, MetricData{PodMetrics: qps, Timestamp: at(-5 * time.Second)})
			in.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: rules(4, 60, 10, 60, 120)}
			in.History.ScaleDownEvents = []ScaleEvent{{ReplicaChange: 2, Timestamp: mtime(-30 * time.Second)}}
		}
		if i%4 == 0 {
			in.Watermarks = []*Watermarks{{High: qp("80"), Low: qp("40")}}
		}
		out[i] = in
	}
	return out
}

// BenchmarkReconcileFleet runs one full pass over the fleet per operation;
// ns/op is the CPU cost of a whole pass (target: well under 2s).
func BenchmarkReconcileFleet(b *testing.B) {
	in := fleet()
	cfg := DefaultConfig()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for i := range in {
			if d := Reconcile(cfg, in[i]); d.DesiredReplicas < -1 {
				b.Fatal("impossible decision")
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*fleetAutoscalers), "ns/autoscaler")
}

// TestFleetIsNotDegenerate checks that the fleet BenchmarkReconcileFleet
// times does real work: some autoscalers rescale, not all. The speed target
// is checked by the benchmark.
func TestFleetIsNotDegenerate(t *testing.T) {
	in := fleet()
	rescales := 0
	for i := range in {
		if Reconcile(DefaultConfig(), in[i]).Rescale {
			rescales++
		}
	}
	if rescales == 0 || rescales == fleetAutoscalers {
		t.Fatalf("degenerate fleet: %d of %d rescale", rescales, fleetAutoscalers)
	}
}
