package app

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

// TestInformersTrim checks that the loops' informers cache trimmed
// objects: what tidal reads stays, managed fields and foreign annotations
// go; and that replicas share their containers.
func TestInformersTrim(t *testing.T) {
	meta := metav1.ObjectMeta{
		Name: "web-1", Namespace: "default",
		Annotations: map[string]string{
			scaledown.SafeToEvictAnnotation:     "false",
			"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z",
		},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate}},
	}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1"}}, SecurityContext: &corev1.PodSecurityContext{}}
	replica := metav1.ObjectMeta{Name: "web-2", Namespace: "default"}
	client := fake.NewSimpleClientset(&corev1.Pod{ObjectMeta: meta, Spec: spec}, &corev1.Pod{ObjectMeta: replica, Spec: *spec.DeepCopy()})
	f := NewInformerFactory(client)
	lister := f.Core().V1().Pods().Lister()
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx.Done())
	defer func() { cancel(); f.Shutdown() }()
	f.WaitForCacheSync(ctx.Done())
	p, err := lister.Pods("default").Get("web-1")
	if err != nil {
		t.Fatal(err)
	}
	if p.ManagedFields != nil || len(p.Annotations) != 1 || p.Annotations[scaledown.SafeToEvictAnnotation] != "false" {
		t.Errorf("cached pod has managed fields %v and annotations %v; want none and only %s",
			p.ManagedFields, p.Annotations, scaledown.SafeToEvictAnnotation)
	}
	q, err := lister.Pods("default").Get("web-2")
	if err != nil {
		t.Fatal(err)
	}
	if &p.Spec.Containers[0] != &q.Spec.Containers[0] || p.Spec.SecurityContext != q.Spec.SecurityContext {
		t.Error("replicas web-1 and web-2 do not share their containers and spec")
	}
}
