package core

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	ktesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	testclock "k8s.io/utils/clock/testing"

	"github.com/tidal-autoscaler/tidal/core/act"
	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/nominate"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
	"github.com/tidal-autoscaler/tidal/core/telemetry"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// The decider nominates a pod that waited for a scale-up of group g to the
// ready node of g its decision placed it on, and no other pod (one that
// never waited; one placed on a node of another group); when the node goes,
// it withdraws the nomination.
func TestDeciderNominatesWaitersToTheirGroupsNodes(t *testing.T) {
	ctx := context.Background()
	mk := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)},
			Status: corev1.PodStatus{Phase: corev1.PodPending}}
	}
	a, b, c := mk("a"), mk("b"), mk("c")
	client := fake.NewClientset(a, b, c)
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range []*corev1.Pod{a, b, c} {
		if err := indexer.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	clock := testclock.NewFakeClock(time.Unix(1_800_000_000, 0))
	metrics := telemetry.NewMetrics(prometheus.NewRegistry(), false)
	d := &Decider{opts: Options{NominatePlannedPods: true, MaxBulkNominations: 10}, waiters: newWaiters(),
		observer: &observer{pods: corelisters.NewPodLister(indexer)},
		actuator: act.NewLive(act.Deps{Client: client, Clock: clock, Metrics: metrics,
			Events: telemetry.NewEvents(record.NewFakeRecorder(10), clock, false, nil)})}
	d.waiters.update([]*corev1.Pod{a, c}, &scaleup.Plan{Awaiting: map[types.UID]string{"a": "g", "c": "g"}}, nil)
	// The scheduler may clear a nomination the moment it is written: the
	// handler that wakes the loop for it must know the node by then.
	knownWhileWriting := map[string]bool{}
	client.PrependReactor("patch", "pods", func(ktesting.Action) (bool, runtime.Object, error) {
		knownWhileWriting["n1"] = d.nominatedTo.has("n1")
		return false, nil, nil
	})
	placed := func(p *corev1.Pod, node string) simulator.Placed {
		pi, _ := framework.NewPodInfo(p)
		return simulator.Placed{Info: pi, Node: node}
	}
	o := &observation{groupOfNode: map[string]string{"n1": "g", "other": "h"},
		observed: map[string]clusterstate.NodeObservation{"n1": {Name: "n1", Ready: true}, "other": {Name: "other", Ready: true}}}
	d.nominate(ctx, o, &scaleup.Plan{OnExisting: []simulator.Placed{placed(a, "n1"), placed(b, "n1"), placed(c, "other")}})
	nominated := func(name string) string {
		t.Helper()
		p, err := client.CoreV1().Pods("ns").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p.Status.NominatedNodeName
	}
	if got := [3]string{nominated("a"), nominated("b"), nominated("c")}; got != [3]string{"n1", "", ""} {
		t.Fatalf("nominations of a, b, c = %q, want only a to n1", got)
	}
	if !knownWhileWriting["n1"] {
		t.Error("the nomination to n1 was written before the handlers knew n1: a clearing at once would not wake the loop")
	}

	// The pod is nominated (so pending no more), and its node goes.
	aNominated, _ := client.CoreV1().Pods("ns").Get(ctx, "a", metav1.GetOptions{})
	if err := indexer.Update(aNominated); err != nil {
		t.Fatal(err)
	}
	d.nominate(ctx, &observation{groupOfNode: map[string]string{}, observed: map[string]clusterstate.NodeObservation{}}, nil)
	if got := nominated("a"); got != "" {
		t.Errorf("the nomination to a node gone stands: %q", got)
	}
	if len(d.mem.nominations) != 0 {
		t.Errorf("state after the withdrawal: %v", d.mem.nominations)
	}
}

// The pods whose nomination tidal set was cleared since are handed to the
// decision with the node it named, while that node still starts: not a pod
// still nominated, nor one cleared from a node that does not start (gone,
// or ready: the scheduler tried the pod there), nor one bound; none with
// nominations off.
func TestClearedNominationsNameTheirNode(t *testing.T) {
	pod := func(name, nominated, bound string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)},
			Spec: corev1.PodSpec{NodeName: bound}, Status: corev1.PodStatus{Phase: corev1.PodPending, NominatedNodeName: nominated}}
		return p
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	state := nominate.State{}
	for _, p := range []*corev1.Pod{pod("cleared", "", ""), pod("standing", "n1", ""), pod("gone-node", "", ""), pod("bound", "", "n1")} {
		if err := indexer.Add(p); err != nil {
			t.Fatal(err)
		}
		node := "n1"
		if p.Name == "gone-node" {
			node = "n9" // gone, or ready
		}
		state[p.UID] = nominate.Nomination{Namespace: "ns", Name: p.Name, Node: node}
	}
	state["deleted"] = nominate.Nomination{Namespace: "ns", Name: "deleted", Node: "n1"}
	for _, on := range []bool{true, false} {
		d := &Decider{opts: Options{NominatePlannedPods: on}, observer: &observer{pods: corelisters.NewPodLister(indexer)}}
		d.mem.nominations = state
		got := d.clearedNominations(map[string]bool{"n1": true})
		want := map[types.UID]string{"cleared": "n1"}
		if !on {
			want = map[types.UID]string{}
		}
		if len(got) != len(want) || got["cleared"] != want["cleared"] {
			t.Errorf("nominations on %v: cleared %v, want %v", on, got, want)
		}
	}
}

// A nomination tidal set that the scheduler cleared is set again at once
// while its node still starts, and only then: not once the node can take
// pods (the scheduler tried the pod there), nor when the node is gone, nor
// for a nomination that is not tidal's.
func TestClearedNominationIsSetAgainAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pod      string
		node     string
		starting bool
		want     string
	}{
		{"the node still starts", "a", "n1", true, "n1"},
		{"the node can take pods", "a", "n1", false, ""},
		{"the node is gone", "a", "n9", true, ""},
		{"not tidal's nomination", "b", "n1", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tc.pod, Namespace: "ns", UID: types.UID(tc.pod)},
				Status: corev1.PodStatus{Phase: corev1.PodPending}}
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
			client := fake.NewClientset(pod, node)
			pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			if err := errors.Join(pods.Add(pod), nodes.Add(node)); err != nil {
				t.Fatal(err)
			}
			clock := testclock.NewFakeClock(time.Unix(1_800_000_000, 0))
			d := &Decider{opts: Options{NominatePlannedPods: true}, observer: &observer{pods: corelisters.NewPodLister(pods)},
				nodes: corelisters.NewNodeLister(nodes),
				actuator: act.NewLive(act.Deps{Client: client, Clock: clock, Metrics: telemetry.NewMetrics(prometheus.NewRegistry(), false),
					Events: telemetry.NewEvents(record.NewFakeRecorder(10), clock, false, nil)})}
			d.mem.nominations = nominate.State{"a": {Namespace: "ns", Name: "a", Node: tc.node}}
			d.restoreNomination(ctx, restoreRequest{uid: pod.UID, namespace: "ns", name: tc.pod, node: tc.node},
				func(*corev1.Node) bool { return tc.starting })
			got, err := client.CoreV1().Pods("ns").Get(ctx, tc.pod, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.NominatedNodeName != tc.want {
				t.Fatalf("nominated to %q after the restore, want %q", got.Status.NominatedNodeName, tc.want)
			}
		})
	}
}
