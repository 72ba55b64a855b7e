package controller

import (
	"fmt"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tidal-autoscaler/tidal/hpa"
)

// unknown stands for a current value that could not be read.
const unknown = "<unknown>"

// reference is the scale target as Kind/Name.
func reference(ref autoscalingv2.CrossVersionObjectReference) string {
	return ref.Kind + "/" + ref.Name
}

// Targets summarises each metric as "name: current/target", the way
// kubectl shows HorizontalPodAutoscalers: "cpu: 45%/50%", "qps: 120/100",
// "queue: 7/10 (avg)"; a watermarked metric shows its band as the target
// ("cpu: 45%/40%..80%"). A current value that could not be read is
// "<unknown>".
func Targets(spec autoscalingv2.HorizontalPodAutoscalerSpec, marks []*hpa.Watermarks, status autoscalingv2.HorizontalPodAutoscalerStatus) string {
	specs := spec.Metrics
	if len(specs) == 0 {
		specs = hpa.DefaultSpec(spec).Metrics
	}
	parts := make([]string, len(specs))
	for i, m := range specs {
		var st autoscalingv2.MetricStatus
		if i < len(status.CurrentMetrics) {
			st = status.CurrentMetrics[i]
		}
		var w *hpa.Watermarks
		if i < len(marks) {
			w = marks[i]
		}
		parts[i] = metricTarget(m, st, w)
	}
	return strings.Join(parts, ", ")
}

// metricTarget formats one metric.
func metricTarget(m autoscalingv2.MetricSpec, st autoscalingv2.MetricStatus, w *hpa.Watermarks) string {
	var name string
	var target autoscalingv2.MetricTarget
	var current *autoscalingv2.MetricValueStatus
	switch {
	case m.Resource != nil:
		name, target = string(m.Resource.Name), m.Resource.Target
		if st.Resource != nil {
			current = &st.Resource.Current
		}
	case m.ContainerResource != nil:
		name, target = fmt.Sprintf("%s(%s)", m.ContainerResource.Name, m.ContainerResource.Container), m.ContainerResource.Target
		if st.ContainerResource != nil {
			current = &st.ContainerResource.Current
		}
	case m.Pods != nil:
		name, target = m.Pods.Metric.Name, m.Pods.Target
		if st.Pods != nil {
			current = &st.Pods.Current
		}
	case m.Object != nil:
		name, target = m.Object.Metric.Name, m.Object.Target
		if st.Object != nil {
			current = &st.Object.Current
		}
	case m.External != nil:
		name, target = m.External.Metric.Name, m.External.Target
		if st.External != nil {
			current = &st.External.Current
		}
	default:
		return string(m.Type) + ": " + unknown
	}
	now, want := formatValues(target, current, m.Object != nil || m.External != nil)
	if w != nil {
		want = band(w, target.Type == autoscalingv2.UtilizationMetricType)
	}
	return fmt.Sprintf("%s: %s/%s", name, now, want)
}

// formatValues formats the current and target values of the target's kind;
// perPod marks an average over pods of an Object or External metric.
func formatValues(t autoscalingv2.MetricTarget, cur *autoscalingv2.MetricValueStatus, perPod bool) (string, string) {
	switch {
	case t.AverageUtilization != nil && t.AverageValue == nil:
		now := unknown
		if cur != nil && cur.AverageUtilization != nil {
			now = fmt.Sprintf("%d%%", *cur.AverageUtilization)
		}
		return now, fmt.Sprintf("%d%%", *t.AverageUtilization)
	case t.AverageValue != nil:
		now := unknown
		if cur != nil && cur.AverageValue != nil {
			now = cur.AverageValue.String()
		}
		suffix := ""
		if perPod {
			suffix = " (avg)"
		}
		return now, t.AverageValue.String() + suffix
	case t.Value != nil:
		now := unknown
		if cur != nil && cur.Value != nil {
			now = cur.Value.String()
		}
		return now, t.Value.String()
	}
	return unknown, unknown
}

// band formats a watermark band as low..high.
func band(w *hpa.Watermarks, percent bool) string {
	f := func(q *resource.Quantity) string {
		switch {
		case q == nil:
			return ""
		case percent:
			return q.String() + "%"
		}
		return q.String()
	}
	return f(w.Low) + ".." + f(w.High)
}
