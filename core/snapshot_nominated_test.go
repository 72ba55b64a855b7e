package core

import (
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tidal-autoscaler/tidal/simulator/simtest"
)

// A pending pod nominated to a node counts on that node (as Cluster
// Autoscaler counts it), moves with its nomination, stays when it binds
// there, and leaves when the nomination is cleared; nominated to a node the
// cluster does not have, it counts nowhere and is pending.
func TestSnapshotCountsNominatedPodsOnTheirNode(t *testing.T) {
	l := newLiveSnapshot()
	l.recordNode(statusNode("n1"), false)
	l.recordNode(statusNode("n2"), false)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-x", Namespace: "default", UID: types.UID("web-x")},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
			Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}}
	simtest.Admit(p, rand.New(rand.NewPCG(1, 1)))
	podsOn := func(node string) int {
		t.Helper()
		snap, err := l.Sync()
		if err != nil {
			t.Fatal(err)
		}
		return len(snap.NodeInfo(node).Pods)
	}
	step := func(what string, edit func(*corev1.Pod), n1, n2 int) {
		t.Helper()
		p = p.DeepCopy()
		edit(p)
		l.recordPod(p, false)
		if a, b := podsOn("n1"), podsOn("n2"); a != n1 || b != n2 {
			t.Fatalf("%s: pods on n1 %d, n2 %d; want %d, %d", what, a, b, n1, n2)
		}
	}
	step("pending", func(*corev1.Pod) {}, 0, 0)
	step("nominated to n1", func(p *corev1.Pod) { p.Status.NominatedNodeName = "n1" }, 1, 0)
	step("nominated to n2", func(p *corev1.Pod) { p.Status.NominatedNodeName = "n2" }, 0, 1)
	step("cleared", func(p *corev1.Pod) { p.Status.NominatedNodeName = "" }, 0, 0)
	step("nominated to n1 again", func(p *corev1.Pod) { p.Status.NominatedNodeName = "n1" }, 1, 0)
	step("bound to n1", func(p *corev1.Pod) { p.Spec.NodeName = "n1" }, 1, 0)
	snap, _ := l.Sync()
	if got := snap.NodeInfo("n1").Pods[0].GetPod().Spec.NodeName; got != "n1" {
		t.Errorf("the snapshot keeps the pod as it was before binding (nodeName %q)", got)
	}

	gone := p.DeepCopy()
	gone.UID, gone.Name, gone.Spec.NodeName, gone.Status.NominatedNodeName = "web-y", "web-y", "", "gone"
	l.recordPod(gone, false)
	if a, b := podsOn("n1"), podsOn("n2"); a != 1 || b != 0 {
		t.Errorf("a pod nominated to a missing node counts on n1 %d, n2 %d (want 1, 0)", a, b)
	}
	if !nominatedToMissing(gone, snap) || nominatedToMissing(p, snap) {
		t.Errorf("nominated to a missing node: pending %v (want true); bound: %v (want false)",
			nominatedToMissing(gone, snap), nominatedToMissing(p, snap))
	}
}

// A pod whose nomination is cleared after the snapshot was synced is not
// yet waiting: the snapshot still counts it on its node, and counting it
// pending too would ask a node for it a second time. Once the snapshot has
// synced the change, it waits.
func TestPodClearedAfterTheSyncWaitsFromTheNextSync(t *testing.T) {
	l := newLiveSnapshot()
	l.recordNode(statusNode("n1"), false)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-x", Namespace: "default", UID: types.UID("web-x")},
		Status: corev1.PodStatus{Phase: corev1.PodPending, NominatedNodeName: "n1", Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}}
	simtest.Admit(p, rand.New(rand.NewPCG(1, 1)))
	l.recordPod(p, false)
	ob := &observer{live: l}
	snap, err := l.Sync()
	if err != nil {
		t.Fatal(err)
	}
	cleared := p.DeepCopy()
	cleared.Status.NominatedNodeName = ""
	if ob.waits(p, snap) || ob.waits(cleared, snap) {
		t.Fatal("a pod the synced snapshot counts on n1 waits for a node")
	}
	l.recordPod(cleared, false)
	if snap, err = l.Sync(); err != nil {
		t.Fatal(err)
	}
	if !ob.waits(cleared, snap) || len(snap.NodeInfo("n1").Pods) != 0 {
		t.Fatalf("after the sync: waits %v, %d pods on n1; want waiting and none", ob.waits(cleared, snap), len(snap.NodeInfo("n1").Pods))
	}
}
