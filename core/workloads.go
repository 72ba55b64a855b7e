package core

import (
	"context"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// workload is the scale target's pod template and selector, for
// provision-ahead: Deployments, StatefulSets and ReplicaSets, from the
// informers (other /scale resources have no template tidal can read, and
// their new pods are handled when they exist).
func (ob *observer) workload(ns string, ref autoscalingv2.CrossVersionObjectReference) (Workload, bool) {
	out := Workload{Kind: ref.Kind, Namespace: ns, Name: ref.Name}
	var tmpl *corev1.PodTemplateSpec
	var sel *metav1.LabelSelector
	switch ref.Kind {
	case "Deployment":
		d, err := ob.deployments.Deployments(ns).Get(ref.Name)
		if err != nil {
			return out, false
		}
		out.UID, tmpl, sel = d.UID, &d.Spec.Template, d.Spec.Selector
	case "StatefulSet":
		s, err := ob.statefulSets.StatefulSets(ns).Get(ref.Name)
		if err != nil {
			return out, false
		}
		out.UID, tmpl, sel = s.UID, &s.Spec.Template, s.Spec.Selector
	case "ReplicaSet":
		r, err := ob.replicaSets.ReplicaSets(ns).Get(ref.Name)
		if err != nil {
			return out, false
		}
		out.UID, tmpl, sel = r.UID, &r.Spec.Template, r.Spec.Selector
	default:
		return out, false
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return out, false
	}
	out.Template, out.Selector = tmpl, selector
	return out, true
}

// Rescaled is told by the pod loop of a rescale of the target of an
// autoscaler (source) in namespace: a scale-up is provisioned ahead (see
// ProvisionAhead), a scale-down makes the loop forget what it expected of
// the workload.
func (l *NodeLoop) Rescaled(ctx context.Context, namespace string, target autoscalingv2.CrossVersionObjectReference, from, to int32, source *corev1.ObjectReference) {
	w, ok := l.d.observer.workload(namespace, target)
	switch {
	case !ok:
	case to > from:
		l.ProvisionAhead(ctx, w, to, source)
	default:
		l.ForgetAhead(w)
	}
}
