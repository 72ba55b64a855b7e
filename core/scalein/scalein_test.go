package scalein

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

var created = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

// storedPod is a ReplicaSet's pod as the API server stores it once the
// scheduler bound it and the kubelet runs it: admission defaults, owner
// reference, status conditions.
func storedPod(name, node string, annotations map[string]string) *corev1.Pod {
	running := node != ""
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "shop", UID: types.UID("uid-" + name), ResourceVersion: "4711",
			GenerateName: "web-7d4b9c-", Labels: map[string]string{"app": "web", "pod-template-hash": "7d4b9c"},
			Annotations:       annotations,
			CreationTimestamp: metav1.NewTime(created),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d4b9c",
				UID: "rs-uid", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{Name: "web", Image: "nginx", ImagePullPolicy: corev1.PullAlways,
				Resources:                corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}},
				TerminationMessagePath:   corev1.TerminationMessagePathDefault,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile}},
			RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst,
			TerminationGracePeriodSeconds: ptr.To[int64](30), SchedulerName: corev1.DefaultSchedulerName,
			ServiceAccountName: "default", SecurityContext: &corev1.PodSecurityContext{},
			Priority: ptr.To[int32](0), EnableServiceLinks: ptr.To(true), PreemptionPolicy: ptr.To(corev1.PreemptLowerPriority),
			Tolerations: []corev1.Toleration{
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable},
	}
	if !running {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
		return p
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.HostIP, p.Status.PodIP = "10.0.0.1", "10.244.1.7"
	for _, t := range []corev1.PodConditionType{"PodReadyToStartContainers", corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(created)})
	}
	return p
}

func notReady(p *corev1.Pod) *corev1.Pod {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady || p.Status.Conditions[i].Type == corev1.ContainersReady {
			p.Status.Conditions[i].Status = corev1.ConditionFalse
		}
	}
	return p
}

func terminating(p *corev1.Pod) *corev1.Pod {
	p.DeletionTimestamp = ptr.To(metav1.NewTime(created.Add(time.Hour)))
	p.DeletionGracePeriodSeconds = ptr.To[int64](30)
	return p
}

func owned(cost string) map[string]string {
	return map[string]string{CostAnnotation: cost, OwnedAnnotation: "true"}
}

func node(name string, util float64, removable bool, pods ...string) Node {
	n := Node{Name: name, Group: "general", Utilization: util, Removable: removable}
	for _, p := range pods {
		n.Pods = append(n.Pods, types.UID("uid-"+p))
	}
	return n
}

func cost(rank int) string { return fmt.Sprint(VictimCost + rank) }

