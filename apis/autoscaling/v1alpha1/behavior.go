package v1alpha1

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Behavior is autoscaling/v2's HorizontalPodAutoscalerBehavior, field for
// field, with the bounds the API server checks for HorizontalPodAutoscalers
// written into the schema, so that a PodAutoscaler is refused with the same
// messages.
type Behavior struct {
	// scaleUp configures scaling up. Unset: at most 4 pods or double the
	// count per 15 seconds, whichever is more, with no stabilization.
	// +optional
	ScaleUp *ScalingRules `json:"scaleUp,omitempty"`
	// scaleDown configures scaling down. Unset: any number of pods per 15
	// seconds, after the --hpa-downscale-stabilization window (5 minutes by
	// default).
	// +optional
	ScaleDown *ScalingRules `json:"scaleDown,omitempty"`
}

// ScalingRules configures one direction of scaling: how far back
// recommendations are looked at, which changes the policies allow, and the
// tolerance.
//
// +kubebuilder:validation:XValidation:rule="!has(self.policies) || size(self.policies) > 0",message="must specify at least one Policy",fieldPath=".policies",reason=FieldValueRequired
type ScalingRules struct {
	// stabilizationWindowSeconds is how many seconds of past
	// recommendations are considered (the highest for scaling down, the
	// lowest for scaling up): 0 to 3600.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self >= 0",message="must be greater than or equal to zero"
	// +kubebuilder:validation:XValidation:rule="self <= 3600",message="must be less than or equal to 3600"
	StabilizationWindowSeconds *int32 `json:"stabilizationWindowSeconds,omitempty"`
	// selectPolicy picks among the policies: Max (the largest change, the
	// default), Min (the smallest) or Disabled (no scaling this way).
	// +optional
	// +kubebuilder:validation:Enum=Disabled;Max;Min
	SelectPolicy *autoscalingv2.ScalingPolicySelect `json:"selectPolicy,omitempty"`
	// policies are the changes allowed per period. Unset: the defaults of
	// scaleUp and scaleDown above.
	// +listType=atomic
	// +optional
	Policies []ScalingPolicy `json:"policies,omitempty"`
	// tolerance is the ratio of current to desired metric value under
	// which no scaling happens this way (0.05 for 5%), not negative and
	// written in at most 64 characters. Unset: the --hpa-tolerance flag.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!string(self).matches('^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]{1,3})?$') || quantity(string(self)).compareTo(quantity('0')) >= 0",message="must be greater than or equal to 0"
	// +kubebuilder:validation:XIntOrString
	Tolerance *resource.Quantity `json:"tolerance,omitempty"`
}

// ScalingPolicy allows a change of at most value pods (type Pods) or value
// percent of the current count (type Percent) within periodSeconds.
type ScalingPolicy struct {
	// type is Pods or Percent.
	// +kubebuilder:validation:Enum=Percent;Pods
	Type autoscalingv2.HPAScalingPolicyType `json:"type"`
	// value is the change allowed, above zero.
	// +kubebuilder:validation:XValidation:rule="self > 0",message="must be greater than zero"
	Value int32 `json:"value"`
	// periodSeconds is the window the change is counted over: 1 to 1800.
	// +kubebuilder:validation:XValidation:rule="self > 0",message="must be greater than zero"
	// +kubebuilder:validation:XValidation:rule="self <= 1800",message="must be less than or equal to 1800"
	PeriodSeconds int32 `json:"periodSeconds"`
}

// HPA returns b as autoscaling/v2's type (nil for nil). Quantities are
// shared with b.
func (b *Behavior) HPA() *autoscalingv2.HorizontalPodAutoscalerBehavior {
	if b == nil {
		return nil
	}
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: b.ScaleUp.hpa(), ScaleDown: b.ScaleDown.hpa()}
}

func (r *ScalingRules) hpa() *autoscalingv2.HPAScalingRules {
	if r == nil {
		return nil
	}
	out := &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: r.StabilizationWindowSeconds,
		SelectPolicy: r.SelectPolicy, Tolerance: r.Tolerance}
	if r.Policies != nil {
		out.Policies = make([]autoscalingv2.HPAScalingPolicy, len(r.Policies))
		for i, p := range r.Policies {
			out.Policies[i] = autoscalingv2.HPAScalingPolicy(p)
		}
	}
	return out
}

// BehaviorFromHPA returns autoscaling/v2's behavior as a PodAutoscaler's
// (nil for nil). Quantities are shared with b.
func BehaviorFromHPA(b *autoscalingv2.HorizontalPodAutoscalerBehavior) *Behavior {
	if b == nil {
		return nil
	}
	return &Behavior{ScaleUp: rulesFromHPA(b.ScaleUp), ScaleDown: rulesFromHPA(b.ScaleDown)}
}

func rulesFromHPA(r *autoscalingv2.HPAScalingRules) *ScalingRules {
	if r == nil {
		return nil
	}
	out := &ScalingRules{StabilizationWindowSeconds: r.StabilizationWindowSeconds, SelectPolicy: r.SelectPolicy, Tolerance: r.Tolerance}
	if r.Policies != nil {
		out.Policies = make([]ScalingPolicy, len(r.Policies))
		for i, p := range r.Policies {
			out.Policies[i] = ScalingPolicy(p)
		}
	}
	return out
}
