package controller

import (
	"fmt"
	"slices"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	autoscalinglisters "k8s.io/client-go/listers/autoscaling/v2"

	"github.com/tidal-autoscaler/tidal/hpa"
)

// ReasonAmbiguousOwner is the ScalingActive reason and the event reason of
// a PodAutoscaler whose scale target a HorizontalPodAutoscaler also
// targets: two controllers would fight over its replicas, so tidal leaves
// the target alone until one of the two is deleted. (The name follows the
// Kubernetes HPA controller's AmbiguousSelector.)
const ReasonAmbiguousOwner = "AmbiguousOwner"

// OtherAutoscalers lists the autoscalers of another API kind ("Kind/name")
// in namespace whose scale target is ref.
type OtherAutoscalers func(namespace string, ref autoscalingv2.CrossVersionObjectReference) ([]string, error)

// SameTarget reports whether two scale target references name the same
// object: the same kind, API group and name. The version does not matter
// (apps/v1 and apps/v1beta2 name the same Deployment).
func SameTarget(a, b autoscalingv2.CrossVersionObjectReference) bool {
	return a.Kind == b.Kind && a.Name == b.Name && apiGroup(a.APIVersion) == apiGroup(b.APIVersion)
}

// apiGroup is the group of an apiVersion ("" for "v1", the core group). A
// malformed apiVersion is its own group, so it matches only itself.
func apiGroup(apiVersion string) string {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return apiVersion
	}
	return gv.Group
}

// HPAsTargeting returns "HorizontalPodAutoscaler/name" for each of hpas
// whose scale target is ref, sorted. hpas are of one namespace.
func HPAsTargeting(hpas []*autoscalingv2.HorizontalPodAutoscaler, ref autoscalingv2.CrossVersionObjectReference) []string {
	var out []string
	for _, h := range hpas {
		if SameTarget(h.Spec.ScaleTargetRef, ref) {
			out = append(out, "HorizontalPodAutoscaler/"+h.Name)
		}
	}
	slices.Sort(out)
	return out
}

// HPAOwners is OtherAutoscalers over an informer's HorizontalPodAutoscalers,
// for a pod loop that drives PodAutoscalers.
func HPAOwners(lister autoscalinglisters.HorizontalPodAutoscalerLister) OtherAutoscalers {
	return func(namespace string, ref autoscalingv2.CrossVersionObjectReference) ([]string, error) {
		hpas, err := lister.HorizontalPodAutoscalers(namespace).List(labels.Everything())
		if err != nil {
			return nil, fmt.Errorf("list HorizontalPodAutoscalers in %s: %w", namespace, err)
		}
		return HPAsTargeting(hpas, ref), nil
	}
}

// ambiguousOwner reports whether another autoscaler claims the target; if
// so it sets ScalingActive=False with reason AmbiguousOwner and records a
// warning. An error (the others could not be listed) also holds the target:
// nothing scales on a question left open.
func (s *syncRun) ambiguousOwner(ref autoscalingv2.CrossVersionObjectReference) (bool, error) {
	if s.c.cfg.OtherAutoscalers == nil {
		return false, nil
	}
	others, err := s.c.cfg.OtherAutoscalers(s.a.Namespace, ref)
	if err != nil {
		return true, fmt.Errorf("look for other autoscalers of %s: %w", s.ref, err)
	}
	if len(others) == 0 {
		return false, nil
	}
	msg := fmt.Sprintf("%s is also the scale target of %s; tidal does not scale it while another autoscaler does "+
		"(delete one of them)", s.ref, strings.Join(others, ", "))
	s.errLabel = errorSpec
	s.event(corev1.EventTypeWarning, ReasonAmbiguousOwner, msg)
	s.setConditions(hpa.Condition{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionFalse,
		Reason: ReasonAmbiguousOwner, Message: msg})
	return true, nil
}
