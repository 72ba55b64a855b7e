package app

import (
	"context"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	appslisters "k8s.io/client-go/listers/apps/v1"

	"github.com/tidal-autoscaler/tidal/core"
	"github.com/tidal-autoscaler/tidal/hpa/controller"
)

// workloads finds the pod template of a scale target, for provision-ahead:
// Deployments, StatefulSets and ReplicaSets (other /scale resources have no
// template tidal can read, and their new pods are handled when they exist).
type workloads struct {
	deployments  appslisters.DeploymentLister
	statefulSets appslisters.StatefulSetLister
	replicaSets  appslisters.ReplicaSetLister
}

func newWorkloads(f informers.SharedInformerFactory) *workloads {
	return &workloads{
		deployments:  f.Apps().V1().Deployments().Lister(),
		statefulSets: f.Apps().V1().StatefulSets().Lister(),
		replicaSets:  f.Apps().V1().ReplicaSets().Lister(),
	}
}

func (w *workloads) resolve(ns string, ref autoscalingv2.CrossVersionObjectReference) (core.Workload, bool) {
	out := core.Workload{Kind: ref.Kind, Namespace: ns, Name: ref.Name}
	var tmpl *corev1.PodTemplateSpec
	var sel *metav1.LabelSelector
	switch ref.Kind {
	case "Deployment":
		d, err := w.deployments.Deployments(ns).Get(ref.Name)
		if err != nil {
			return out, false
		}
		out.UID, tmpl, sel = d.UID, &d.Spec.Template, d.Spec.Selector
	case "StatefulSet":
		s, err := w.statefulSets.StatefulSets(ns).Get(ref.Name)
		if err != nil {
			return out, false
		}
		out.UID, tmpl, sel = s.UID, &s.Spec.Template, s.Spec.Selector
	case "ReplicaSet":
		r, err := w.replicaSets.ReplicaSets(ns).Get(ref.Name)
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

// provisionAhead tells the node loop of a scale-up the pod loop made.
// A scale-down makes the node loop forget what it expected of the workload.
func (env *term) provisionAhead(ctx context.Context, r controller.Rescale) {
	if env.workloads == nil {
		return
	}
	w, ok := env.workloads.resolve(r.Namespace, r.Target)
	switch {
	case !ok:
	case r.To > r.From:
		env.nodeLoop.ProvisionAhead(ctx, w, r.To, r.Autoscaler)
	default:
		env.nodeLoop.ForgetAhead(w)
	}
}
