package core

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

func configMapVerbs(c *fake.Clientset) string {
	var verbs []string
	for _, a := range c.Actions() {
		if a.GetResource().Resource == "configmaps" {
			verbs = append(verbs, a.GetVerb())
		}
	}
	return strings.Join(verbs, ",")
}

// The status ConfigMap the installation made is read once and updated from
// then on, keeping its labels and annotations; a conflict makes tidal read
// it again and retry; a missing one is created.
func TestStatusWriterUpdatesTheInstalledConfigMap(t *testing.T) {
	ctx := context.Background()
	clock := clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))
	installed := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "tidal-status", Namespace: "kube-system",
		Labels: map[string]string{"app.kubernetes.io/name": "tidal"}, Annotations: map[string]string{"owner": "platform"}}}
	client := fake.NewClientset(installed)
	w := newStatusWriter(client, Options{WriteStatusConfigMap: true, Namespace: "kube-system", StatusConfigMapName: "tidal-status"}, clock)

	if err := w.write(ctx, Status{ClusterWide: ClusterWideStatus{Health: HealthStatus{Status: "Healthy"}}}); err != nil {
		t.Fatal(err)
	}
	clock.Step(2 * time.Minute)
	if err := w.write(ctx, Status{ClusterWide: ClusterWideStatus{Health: HealthStatus{Status: "Unhealthy"}}}); err != nil {
		t.Fatal(err)
	}
	if got := configMapVerbs(client); got != "get,update,update" {
		t.Fatalf("requests %s, want one get and then updates", got)
	}
	cm, err := client.CoreV1().ConfigMaps("kube-system").Get(ctx, "tidal-status", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Labels["app.kubernetes.io/name"] != "tidal" || cm.Annotations["owner"] != "platform" || cm.Annotations[StatusUpdatedAnnotation] == "" ||
		!strings.Contains(cm.Data[StatusConfigMapKey], "Unhealthy") {
		t.Fatalf("status ConfigMap %+v: labels, annotations or status lost", cm.ObjectMeta)
	}

	// Someone else wrote it meanwhile: the update conflicts once.
	conflicts := 1
	client.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "tidal-status", nil)
		}
		return false, nil, nil
	})
	client.ClearActions()
	clock.Step(2 * time.Minute)
	if err := w.write(ctx, Status{}); err != nil {
		t.Fatalf("a conflict was not retried: %v", err)
	}
	if got := configMapVerbs(client); got != "update,get,update" {
		t.Fatalf("requests after a conflict %s, want update, get, update", got)
	}

	// A missing one is created.
	empty := fake.NewClientset()
	w = newStatusWriter(empty, Options{WriteStatusConfigMap: true, Namespace: "ns", StatusConfigMapName: "s"}, clock)
	if err := w.write(ctx, Status{}); err != nil {
		t.Fatal(err)
	}
	if got := configMapVerbs(empty); got != "get,create" {
		t.Fatalf("requests %s for a missing ConfigMap, want get, create", got)
	}
}
