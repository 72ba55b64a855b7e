package v1alpha1

import (
	"encoding/json"
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// PodAutoscaler scales a workload's replicas on metrics, with the Kubernetes
// HorizontalPodAutoscaler algorithm, driven by tidal instead of the built-in
// controller (which managed clusters do not let you turn off).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=tpa,categories=all;autoscaling
// +kubebuilder:printcolumn:name="Reference",type=string,JSONPath=`.status.reference`
// +kubebuilder:printcolumn:name="Targets",type=string,JSONPath=`.status.targets`
// +kubebuilder:printcolumn:name="MinPods",type=integer,JSONPath=`.spec.minReplicas`
// +kubebuilder:printcolumn:name="MaxPods",type=integer,JSONPath=`.spec.maxReplicas`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.currentReplicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PodAutoscaler struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PodAutoscalerSpec `json:"spec"`
	// +optional
	Status PodAutoscalerStatus `json:"status,omitempty"`

	// Unread lists the quantities decoding left out of Spec and Status
	// because their strings are out of the bounds of CheckQuantity, each
	// as the field's path and what is wrong. The CRD refuses such strings;
	// an object stored before it did may hold them. Not part of the API.
	Unread []string `json:"-"`
	// Invalid lists the other values decoding left out: durations out of
	// the bounds of CheckDuration (left out as if absent), and a spec or
	// status that does not decode at all (left empty), each naming the
	// field and what is wrong. Not part of the API.
	Invalid []string `json:"-"`
}

// UnmarshalJSON decodes a PodAutoscaler with UnmarshalChecked, so that no
// quantity or duration string, whoever wrote it, stalls its reader: the
// typed client, and through it the informer, decode with it. Only metadata
// that does not decode is an error: a spec or status that does not is left
// empty and named in Invalid, so that one such object never fails a list
// or a watch of every PodAutoscaler, and is reported on itself.
func (p *PodAutoscaler) UnmarshalJSON(data []byte) error {
	type plain PodAutoscaler // without this method
	refused, err := UnmarshalChecked(data, (*plain)(p), nil)
	if err != nil {
		*p = PodAutoscaler{}
		return p.unmarshalParts(data)
	}
	p.Unread, p.Invalid = splitRefused(refused)
	return nil
}

