package core

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

// headroomPods pictures, for every Deployment annotated with
// autoscaling.tidal.dev/headroom-replicas: N, N more pods of its template.
// They have the lowest priority that still triggers scale-ups, so real pods
// are placed first (and take the headroom when they need it); scale-down
// keeps them like other pods, so the headroom is not given back and asked
// for again; when the annotation is lowered or removed, the nodes that held
// the headroom are the first to become unneeded.
func (l *NodeLoop) headroomPods() []*corev1.Pod {
	deps, err := l.deployments.List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*corev1.Pod
	priority := l.opts.ExpendablePodsPriorityCutoff
	for _, d := range deps {
		raw, ok := d.Annotations[HeadroomAnnotation]
		if !ok {
			continue
		}
		ref := &corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: d.Namespace, Name: d.Name, UID: d.UID}
		n, err := strconv.Atoi(raw)
		if err != nil || n < 0 || n > 1000 {
			l.events.onRef(ref, corev1.EventTypeWarning, "InvalidHeadroom",
				"annotation %s=%q: want a whole number of replicas from 0 to 1000", HeadroomAnnotation, raw)
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil {
			continue
		}
		w := Workload{Kind: "Deployment", Namespace: d.Namespace, Name: d.Name, UID: d.UID, Template: &d.Spec.Template, Selector: sel}
		src := fmt.Sprintf("Deployment %s/%s", d.Namespace, d.Name)
		l.ahead.mu.Lock()
		l.ahead.sources[src] = ref
		l.ahead.mu.Unlock()
		for i := 0; i < n; i++ {
			p := picturePod(w, "headroom", i, HeadroomOfAnnotation, src, &priority)
			p.Annotations[scaledown.SafeToEvictAnnotation] = "true"
			out = append(out, p)
		}
	}
	return out
}
