package core

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/simulator"
)

func startingTestNode(t *testing.T, snap *simulator.Snapshot, name string, mutate func(*corev1.Node)) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if mutate != nil {
		mutate(n)
	}
	if _, err := snap.AddNode(n); err != nil {
		t.Fatal(err)
	}
}

// The nodes a group's upcoming copies stand for are those the cluster
// state counts as starting, but for nodes on their way out.
func TestStartingNodesLeaveOutNodesBeingRemoved(t *testing.T) {
	snap := simulator.NewSnapshot()
	startingTestNode(t, snap, "g-1", nil)
	startingTestNode(t, snap, "g-2", func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: scaledown.ToBeDeletedTaint, Effect: corev1.TaintEffectNoSchedule}}
	})
	startingTestNode(t, snap, "g-3", func(n *corev1.Node) { n.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} })
	startingTestNode(t, snap, "g-4", nil)
	o := &observation{snapshot: snap}
	got := o.starting(clusterstate.GroupView{Upcoming: 6, Starting: []string{"g-1", "g-2", "g-3", "g-4", "g-gone"}})
	if want := []string{"g-1", "g-4"}; !slices.Equal(got, want) {
		t.Fatalf("starting %v, want %v", got, want)
	}
}

// A pod nominated to a node that can neither take pods nor is coming waits
// for a node like any other; one nominated to a ready or starting node, a
// bound one and one held by a scheduling gate do not.
func TestPodsNominatedToDeadNodesArePending(t *testing.T) {
	snap := simulator.NewSnapshot()
	for _, n := range []string{"ready", "starting", "dead"} {
		startingTestNode(t, snap, n, nil)
	}
	add := func(name, node string, mutate func(*corev1.Pod)) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)},
			Status: corev1.PodStatus{Phase: corev1.PodPending, NominatedNodeName: node}}
		if mutate != nil {
			mutate(p)
		}
		pi, _ := framework.NewPodInfo(p)
		if err := snap.AddPod(pi, node); err != nil {
			t.Fatal(err)
		}
	}
	add("on-ready", "ready", nil)
	add("on-starting", "starting", nil)
	add("on-dead", "dead", nil)
	add("bound-dead", "dead", func(p *corev1.Pod) { p.Spec.NodeName = "dead" })
	add("gated-dead", "dead", func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "x"}} })
	d := &Decider{}
	got := d.stranded(&observation{snapshot: snap}, map[string]bool{"ready": true, "starting": true})
	if len(got) != 1 || got[0].Name != "on-dead" {
		t.Fatalf("stranded %v, want only on-dead", got)
	}
}
