package core

import (
	"maps"
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
	pod := func(name, node, kind, owner string) { addOwnedPod(t, snap, name, node, kind, owner) }
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

// The controllers of a node's pods are kept between iterations while the
// node's pods stay; after every change the answers are those of an
// observer that keeps nothing, and a controller gone from the informers
// is told gone even on a node that did not change.
func TestObserverOwnersFollowChanges(t *testing.T) {
	idx := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	rs, sts := idx(), idx()
	add := func(ix cache.Indexer, obj any) {
		if err := ix.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	add(rs, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}})
	add(rs, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "api"}})
	add(sts, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}})
	newObserver := func() *observer {
		return &observer{replicaSets: appslisters.NewReplicaSetLister(rs), statefulSets: appslisters.NewStatefulSetLister(sts),
			rcs: corelisters.NewReplicationControllerLister(idx()), jobs: batchlisters.NewJobLister(idx())}
	}
	kept := newObserver()
	snap := simulator.NewSnapshot()
	addNode := func(name string) {
		if _, err := snap.AddNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	pods := map[string]*corev1.Pod{}
	addPod := func(name, node, kind, owner string) { pods[name] = addOwnedPod(t, snap, name, node, kind, owner) }
	for _, n := range []string{"a", "b"} {
		addNode(n)
	}
	addPod("web-1", "a", "ReplicaSet", "web")
	addPod("db-0", "b", "StatefulSet", "db")
	candidates := []scaledown.Candidate{{Name: "a"}, {Name: "b"}}
	steps := []struct {
		name   string
		change func()
		want   map[scaledown.OwnerKey]bool
	}{
		{"first look", func() {}, map[scaledown.OwnerKey]bool{
			{Kind: "ReplicaSet", Namespace: "ns", Name: "web"}: true, {Kind: "StatefulSet", Namespace: "ns", Name: "db"}: true}},
		{"a pod of another controller bound on a", func() { addPod("api-1", "a", "ReplicaSet", "api") }, map[scaledown.OwnerKey]bool{
			{Kind: "ReplicaSet", Namespace: "ns", Name: "web"}: true, {Kind: "ReplicaSet", Namespace: "ns", Name: "api"}: true,
			{Kind: "StatefulSet", Namespace: "ns", Name: "db"}: true}},
		{"the StatefulSet deleted, node b unchanged", func() {
			if err := sts.Delete(&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}}); err != nil {
				t.Fatal(err)
			}
		}, map[scaledown.OwnerKey]bool{
			{Kind: "ReplicaSet", Namespace: "ns", Name: "web"}: true, {Kind: "ReplicaSet", Namespace: "ns", Name: "api"}: true,
			{Kind: "StatefulSet", Namespace: "ns", Name: "db"}: false}},
		{"the pods of web gone from a", func() {
			if err := snap.RemovePod(pods["web-1"], "a"); err != nil {
				t.Fatal(err)
			}
		}, map[scaledown.OwnerKey]bool{
			{Kind: "ReplicaSet", Namespace: "ns", Name: "api"}: true, {Kind: "StatefulSet", Namespace: "ns", Name: "db"}: false}},
		{"node b gone and back with a pod of web", func() {
			if err := snap.RemoveNode("b"); err != nil {
				t.Fatal(err)
			}
			addNode("b")
			addPod("web-2", "b", "ReplicaSet", "web")
		}, map[scaledown.OwnerKey]bool{
			{Kind: "ReplicaSet", Namespace: "ns", Name: "api"}: true, {Kind: "ReplicaSet", Namespace: "ns", Name: "web"}: true}},
		{"a changed and reverted: the same pods", func() {
			snap.Fork()
			addPod("tmp-1", "a", "Job", "tmp")
			snap.Revert()
		}, map[scaledown.OwnerKey]bool{
			{Kind: "ReplicaSet", Namespace: "ns", Name: "api"}: true, {Kind: "ReplicaSet", Namespace: "ns", Name: "web"}: true}},
	}
	for _, st := range steps {
		st.change()
		got := kept.owners(snap, candidates, nil).Existing
		fresh := newObserver().owners(snap, candidates, nil).Existing
		if !maps.Equal(got, st.want) || !maps.Equal(fresh, st.want) {
			t.Errorf("%s: owners %v, an observer keeping nothing %v; want %v", st.name, got, fresh, st.want)
		}
	}
}

// addOwnedPod binds to node a pod of namespace ns whose controller is the
// kind's owner.
func addOwnedPod(t *testing.T, snap *simulator.Snapshot, name, node, kind, owner string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
		OwnerReferences: []metav1.OwnerReference{{Kind: kind, Name: owner, Controller: ptr.To(true)}}}, Spec: corev1.PodSpec{NodeName: node}}
	pi, err := framework.NewPodInfo(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.AddPod(pi, node); err != nil {
		t.Fatal(err)
	}
	return p
}
