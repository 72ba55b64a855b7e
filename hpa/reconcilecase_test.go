package hpa

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	autoscalingapiv2 "k8s.io/kubernetes/pkg/apis/autoscaling/v2"
)

// reconcileCase is one autoscaler's sync: the HorizontalPodAutoscaler as
// stored (its spec before API defaulting, and its status), the replicas of
// its target's /scale, and what each metric reads. The JSON form is what
// the regression tests are written in.
type reconcileCase struct {
	HPA             autoscalingv2.HorizontalPodAutoscaler `json:"hpa"`
	CurrentReplicas int32                                 `json:"currentReplicas"`
	// StatusReplicas is the scale's status.replicas (default: current).
	StatusReplicas *int32 `json:"statusReplicas,omitempty"`
	// Metrics is index-aligned with spec.metrics.
	Metrics []caseMetric `json:"metrics"`
	// Pods are the target's pods, for Resource and Pods metrics.
	Pods []*v1.Pod `json:"-"`
	// History is what earlier syncs left (upstream keeps it in memory).
	History History `json:"-"`
}

// caseMetric is what one metric reads.
type caseMetric struct {
	// Value is an Object metric's value, Values an External metric's
	// series.
	Value  *resource.Quantity  `json:"value,omitempty"`
	Values []resource.Quantity `json:"values,omitempty"`
	// Pods are per-pod samples of Resource and Pods metrics.
	Pods      PodMetrics `json:"-"`
	Timestamp time.Time  `json:"-"`
	// Failed makes the metrics API fail.
	Failed bool `json:"failed,omitempty"`
}

// parseCase reads a case in its JSON form; unknown fields are errors.
func parseCase(t *testing.T, s string) reconcileCase {
	t.Helper()
	var c reconcileCase
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("case %s: %v", s, err)
	}
	return c
}

// failure is the error message of a failed metric.
func (m caseMetric) failure() string { return "the metrics backend is unavailable" }

// mem is the metric's data for upstream's MetricsClient.
func (m caseMetric) mem() *memMetrics {
	d := m.data()
	return &memMetrics{pods: d.PodMetrics, object: d.ObjectValue, external: d.ExternalValues, ts: d.Timestamp}
}

// data is the metric's data as tidal's controller hands it to Reconcile.
func (m caseMetric) data() MetricData {
	d := MetricData{PodMetrics: m.Pods, Timestamp: m.Timestamp}
	if m.Value != nil {
		d.ObjectValue = m.Value.MilliValue()
	}
	for _, q := range m.Values {
		d.ExternalValues = append(d.ExternalValues, q.MilliValue())
	}
	if m.Failed {
		d.Err = fmt.Errorf("%s", m.failure())
	}
	return d
}

// statusReplicas is the scale's status.replicas.
func (c reconcileCase) statusReplicas() int32 {
	if c.StatusReplicas != nil {
		return *c.StatusReplicas
	}
	return c.CurrentReplicas
}

// object is the HorizontalPodAutoscaler in namespace ns, defaulted by the
// API server's own defaulting; it scales the Deployment "target".
func (c reconcileCase) object(ns string) *autoscalingv2.HorizontalPodAutoscaler {
	h := c.HPA.DeepCopy()
	h.Namespace, h.Name = ns, hpaName
	if h.Spec.ScaleTargetRef.Name == "" {
		h.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: targetName}
	}
	autoscalingapiv2.SetObjectDefaults_HorizontalPodAutoscaler(h)
	return h
}

// scale is the target's /scale in namespace ns.
func (c reconcileCase) scale(ns string) *autoscalingv1.Scale {
	s := &autoscalingv1.Scale{
		Spec:   autoscalingv1.ScaleSpec{Replicas: c.CurrentReplicas},
		Status: autoscalingv1.ScaleStatus{Replicas: c.statusReplicas(), Selector: podLabelKey + "=" + podLabelValue},
	}
	s.Namespace, s.Name = ns, targetName
	return s
}

// ours runs tidal's Reconcile on the case at now, as its controller does,
// with a successful PUT of /scale when it rescales.
func (c reconcileCase) ours(cfg Config, now time.Time) *firstReconcile {
	h := c.object(testNamespace)
	data := make([]MetricData, len(c.Metrics))
	for i, m := range c.Metrics {
		data[i] = m.data()
	}
	d := Reconcile(cfg, ReconcileInput{
		Spec:     DefaultSpec(h.Spec),
		History:  c.History,
		Snapshot: Snapshot{Now: now, SpecReplicas: c.CurrentReplicas, StatusReplicas: c.statusReplicas(), Pods: c.Pods},
		Data:     data,
	})
	return &firstReconcile{Status: d.Status(h.Status, c.CurrentReplicas, now, nil), Rescaled: d.Rescale, To: d.DesiredReplicas}
}

// diff lists how two outcomes differ: the rescale, the replica counts,
// lastScaleTime being set, the conditions in order (type, status, reason,
// message) and the current metrics.
func (f *firstReconcile) diff(o *firstReconcile) []string {
	var out []string
	if f.Rescaled != o.Rescaled || f.Rescaled && f.To != o.To {
		out = append(out, fmt.Sprintf("rescale %v to %d, not %v to %d", f.Rescaled, f.To, o.Rescaled, o.To))
	}
	a, b := f.Status, o.Status
	if a.CurrentReplicas != b.CurrentReplicas || a.DesiredReplicas != b.DesiredReplicas {
		out = append(out, fmt.Sprintf("current/desired %d/%d, not %d/%d", a.CurrentReplicas, a.DesiredReplicas, b.CurrentReplicas, b.DesiredReplicas))
	}
	if (a.LastScaleTime == nil) != (b.LastScaleTime == nil) {
		out = append(out, fmt.Sprintf("lastScaleTime %v, not %v", a.LastScaleTime, b.LastScaleTime))
	}
	if ca, cb := conditionList(a.Conditions), conditionList(b.Conditions); ca != cb {
		out = append(out, fmt.Sprintf("conditions\n\t%s\nnot\n\t%s", ca, cb))
	}
	if !equality.Semantic.DeepEqual(a.CurrentMetrics, b.CurrentMetrics) {
		ma, _ := json.Marshal(a.CurrentMetrics)
		mb, _ := json.Marshal(b.CurrentMetrics)
		out = append(out, fmt.Sprintf("currentMetrics %s, not %s", ma, mb))
	}
	return out
}

// conditionList formats conditions without their times. The message of a
// failed metric is left out: it quotes the metrics source's own error,
// which upstream's replica calculator words otherwise than tidal's sources.
func conditionList(cs []autoscalingv2.HorizontalPodAutoscalerCondition) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		msg := c.Message
		if strings.HasPrefix(c.Reason, "FailedGet") && strings.HasSuffix(c.Reason, "Metric") {
			msg = "metric failure"
		}
		parts[i] = fmt.Sprintf("%s=%s %s (%s)", c.Type, c.Status, c.Reason, msg)
	}
	return strings.Join(parts, "\n\t")
}