var keep = fmt.Sprint(KeepCost)

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name   string
		nodes  []Node
		pods   []*corev1.Pod
		remove int
		want   []Patch
	}{{
		name:   "the lowest-utilization removable node's replicas go; those on a node that cannot go are kept",
		nodes:  []Node{node("a", 0.2, true, "w1", "w2", "other"), node("b", 0.5, true, "w3", "other2"), node("c", 0.1, false)},
		pods:   []*corev1.Pod{storedPod("w1", "a", nil), storedPod("w2", "a", nil), storedPod("w3", "b", nil), storedPod("w4", "c", nil)},
		remove: 2,
		want:   []Patch{{"w1", cost(0)}, {"w2", cost(1)}, {"w4", keep}},
	}, {
		name:   "a node the scale-in empties goes before an emptier node it does not",
		nodes:  []Node{node("a", 0.1, true, "w1", "other"), node("b", 0.3, true, "w2")},
		pods:   []*corev1.Pod{storedPod("w1", "a", nil), storedPod("w2", "b", nil)},
		remove: 1,
		want:   []Patch{{"w2", cost(0)}},
	}, {
		name:  "nodes emptied outright as far as the count allows, then the emptiest",
		nodes: []Node{node("a", 0.1, true, "w1", "w2", "w3"), node("b", 0.3, true, "w4"), node("c", 0.2, true, "w5", "x")},
		pods: []*corev1.Pod{storedPod("w1", "a", nil), storedPod("w2", "a", nil), storedPod("w3", "a", nil),
			storedPod("w4", "b", nil), storedPod("w5", "c", nil)},
		remove: 2,
		want:   []Patch{{"w4", cost(0)}, {"w1", cost(1)}},
	}, {
		name:  "unscheduled and unready replicas go first and count",
		nodes: []Node{node("a", 0.1, true, "w1"), node("b", 0.6, true, "w2", "w3")},
		pods: []*corev1.Pod{storedPod("w1", "a", nil), notReady(storedPod("w2", "b", nil)), storedPod("w3", "b", nil),
			storedPod("w9", "", nil)},
		remove: 2,
		want:   []Patch{{"w9", cost(0)}, {"w2", cost(1)}},
	}, {
		name:  "a cost the user set is left alone and does not take a victim's place",
		nodes: []Node{node("a", 0.1, true, "w1", "w2"), node("b", 0.2, true, "w3"), node("c", 0.9, false)},
		pods: []*corev1.Pod{storedPod("w1", "a", map[string]string{CostAnnotation: "100"}), storedPod("w2", "a", nil),
			storedPod("w3", "b", nil), storedPod("w4", "c", map[string]string{CostAnnotation: "-5"})},
		remove: 1,
		want:   []Patch{{"w3", cost(0)}},
	}, {
		name:  "tidal's old costs come off replicas that stay; unchanged ones are not written",
		nodes: []Node{node("a", 0.1, true, "w1"), node("b", 0.2, true, "w2"), node("c", 0.9, false)},
		pods: []*corev1.Pod{storedPod("w1", "a", owned(cost(0))), storedPod("w2", "b", owned(cost(0))),
			storedPod("w3", "c", owned(keep))},
		remove: 1,
		want:   []Patch{{"w2", ""}},
	}, {
		name:  "terminating replicas are not counted; replicas on nodes the view lacks are neither kept nor preferred",
		nodes: []Node{node("a", 0.1, false), node("b", 0.4, true, "w2", "other")},
		pods: []*corev1.Pod{terminating(storedPod("w1", "b", nil)), storedPod("w2", "b", nil), storedPod("w3", "new", nil),
			storedPod("w4", "a", nil)},
		remove: 1,
		want:   []Patch{{"w2", cost(0)}, {"w4", keep}},
	}, {
		name:   "more to remove than removable replicas: the rest by node, emptiest first",
		nodes:  []Node{node("a", 0.1, true, "w1"), node("b", 0.9, false), node("c", 0.2, false)},
		pods:   []*corev1.Pod{storedPod("w1", "a", nil), storedPod("w2", "b", nil), storedPod("w3", "c", nil)},
		remove: 2,
		want:   []Patch{{"w1", cost(0)}, {"w3", cost(1)}, {"w2", keep}},
	}, {
		name:   "every replica goes (to zero): no choice, nothing written",
		nodes:  []Node{node("a", 0.1, true, "w1"), node("b", 0.2, false)},
		pods:   []*corev1.Pod{storedPod("w1", "a", nil), storedPod("w2", "b", nil)},
		remove: 2,
	}, {
		name:   "nothing to remove: nothing written",
		nodes:  []Node{node("a", 0.1, true, "w1")},
		pods:   []*corev1.Pod{storedPod("w1", "a", owned(cost(0)))},
		remove: 0,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range 20 {
				nodes, pods := slices.Clone(tc.nodes), slices.Clone(tc.pods)
				if i > 0 {
					// As a lister returns them: in any order.
					rng.Shuffle(len(nodes), func(a, b int) { nodes[a], nodes[b] = nodes[b], nodes[a] })
					rng.Shuffle(len(pods), func(a, b int) { pods[a], pods[b] = pods[b], pods[a] })
				}
				got := Decide(nodes, Replicas(pods), tc.remove)
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Fatalf("order %d: patches (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

func TestMergePatch(t *testing.T) {
	for _, tc := range []struct {
		p    Patch
		rv   string
		want string
	}{
		{Patch{"w1", "-1000000"}, "4711", `{"metadata":{"annotations":{"autoscaling.tidal.dev/deletion-cost-set":"true","controller.kubernetes.io/pod-deletion-cost":"-1000000"},"resourceVersion":"4711"}}`},
		{Patch{"w1", ""}, "4711", `{"metadata":{"annotations":{"autoscaling.tidal.dev/deletion-cost-set":null,"controller.kubernetes.io/pod-deletion-cost":null},"resourceVersion":"4711"}}`},
		{Patch{"w1", "1000000"}, "", `{"metadata":{"annotations":{"autoscaling.tidal.dev/deletion-cost-set":"true","controller.kubernetes.io/pod-deletion-cost":"1000000"}}}`},
	} {
		got, err := MergePatch(tc.p, tc.rv)
		if err != nil || string(got) != tc.want {
			t.Errorf("MergePatch(%v, %q) = %s, %v; want %s", tc.p, tc.rv, got, err, tc.want)
		}
	}
}

func TestReplicasReadsPhaseReadinessAndMarks(t *testing.T) {
	pending := storedPod("p", "a", nil)
	pending.Status.Phase = corev1.PodPending
	done := storedPod("d", "a", nil)
	done.Status.Phase = corev1.PodSucceeded
	got := Replicas([]*corev1.Pod{storedPod("r", "a", owned("7")), notReady(storedPod("n", "a", nil)), pending, done,
		storedPod("u", "", map[string]string{CostAnnotation: "3"})})
	want := []Replica{
		{Name: "r", UID: "uid-r", Node: "a", Cost: "7", Owned: true},
		{Name: "n", UID: "uid-n", Node: "a", Early: true},
		{Name: "p", UID: "uid-p", Node: "a", Early: true},
		{Name: "u", UID: "uid-u", Early: true, Cost: "3"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replicas (-want +got):\n%s", diff)
	}
}

func TestChoosesByCost(t *testing.T) {
	for kind, want := range map[string]bool{
		"Deployment": true, "ReplicaSet": true,
		"StatefulSet": false, "ReplicationController": false, "deployment": false, "": false, "Rollout": false,
	} {
		if got := ChoosesByCost(kind); got != want {
			t.Errorf("ChoosesByCost(%q) = %v, want %v", kind, got, want)
		}
	}
}
