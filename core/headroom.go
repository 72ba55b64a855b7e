package core

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
)

// headroomPods pictures, for every Deployment and StatefulSet annotated
// with autoscaling.tidal.dev/headroom-replicas: N, N more pods of its
// template. They have the lowest priority that still triggers scale-ups, so
// real pods are placed first (and take the headroom when they need it);
// scale-down keeps them like other pods, so the headroom is not given back
// and asked for again; when the annotation is lowered or removed, the nodes
// that held the headroom are the first to become unneeded.
func (ob *observer) headroomPods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, w := range ob.headroomWorkloads() {
		out = append(out, ob.pictureHeadroom(w)...)
	}
	return out
}

// headroomWorkload is a workload carrying the headroom annotation.
type headroomWorkload struct {
	kind     string
	meta     *metav1.ObjectMeta
	selector *metav1.LabelSelector
	template *corev1.PodTemplateSpec
}

func (ob *observer) headroomWorkloads() []headroomWorkload {
	var out []headroomWorkload
	if deps, err := ob.deployments.List(labels.Everything()); err == nil {
		for _, d := range deps {
			if _, ok := d.Annotations[HeadroomAnnotation]; ok {
				out = append(out, headroomWorkload{"Deployment", &d.ObjectMeta, d.Spec.Selector, &d.Spec.Template})
			}
		}
	}
	if sets, err := ob.statefulSets.List(labels.Everything()); err == nil {
		for _, s := range sets {
			if _, ok := s.Annotations[HeadroomAnnotation]; ok {
				out = append(out, headroomWorkload{"StatefulSet", &s.ObjectMeta, s.Spec.Selector, &s.Spec.Template})
			}
		}
	}
	return out
}

// pictureHeadroom pictures one workload's headroom pods, or warns on the
// workload when its annotation is not a replica count.
func (ob *observer) pictureHeadroom(h headroomWorkload) []*corev1.Pod {
	ref := &corev1.ObjectReference{APIVersion: "apps/v1", Kind: h.kind, Namespace: h.meta.Namespace, Name: h.meta.Name, UID: h.meta.UID}
	n, err := scaleup.ParseHeadroom(h.meta.Annotations[HeadroomAnnotation])
	if err != nil {
		ob.events.OnRef(ref, corev1.EventTypeWarning, "InvalidHeadroom", "%v", err)
		return nil
	}
	if _, err := metav1.LabelSelectorAsSelector(h.selector); err != nil {
		ob.events.OnRef(ref, corev1.EventTypeWarning, "InvalidHeadroom", "no headroom kept: selector: %v", err)
		return nil
	}
	w := scaleup.Pictured{Kind: h.kind, Namespace: h.meta.Namespace, Name: h.meta.Name, Template: h.template}
	src := fmt.Sprintf("%s %s/%s", h.kind, h.meta.Namespace, h.meta.Name)
	ob.ahead.mu.Lock()
	ob.ahead.sources[src] = ref
	ob.ahead.mu.Unlock()
	priority := ob.opts.ExpendablePodsPriorityCutoff
	out := scaleup.PicturePods(w, "headroom", n, HeadroomOfAnnotation, src, &priority)
	for _, p := range out {
		p.Annotations[scaledown.SafeToEvictAnnotation] = "true"
	}
	return out
}
