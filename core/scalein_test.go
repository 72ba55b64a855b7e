package core

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/core/scalein"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// The scale-in view: candidates kept only by their pods (or their
// utilization) are removable, with the pods a drain would move; candidates
// kept by a blocking pod, and nodes of no group, are not; utilization is
// the plan's where it has one.
func TestPublishScaleIn(t *testing.T) {
	snap := simulator.NewSnapshot()
	for _, name := range []string{"n1", "n2", "n3"} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}}}
		if _, err := snap.AddNode(n); err != nil {
			t.Fatal(err)
		}
	}
	// The informer's pods, which the view reads when asked.
	informed := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	pod := func(name, node, ownerKind string) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name),
			OwnerReferences: []metav1.OwnerReference{{Kind: ownerKind, Name: "o", Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}
		pi, err := framework.NewPodInfo(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := snap.AddPod(pi, node); err != nil {
			t.Fatal(err)
		}
		if err := informed.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	pod("web-1", "n1", "ReplicaSet")
	pod("ds-1", "n1", "DaemonSet")
	pod("web-2", "n2", "ReplicaSet")
	pod("web-3", "n3", "ReplicaSet")
	checker, err := simulator.NewChecker(context.Background(), snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := &NodeLoop{d: &Decider{scaleIn: &scaleIns{pods: corelisters.NewPodLister(informed)}}}
	o := &observation{now: time.Unix(1_800_000_000, 0), groupOfNode: map[string]string{"n1": "g", "n2": "g", "n3": ""}}
	for _, name := range []string{"n1", "n2", "n3"} {
		o.nodes = append(o.nodes, snap.NodeInfo(name).Node())
	}
	plan := &scaledown.Plan{Unremovable: []scaledown.Unremovable{
		{Node: "n1", Reason: scaledown.NoPlaceToMovePods, Utilization: 0.4},
		{Node: "n2", Reason: scaledown.BlockedByPod, Utilization: 0.3},
	}}
	if nodes, _ := l.ScaleInNodes(); nodes != nil {
		t.Fatalf("a view before any plan: %v", nodes)
	}
	l.d.scaleIn.publish(o, plan, []scaledown.Candidate{{Name: "n1", Group: "g"}, {Name: "n2", Group: "g"}}, checker.Snapshot(), scaledown.Ignored{})
	nodes, at := l.ScaleInNodes()
	want := []scalein.Node{
		{Name: "n1", Group: "g", Utilization: 0.4, Removable: true, Pods: []types.UID{"web-1"}},
		{Name: "n2", Group: "g", Utilization: 0.3},
		{Name: "n3", Utilization: 0.25},
	}
	if diff := cmp.Diff(want, nodes); diff != "" || !at.Equal(o.now) {
		t.Errorf("view at %v (want %v) (-want +got):\n%s", at, o.now, diff)
	}
	// A scale-in removed web-1 before the next plan: n1 holds nothing to
	// move any more, and the next scale-in may take it for emptied.
	if err := informed.Delete(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1"}}); err != nil {
		t.Fatal(err)
	}
	if nodes, _ := l.ScaleInNodes(); len(nodes[0].Pods) != 0 {
		t.Errorf("n1 still lists %v after its pod was deleted", nodes[0].Pods)
	}
	// A pod of the same name recreated is another pod, and one being
	// deleted is gone already.
	for _, p := range []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", UID: "web-1-again"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", UID: "web-1", DeletionTimestamp: ptr.To(metav1.Now())}},
	} {
		if err := informed.Update(p); err != nil {
			t.Fatal(err)
		}
		if nodes, _ := l.ScaleInNodes(); len(nodes[0].Pods) != 0 {
			t.Errorf("n1 lists %v for pod %s (uid %s, deleting %v)", nodes[0].Pods, p.Name, p.UID, p.DeletionTimestamp != nil)
		}
	}
}
