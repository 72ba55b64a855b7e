package hpa

import (
	"encoding/json"
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Random autoscalers for the differential test of the whole sync (see
// TestDifferentialReconcileAgainstUpstreamController).

// jsonOf is v in JSON, for messages.
func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// randomCase returns a random autoscaler and what it reads, every time a
// whole number of seconds from g.now.
func (g *gen) randomCase() reconcileCase {
	minR := int32(g.between(1, 5))
	maxR := minR + int32(g.between(0, 30))
	current := minR + int32(g.between(0, int(maxR-minR)))
	switch x := g.r.IntN(100); {
	case x < 6:
		current = 0
	case x < 12:
		current = maxR + int32(g.between(1, 5))
	case x < 16:
		current = int32(g.between(0, int(minR)))
	}
	c := reconcileCase{CurrentReplicas: current, History: g.randomHistory()}
	if g.chance(0.2) {
		sr := max(0, current+int32(g.between(-3, 3)))
		c.StatusReplicas = &sr
	}
	c.HPA.Spec = autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: maxR}
	if g.chance(0.8) {
		c.HPA.Spec.MinReplicas = &minR
	}
	if g.chance(0.6) {
		c.HPA.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: g.tolerant(g.randomRules()), ScaleDown: g.tolerant(g.randomRules())}
	}
	c.HPA.Status = g.priorStatus(current)
	c.Pods = g.pods(max(int(current)+g.between(-2, 2), 0), podShape{resource: v1.ResourceCPU, requests: true, podLevel: true, sidecars: true})
	read := map[string]caseMetric{} // what each metricKey reads: two cpu metrics read the same samples
	for j := range g.between(1, 3) {
		spec, m := g.randomMetric(j, current, c.Pods)
		if earlier, ok := read[specKey("", spec)]; ok {
			m = earlier
		}
		read[specKey("", spec)] = m
		c.HPA.Spec.Metrics = append(c.HPA.Spec.Metrics, spec)
		c.Metrics = append(c.Metrics, m)
	}
	return c
}

// tolerant sometimes gives rules a tolerance of their own.
func (g *gen) tolerant(r *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if r != nil && g.chance(0.3) {
		q := resource.MustParse(fmt.Sprintf("0.%02d", g.between(0, 40)))
		r.Tolerance = &q
	}
	return r
}

// priorStatus is what an earlier sync (of tidal, or of someone) left:
// sometimes conditions, sometimes a ScaledToZero condition, a desired
// count. currentReplicas always differs from current, so that the first
// reconcile writes a status.
func (g *gen) priorStatus(current int32) autoscalingv2.HorizontalPodAutoscalerStatus {
	st := autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: current + 1, DesiredReplicas: int32(g.between(0, 30))}
	long := metav1.NewTime(g.ago(3600, 7200))
	if g.chance(0.3) {
		st.Conditions = append(st.Conditions,
			autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.AbleToScale, Status: v1.ConditionFalse, Reason: ReasonFailedGetScale, LastTransitionTime: long},
			autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.ScalingLimited, Status: v1.ConditionTrue, Reason: ReasonTooManyReplicas, LastTransitionTime: long})
	}
	if g.chance(0.2) {
		status, reason := v1.ConditionTrue, "ScaledToZero"
		if g.chance(0.5) {
			status, reason = v1.ConditionFalse, "NotScaledToZero"
		}
		st.Conditions = append(st.Conditions, autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.ScaledToZero, Status: status, Reason: reason, LastTransitionTime: long})
	}
	if g.chance(0.3) {
		st.LastScaleTime = &long
	}
	return st
}

// randomMetric returns metric j's spec and data: its value is around the
// target times a random factor, sometimes exactly on it, zero or negative
// (Object and External only), and it sometimes fails.
func (g *gen) randomMetric(j int, current int32, pods []*v1.Pod) (autoscalingv2.MetricSpec, caseMetric) {
	kind := diffKinds[g.r.IntN(len(diffKinds))]
	dc := diffCase{kind: kind, resource: v1.ResourceCPU, container: "c0", target: int64(g.between(1, 5000))}
	if kind == "utilization" || kind == "containerUtilization" {
		dc.target = int64(g.between(10, 150))
	}
	spec := dc.spec()
	name := fmt.Sprintf("m%d", j)
	switch {
	case spec.Pods != nil:
		spec.Pods.Metric.Name = name
	case spec.Object != nil:
		spec.Object.Metric.Name = name
	case spec.External != nil:
		spec.External.Metric.Name = name
	}
	m := caseMetric{Timestamp: g.ago(0, 60), Failed: g.chance(0.12)}
	factor := g.factor(spec.Object != nil || spec.External != nil)
	perPod := dc.target
	if dc.kind == "utilization" || dc.kind == "containerUtilization" {
		perPod = dc.target * 10 // of the generator's mean request of about 1000m
	}
	switch {
	case spec.Object != nil && spec.Object.Target.Type == autoscalingv2.ValueMetricType:
		m.Value = milliQp(int64(float64(dc.target) * factor))
	case spec.Object != nil:
		m.Value = milliQp(int64(float64(dc.target) * float64(current) * factor))
	case spec.External != nil:
		total := float64(dc.target) * factor
		if spec.External.Target.Type == autoscalingv2.AverageValueMetricType {
			total *= float64(current)
		}
		for n := g.between(1, 3); n > 0; n-- {
			m.Values = append(m.Values, milliQ(int64(total)/int64(n)))
		}
	default:
		m.Pods = g.scaledPodMetrics(pods, float64(perPod)*factor)
	}
	return spec, m
}

// factor is a metric's value relative to its target.
func (g *gen) factor(negative bool) float64 {
	switch x := g.r.IntN(100); {
	case x < 10:
		return 1
	case x < 15:
		return 0
	case x < 20 && negative:
		return -g.r.Float64() * 2
	}
	return g.r.Float64() * 3
}

// scaledPodMetrics returns samples around mean for most pods, as podMetrics
// does for a uniform spread.
func (g *gen) scaledPodMetrics(pods []*v1.Pod, mean float64) PodMetrics {
	m := g.podMetrics(pods, 2000)
	for name, s := range m {
		s.Value = int64(mean * float64(s.Value) / 1000)
		m[name] = s
	}
	return m
}