// unmarshalParts decodes the metadata, the spec and the status of data
// apart: each of spec and status that does not decode is left empty and
// named in p.Invalid.
func (p *PodAutoscaler) unmarshalParts(data []byte) error {
	var parts struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty"`
		Spec              json.RawMessage `json:"spec"`
		Status            json.RawMessage `json:"status"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &parts); err != nil {
		return err
	}
	p.TypeMeta, p.ObjectMeta = parts.TypeMeta, parts.ObjectMeta
	for _, part := range []struct {
		name string
		raw  json.RawMessage
		into any
	}{{"spec", parts.Spec, &p.Spec}, {"status", parts.Status, &p.Status}} {
		if len(part.raw) == 0 {
			continue
		}
		refused, err := UnmarshalChecked(part.raw, part.into, field.NewPath(part.name))
		if err != nil {
			p.Invalid = append(p.Invalid, fmt.Sprintf("%s: %v (left unread)", part.name, err))
			continue
		}
		unread, invalid := splitRefused(refused)
		p.Unread, p.Invalid = append(p.Unread, unread...), append(p.Invalid, invalid...)
	}
	if len(p.Invalid) == 0 { // not reached: the whole failed, so one part does
		p.Invalid = []string{"the object does not decode"}
	}
	return nil
}

// splitRefused parts the values UnmarshalChecked left out into quantities
// and the others (durations).
func splitRefused(refused field.ErrorList) (quantities, others []string) {
	for _, e := range refused {
		if e.Origin == originDuration {
			others = append(others, e.Error())
		} else {
			quantities = append(quantities, e.Error())
		}
	}
	return quantities, others
}

// PodAutoscalerList is a list of PodAutoscalers.
//
// +kubebuilder:object:root=true
type PodAutoscalerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodAutoscaler `json:"items"`
}

// PodAutoscalerSpec is an autoscaling/v2 HorizontalPodAutoscalerSpec, field
// for field, whose metric entries may also carry dual watermarks. Any valid
// HorizontalPodAutoscaler spec is a valid PodAutoscaler spec with the same
// meaning.
//
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || self.minReplicas <= self.maxReplicas",message="minReplicas must not be greater than maxReplicas"
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || self.minReplicas > 0 || (has(self.metrics) && self.metrics.exists(m, m.type == 'Object' || m.type == 'External'))",message="minReplicas 0 (scale to zero) needs at least one Object or External metric: at zero replicas only those are read to decide when to activate",fieldPath=".minReplicas"
// +kubebuilder:validation:XValidation:rule="!has(self.schedules) || self.schedules.all(s, s.minReplicas <= self.maxReplicas)",message="a schedule's minReplicas must not be greater than maxReplicas",fieldPath=".schedules"
type PodAutoscalerSpec struct {
	// scaleTargetRef points to the target resource to scale (any resource
	// with a /scale subresource: Deployment, StatefulSet, ReplicaSet, ...),
	// whose scale selector picks the pods metrics are collected for.
	ScaleTargetRef autoscalingv2.CrossVersionObjectReference `json:"scaleTargetRef"`

	// minReplicas is the lower limit of the replica count. Defaults to 1,
	// set by the API server as for a HorizontalPodAutoscaler. 0 allows
	// scaling to zero (and back, see MetricSpec.ActivationThreshold); it
	// needs at least one Object or External metric.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// maxReplicas is the upper limit of the replica count.
	// +kubebuilder:validation:Minimum=1
	MaxReplicas int32 `json:"maxReplicas"`

	// metrics are the metrics the replica count follows: the largest count
	// any metric asks for wins. Without metrics, 80% average cpu utilization
	// is used. At most 100 (autoscaling/v2 sets no limit; the schema's
	// rules need one).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	Metrics []MetricSpec `json:"metrics,omitempty"`

	// behavior configures scaling up and down (stabilization windows,
	// policies, tolerances), as in autoscaling/v2.
	// +optional
	Behavior *Behavior `json:"behavior,omitempty"`

	// schedules raise minReplicas during recurring time windows: while a
	// window is open (or within its leadTime before it opens) the lower
	// limit is the highest of minReplicas and the open windows'
	// minReplicas, capped by maxReplicas. A window tidal cannot parse is
	// reported (event InvalidSchedule, condition SchedulesValid) and
	// ignored; the others still apply.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=20
	Schedules []Schedule `json:"schedules,omitempty"`
}

// Schedule is a recurring time window that raises a workload's minimum.
type Schedule struct {
	// name identifies the window in conditions, events and messages;
	// unique in the list.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// start is a five-field cron expression (minute hour day-of-month
	// month day-of-week, as a CronJob's schedule) or a descriptor such as
	// @daily: when each window opens, in timeZone.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Start string `json:"start"`
	// duration is how long each window stays open, a Go duration such as
	// "12h" or "1h30m": at most 8784h (366 days), written in at most 20
	// characters with at most 6 digits before each unit.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=20
	// +kubebuilder:validation:Pattern=`^([0-9]{1,6}([.][0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]{1,6}([.][0-9]+)?(ns|us|ms|s|m|h))+$') || size(self) > 20 || duration(self) <= duration('8784h')",message="must be at most 8784h (366 days)"
	Duration metav1.Duration `json:"duration" maxDuration:"8784h"`
	// timeZone is an IANA time zone name ("Europe/Berlin"); empty is UTC.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TimeZone string `json:"timeZone,omitempty"`
	// minReplicas is the lower limit of the replica count while the
	// window is open. At most maxReplicas.
	// +kubebuilder:validation:Minimum=0
	MinReplicas int32 `json:"minReplicas"`
	// leadTime raises the minimum this long before each window opens, so
	// that replicas (and their nodes) are ready at its start: at most 744h
	// (31 days), written as duration.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=20
	// +kubebuilder:validation:Pattern=`^([0-9]{1,6}([.][0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]{1,6}([.][0-9]+)?(ns|us|ms|s|m|h))+$') || size(self) > 20 || duration(self) <= duration('744h')",message="must be at most 744h (31 days)"
	LeadTime *metav1.Duration `json:"leadTime,omitempty" maxDuration:"744h"`
}

// MetricSpec is an autoscaling/v2 MetricSpec with optional dual watermarks.
//
// An External metric named "prometheus" whose selector has the label
// "query" is read from Prometheus (tidal's --prometheus-url): the label's
// value is a PromQL instant query, and the values of its result are summed.
//
// +kubebuilder:validation:XValidation:rule="self.type != 'Resource' || has(self.resource)",message="resource must be set when type is Resource"
// +kubebuilder:validation:XValidation:rule="self.type != 'ContainerResource' || has(self.containerResource)",message="containerResource must be set when type is ContainerResource"
// +kubebuilder:validation:XValidation:rule="self.type != 'Pods' || has(self.pods)",message="pods must be set when type is Pods"
// +kubebuilder:validation:XValidation:rule="self.type != 'Object' || has(self.object)",message="object must be set when type is Object"
// +kubebuilder:validation:XValidation:rule="self.type != 'External' || has(self.external)",message="external must be set when type is External"
// +kubebuilder:validation:XValidation:rule="self.type in ['ContainerResource', 'External', 'Object', 'Pods', 'Resource']",messageExpression="'Unsupported value: \"' + self.type + '\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"'",fieldPath=".type"
// +kubebuilder:validation:XValidation:rule="self.?resource.?target.?type.orValue('Value') in ['AverageValue', 'Utilization', 'Value']",message="must be either Utilization, Value, or AverageValue",fieldPath=".resource.target.type"
// +kubebuilder:validation:XValidation:rule="self.?resource.?target.?averageUtilization.orValue(1) > 0",message="must be greater than 0",fieldPath=".resource.target.averageUtilization"
// +kubebuilder:validation:XValidation:rule="self.?containerResource.?target.?type.orValue('Value') in ['AverageValue', 'Utilization', 'Value']",message="must be either Utilization, Value, or AverageValue",fieldPath=".containerResource.target.type"
// +kubebuilder:validation:XValidation:rule="self.?containerResource.?target.?averageUtilization.orValue(1) > 0",message="must be greater than 0",fieldPath=".containerResource.target.averageUtilization"
// +kubebuilder:validation:XValidation:rule="self.?pods.?target.?type.orValue('Value') in ['AverageValue', 'Utilization', 'Value']",message="must be either Utilization, Value, or AverageValue",fieldPath=".pods.target.type"
// +kubebuilder:validation:XValidation:rule="self.?pods.?target.?averageUtilization.orValue(1) > 0",message="must be greater than 0",fieldPath=".pods.target.averageUtilization"
// +kubebuilder:validation:XValidation:rule="self.?object.?target.?type.orValue('Value') in ['AverageValue', 'Utilization', 'Value']",message="must be either Utilization, Value, or AverageValue",fieldPath=".object.target.type"
// +kubebuilder:validation:XValidation:rule="self.?object.?target.?averageUtilization.orValue(1) > 0",message="must be greater than 0",fieldPath=".object.target.averageUtilization"
// +kubebuilder:validation:XValidation:rule="self.?external.?target.?type.orValue('Value') in ['AverageValue', 'Utilization', 'Value']",message="must be either Utilization, Value, or AverageValue",fieldPath=".external.target.type"
// +kubebuilder:validation:XValidation:rule="self.?external.?target.?averageUtilization.orValue(1) > 0",message="must be greater than 0",fieldPath=".external.target.averageUtilization"
// +kubebuilder:validation:XValidation:rule="!has(self.activationThreshold) || self.type in ['Object', 'External']",message="activationThreshold applies to Object and External metrics only: at zero replicas no pod reports the others",fieldPath=".activationThreshold"
type MetricSpec struct {
	autoscalingv2.MetricSpec `json:",inline"`

	// watermarks replace this metric's single target with a band: above
	// high the replica count grows in proportion, below low it shrinks in
	// proportion, in between it stays. The values are in the unit of the
	// metric's target (whole percent for Utilization targets).
	// +optional
	Watermarks *Watermarks `json:"watermarks,omitempty"`

	// activationThreshold is, for an Object or External metric of an
	// autoscaler with minReplicas 0, the value above which the workload
	// is active: at zero replicas it goes to one replica as soon as any
	// such metric is above its threshold, and it goes back to zero only
	// when all of them are at or below theirs. Unset: 0. In the unit of
	// the metric's value (the sum of the series for External metrics).
	// As KEDA's activationThreshold.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!string(self).matches('^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]{1,3})?$') || quantity(string(self)).compareTo(quantity('0')) >= 0",message="must not be negative"
	// +kubebuilder:validation:XValidation:rule="!string(self).matches('^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]{1,3})?$') || quantity(string(self)).compareTo(quantity('1P')) <= 0",message="must be at most 1P (10^15): tidal computes in thousandths of the unit in 64-bit integers"
	// +kubebuilder:validation:XIntOrString
	ActivationThreshold *resource.Quantity `json:"activationThreshold,omitempty"`
}

// Watermarks is a metric's dual-watermark band. See the hpa package for the
// exact arithmetic.
//
// +kubebuilder:validation:XValidation:rule="has(self.high) || has(self.low)",message="set high, low or both"
// +kubebuilder:validation:XValidation:rule="!has(self.high) || !has(self.low) || !string(self.high).matches('^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]{1,3})?$') || !string(self.low).matches('^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]{1,3})?$') || quantity(string(self.low)).compareTo(quantity(string(self.high))) <= 0",message="must not be above high",fieldPath=".low"
type Watermarks struct {
	// high is the scale-up watermark: above it the count becomes
	// ceil(current * value / high). Above 0 and at most 1P, written in at
	// most 64 characters.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!string(self).matches('^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]{1,3})?$') || quantity(string(self)).compareTo(quantity('0')) > 0",message="must be greater than 0"
	// +kubebuilder:validation:XValidation:rule="!string(self).matches('^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]{1,3})?$') || quantity(string(self)).compareTo(quantity('1P')) <= 0",message="must be at most 1P (10^15): tidal, like the HPA, computes in thousandths of the unit in 64-bit integers"
	// +kubebuilder:validation:XIntOrString
	High *resource.Quantity `json:"high,omitempty"`
	// low is the scale-down watermark: below it the count becomes
	// floor(current * value / low). Above 0, at most 1P, not above high,
	// written in at most 64 characters.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!string(self).matches('^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]{1,3})?$') || quantity(string(self)).compareTo(quantity('0')) > 0",message="must be greater than 0"
	// +kubebuilder:validation:XValidation:rule="!string(self).matches('^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]{1,3})?$') || quantity(string(self)).compareTo(quantity('1P')) <= 0",message="must be at most 1P (10^15): tidal, like the HPA, computes in thousandths of the unit in 64-bit integers"
	// +kubebuilder:validation:XIntOrString
	Low *resource.Quantity `json:"low,omitempty"`
	// highTolerancePercent widens high: scale up only above
	// high * (1 + t/100). Defaults to 1.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	HighTolerancePercent *int32 `json:"highTolerancePercent,omitempty"`
	// lowTolerancePercent widens low: scale down only below
	// low * (1 - t/100). Defaults to 1.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	LowTolerancePercent *int32 `json:"lowTolerancePercent,omitempty"`
	// maxScaleUpPercent limits one scale-up step to this percentage of the
	// current count (at least one pod): 0 to 1000, that is at most 11 times
	// the count in one step. Unset: no limit.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	MaxScaleUpPercent *int32 `json:"maxScaleUpPercent,omitempty"`
	// maxScaleDownPercent limits one scale-down step to this percentage of
	// the current count (at least one pod).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	MaxScaleDownPercent *int32 `json:"maxScaleDownPercent,omitempty"`
}

// PodAutoscalerStatus is the autoscaling/v2 HorizontalPodAutoscalerStatus,
// field for field, plus tidal's history and two display fields.
type PodAutoscalerStatus struct {
	autoscalingv2.HorizontalPodAutoscalerStatus `json:",inline"`

	// reference is the scale target as Kind/Name, for display.
	// +optional
	Reference string `json:"reference,omitempty"`
	// targets summarises each metric's current value and target, for
	// display ("cpu: 45%/50%, queue: 7/10").
	// +optional
	Targets string `json:"targets,omitempty"`
	// history is the recent recommendations and scale events the
	// stabilization windows and scaling policies look back on. tidal keeps
	// it here so that a restart or a new leader carries on where the last
	// one stopped.
	// +optional
	History *History `json:"history,omitempty"`
}

// HPASpec returns the autoscaling/v2 spec the calculation runs on, and the
// watermarks index-aligned with its metrics (nil when no metric has any).
// The controller converts the watermarks to the hpa package's.
// The result shares memory with s (all but the behavior's structs): treat
// it as read-only.
func (s *PodAutoscalerSpec) HPASpec() (autoscalingv2.HorizontalPodAutoscalerSpec, []*Watermarks) {
	out := autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: s.ScaleTargetRef,
		MinReplicas:    s.MinReplicas,
		MaxReplicas:    s.MaxReplicas,
		Behavior:       s.Behavior.HPA(),
	}
	var marks []*Watermarks
	if len(s.Metrics) > 0 {
		out.Metrics = make([]autoscalingv2.MetricSpec, len(s.Metrics))
	}
	for i := range s.Metrics {
		out.Metrics[i] = s.Metrics[i].MetricSpec
		if w := s.Metrics[i].Watermarks; w != nil {
			if marks == nil {
				marks = make([]*Watermarks, len(s.Metrics))
			}
			marks[i] = w
		}
	}
	return out, marks
}

// ActivationThresholds returns the metrics' activation thresholds,
// index-aligned with Metrics (nil when no metric has one).
func (s *PodAutoscalerSpec) ActivationThresholds() []*resource.Quantity {
	var out []*resource.Quantity
	for i := range s.Metrics {
		if q := s.Metrics[i].ActivationThreshold; q != nil {
			if out == nil {
				out = make([]*resource.Quantity, len(s.Metrics))
			}
			out[i] = q
		}
	}
	return out
}
