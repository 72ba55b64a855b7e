package core

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// TestHasSyncedMeansTheSnapshotIsWhole checks that once HasSynced, the
// loop's snapshot holds every node and pod of the informers' first List.
func TestHasSyncedMeansTheSnapshotIsWhole(t *testing.T) {
	var objs []runtime.Object
	for n := range 50 {
		name := fmt.Sprintf("node-%02d", n)
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
		for p := range 20 {
			pod := fmt.Sprintf("%s-pod-%02d", name, p)
			objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: "default", UID: types.UID(pod)},
				Spec: corev1.PodSpec{NodeName: name}})
		}
	}
	client := fake.NewSimpleClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	ctx, cancel := context.WithCancel(context.Background())
	l, err := NewNodeLoop(ctx, Config{Client: client, Factory: factory, Options: Options{Expander: "random"}})
	if err != nil {
		t.Fatal(err)
	}
	if l.HasSynced() {
		t.Fatal("HasSynced before the informers started")
	}
	factory.Start(ctx.Done())
	defer func() { cancel(); factory.Shutdown() }()
	factory.WaitForCacheSync(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), l.HasSynced) {
		t.Fatal("handlers did not sync")
	}
	snap, err := l.d.live.Sync()
	if err != nil {
		t.Fatal(err)
	}
	pods := 0
	for _, ni := range snap.Infos() {
		pods += len(ni.GetPods())
	}
	if snap.Len() != 50 || pods != 1000 {
		t.Errorf("snapshot after HasSynced: %d nodes, %d pods; want 50 and 1000", snap.Len(), pods)
	}
}
