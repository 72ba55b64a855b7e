package factorylisters

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// A new object the plugins read moves the version; a resync does not.
func TestVersionCountsChangesNotResyncs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	l, err := New(factory)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	if v := l.Version(); v != 0 {
		t.Fatalf("version %d before any object, want 0", v)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", ResourceVersion: "1"}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true,
		func(context.Context) (bool, error) { return l.Version() > 0, nil }); err != nil {
		t.Fatalf("version %d after a namespace was created: %v", l.Version(), err)
	}
	before := l.Version()
	l.updated(ns, ns.DeepCopy())
	if v := l.Version(); v != before {
		t.Fatalf("a resync moved the version from %d to %d", before, v)
	}
	changed := ns.DeepCopy()
	changed.ResourceVersion = "2"
	l.updated(ns, changed)
	if v := l.Version(); v != before+1 {
		t.Fatalf("an update moved the version from %d to %d, want %d", before, v, before+1)
	}
}
