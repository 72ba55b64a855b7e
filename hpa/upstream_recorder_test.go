package hpa

import (
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	core "k8s.io/client-go/testing"
)

// TestRecorderKeepsOnlyTheFirstReconcile: upstream's controller resyncs,
// so an autoscaler is reconciled again after its first status update; a
// /scale write of that later reconcile (a recommendation may have left its
// window meanwhile) is not the first reconcile's decision.
func TestRecorderKeepsOnlyTheFirstReconcile(t *testing.T) {
	const ns = "c0"
	r := newUpstreamRecorder(1)
	r.scales[ns] = &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: targetName, Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 19}}
	scaleGVR := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	hpaGVR := autoscalingv2.SchemeGroupVersion.WithResource("horizontalpodautoscalers")
	reconcile := func(to int32) {
		if _, _, err := r.getScale(core.NewGetSubresourceAction(scaleGVR, ns, "scale", targetName)); err != nil {
			t.Fatal(err)
		}
		if to != 0 {
			s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: targetName, Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: to}}
			r.updateScale(core.NewUpdateSubresourceAction(scaleGVR, "scale", ns, s))
		}
		h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "h", Namespace: ns}}
		r.updateStatus(core.NewUpdateSubresourceAction(hpaGVR, "status", ns, h))
	}
	reconcile(0)  // the first reconcile holds
	reconcile(11) // a later one rescales
	f := r.done[ns]
	if f == nil || f.Rescaled {
		t.Fatalf("first reconcile recorded as %+v, want one that held", f)
	}
}
