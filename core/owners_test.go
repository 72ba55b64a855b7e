package core

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// The observer looks up the controllers of the candidates' pods, of the
// kinds a drain may move, and hands them to the plan as data.
func TestObserverOwnersOfCandidatesPods(t *testing.T) {
	idx := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	rs := idx()
	if err := rs.Add(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	ob := &observer{replicaSets: appslisters.NewReplicaSetLister(rs), statefulSets: appslisters.NewStatefulSetLister(idx()),
		rcs: corelisters.NewReplicationControllerLister(idx()), jobs: batchlisters.NewJobLister(idx())}
	snap := simulator.NewSnapshot()
	for _, n := range []string{"a", "b"} {
		if _, err := snap.AddNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(name, node, kind, owner string) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
			OwnerReferences: []metav1.OwnerReference{{Kind: kind, Name: owner, Controller: ptr.To(true)}}}, Spec: corev1.PodSpec{NodeName: node}}
		pi, err := framework.NewPodInfo(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := snap.AddPod(pi, node); err != nil {
			t.Fatal(err)
		}
	}
	pod("web-1", "a", "ReplicaSet", "web")
	pod("old-1", "a", "ReplicaSet", "old")
	pod("db-0", "a", "StatefulSet", "db")
	pod("x-1", "a", "CustomSet", "x")
	pod("api-1", "b", "ReplicaSet", "api")
	got := ob.owners(snap, []scaledown.Candidate{{Name: "a"}, {Name: "gone"}}, nil)
	want := map[scaledown.OwnerKey]bool{{Kind: "ReplicaSet", Namespace: "ns", Name: "web"}: true,
		{Kind: "ReplicaSet", Namespace: "ns", Name: "old"}: false, {Kind: "StatefulSet", Namespace: "ns", Name: "db"}: false}
	if len(got.Existing) != len(want) {
		t.Fatalf("owners %v, want %v (node b is no candidate; CustomSet is not looked up)", got.Existing, want)
	}
	for k, v := range want {
		if e, ok := got.Existing[k]; !ok || e != v {
			t.Errorf("%v: exists %v (listed %v), want %v", k, e, ok, v)
		}
	}
	if exists, known := got.Exists("ns", metav1.OwnerReference{Kind: "CustomSet", Name: "x"}); exists || known {
		t.Errorf("a custom controller: exists %v, known %v; want unknown", exists, known)
	}
}
