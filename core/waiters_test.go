package core

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tidal-autoscaler/tidal/core/nominate"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
)

func waiterPods(names ...string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, n := range names {
		out = append(out, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: n, UID: types.UID(n)}})
	}
	return out
}

func names(pods []*corev1.Pod) string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return fmt.Sprint(out)
}

// Pods counted on new nodes wait for them while they are pending, even
// once the plan counts them on the nodes that came, until no group can
// help them or they are no longer pending.
func TestWaitersFollowThePodsCountedOnNewNodes(t *testing.T) {
	w := newWaiters()
	all := waiterPods("a", "b", "c", "d")
	steps := []struct {
		name    string
		pending []*corev1.Pod
		plan    *scaleup.Plan
		// coming are the groups with requested nodes not yet ready.
		coming string
		// want are the pods waiting for g and h.
		wantG, wantH string
	}{
		{"a awaits g's upcoming node, b gets h's new node, d no node", all, &scaleup.Plan{
			Awaiting:  map[types.UID]string{"a": "g"},
			ScaleUps:  []scaleup.ScaleUp{{Group: "h", Pods: all[1:2]}},
			NoScaleUp: []scaleup.NoScaleUp{{Pods: all[3:]}},
		}, "", "[a]", "[b]"},
		{"g's node came: a fits it, the scheduler has yet to place a", all, &scaleup.Plan{FitExisting: 2}, "",
			"[a]", "[b]"},
		{"h backed off: b now waits for g", all, &scaleup.Plan{ScaleUps: []scaleup.ScaleUp{{Group: "g", Pods: all[1:2]}}}, "",
			"[a b]", "[]"},
		{"a's next decision finds no room while g's nodes still come: a keeps waiting", all,
			&scaleup.Plan{NoScaleUp: []scaleup.NoScaleUp{{Pods: all[:1]}}, ScaleUps: []scaleup.ScaleUp{{Group: "g", Pods: all[1:2]}}}, "g",
			"[a b]", "[]"},
		{"no group can help a any more", all, &scaleup.Plan{NoScaleUp: []scaleup.NoScaleUp{{Pods: all[:1]}}}, "",
			"[b]", "[]"},
		{"b placed by the scheduler", all[2:], nil, "", "[]", "[]"},
	}
	for _, s := range steps {
		w.update(s.pending, s.plan, func(group string) bool { return group == s.coming })
		if stillComing := w.stillComing("a", func(group string) bool { return group == s.coming }); stillComing != (s.coming != "") {
			t.Fatalf("%s: a told it waits for nodes still coming: %v", s.name, stillComing)
		}
		if g, h := names(w.waitingFor("g", all)), names(w.waitingFor("h", all)); g != s.wantG || h != s.wantH {
			t.Fatalf("%s: waiting for g %s, for h %s; want %s and %s", s.name, g, h, s.wantG, s.wantH)
		}
	}
}

func unschedulable(p *corev1.Pod, message string) *corev1.Pod {
	p = p.DeepCopy()
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: message}}
	return p
}

func readyNode(taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

// The loop decides again when a node becomes ready while pods wait for new
// nodes, and when the scheduler reports such a pod unschedulable again
// after a node became ready: once per pod and ready node, never for the
// scheduler's reports while the nodes are still coming.
func TestLoopWakesWhenNewNodesCameAndPodsStillWait(t *testing.T) {
	l := &NodeLoop{trigger: make(chan struct{}, 1), d: &Decider{waiters: newWaiters()}}
	pods, nodes := l.unschedulableHandler(), l.readyHandler()
	pod := waiterPods("a")[0]
	const startup = "startup-taint.cluster-autoscaler.kubernetes.io/setup"
	notReady := readyNode()
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	steps := []struct {
		name  string
		event func()
		wake  bool
	}{
		{"a pod becomes unschedulable", func() { pods.OnUpdate(pod, unschedulable(pod, "0/3 nodes are available")) }, true},
		{"planned for a new node", func() {
			l.d.waiters.update([]*corev1.Pod{pod}, &scaleup.Plan{Awaiting: map[types.UID]string{"a": "g"}}, nil)
		}, false},
		{"the scheduler tries it again while the node is coming", func() {
			pods.OnUpdate(unschedulable(pod, "0/3 nodes are available"), unschedulable(pod, "0/4 nodes are available"))
		}, false},
		{"the node registers, not ready", func() { nodes.OnAdd(notReady, false) }, false},
		{"it reports Ready with a startup taint", func() {
			nodes.OnUpdate(notReady, readyNode(corev1.Taint{Key: startup, Effect: corev1.TaintEffectNoSchedule}))
		}, false},
		{"the startup taint comes off", func() {
			nodes.OnUpdate(readyNode(corev1.Taint{Key: startup, Effect: corev1.TaintEffectNoSchedule}), readyNode())
		}, true},
		{"the scheduler found no room for the pod there", func() {
			pods.OnUpdate(unschedulable(pod, "0/4 nodes are available"), unschedulable(pod, "0/4 nodes are available: 4 Insufficient cpu"))
		}, true},
		{"and says so again", func() {
			pods.OnUpdate(unschedulable(pod, "0/4 nodes are available: 4 Insufficient cpu"), unschedulable(pod, "0/4 nodes are available: 3 Insufficient cpu"))
		}, false},
		{"a status update that leaves the condition as it was", func() {
			pods.OnUpdate(unschedulable(pod, "x"), unschedulable(pod, "x"))
		}, false},
		{"the pod runs: nothing waits", func() { l.d.waiters.update(nil, nil, nil) }, false},
		{"another node becomes ready", func() { nodes.OnAdd(readyNode(), false) }, false},
	}
	for _, s := range steps {
		s.event()
		if woke := triggered(l); woke != s.wake {
			t.Fatalf("%s: woke %v, want %v", s.name, woke, s.wake)
		}
	}
}

// With nominations on, the loop decides again when a node registers, not
// yet ready, while pods wait for new nodes (so that their nominations are
// there before the scheduler can place them), and not when none waits.
func TestLoopWakesWhenANodeRegistersWhilePodsWait(t *testing.T) {
	l := &NodeLoop{opts: Options{NominatePlannedPods: true}, trigger: make(chan struct{}, 1), d: &Decider{waiters: newWaiters()}}
	nodes := l.readyHandler()
	notReady := readyNode()
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	if nodes.OnAdd(notReady, false); triggered(l) {
		t.Fatal("woke for a node registering while no pod waits")
	}
	l.d.waiters.update(waiterPods("a"), &scaleup.Plan{Awaiting: map[types.UID]string{"a": "g"}}, nil)
	if nodes.OnAdd(notReady, false); !triggered(l) {
		t.Fatal("did not wake for a node registering while a pod waits for new nodes")
	}
}

// The loop decides again when a node goes that tidal nominated pods to,
// and not for another node.
func TestLoopWakesWhenANominatedNodeGoes(t *testing.T) {
	l := &NodeLoop{trigger: make(chan struct{}, 1), d: &Decider{waiters: newWaiters()}}
	l.d.nominatedTo.set(nominate.State{"a": {Namespace: "ns", Name: "a", Node: "n1"}})
	nodes := l.readyHandler()
	for _, tc := range []struct {
		node string
		wake bool
	}{{"n2", false}, {"n1", true}} {
		nodes.OnDelete(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: tc.node}})
		if woke := triggered(l); woke != tc.wake {
			t.Fatalf("node %s deleted: woke %v, want %v", tc.node, woke, tc.wake)
		}
	}
}

// The loop decides again when an unschedulable pod loses the nomination
// tidal gave it, and queues it to be set again at once, and does neither
// when it loses another's.
func TestLoopWakesWhenTidalsNominationIsCleared(t *testing.T) {
	l := &NodeLoop{trigger: make(chan struct{}, 1), restores: make(chan restoreRequest, 2), d: &Decider{waiters: newWaiters()}}
	l.d.nominatedTo.set(nominate.State{"a": {Namespace: "ns", Name: "a", Node: "n1"}})
	pods := l.unschedulableHandler()
	for _, tc := range []struct {
		node string
		wake bool
	}{{"n2", false}, {"n1", true}} {
		nominated := unschedulable(waiterPods("a")[0], "0/3 nodes are available")
		nominated.Status.NominatedNodeName = tc.node
		pods.OnUpdate(nominated, unschedulable(waiterPods("a")[0], "0/3 nodes are available"))
		if woke := triggered(l); woke != tc.wake {
			t.Fatalf("nomination to %s cleared: woke %v, want %v", tc.node, woke, tc.wake)
		}
		if queued := len(l.restores) == 1; queued != tc.wake {
			t.Fatalf("nomination to %s cleared: queued to be set again %v, want %v", tc.node, queued, tc.wake)
		}
	}
}

// triggered takes the loop's trigger, reporting whether there was one.
func triggered(l *NodeLoop) bool {
	select {
	case <-l.trigger:
		return true
	default:
		return false
	}
}

// The loop decides again when a pod tidal nominated is bound to another
// node than its nomination's (the node planned for it may be left with
// nothing while it starts), and not when it binds where nominated or when
// tidal did not nominate it.
func TestLoopWakesWhenANominatedPodBindsElsewhere(t *testing.T) {
	l := &NodeLoop{trigger: make(chan struct{}, 1), restores: make(chan restoreRequest, 2), d: &Decider{waiters: newWaiters()}}
	l.d.nominatedTo.set(nominate.State{"a": {Namespace: "ns", Name: "a", Node: "n1"}})
	pods := l.unschedulableHandler()
	for _, tc := range []struct {
		pod, node string
		wake      bool
	}{{"a", "n1", false}, {"b", "n2", false}, {"a", "n2", true}} {
		pending := unschedulable(waiterPods(tc.pod)[0], "0/3 nodes are available")
		bound := pending.DeepCopy()
		bound.Spec.NodeName = tc.node
		pods.OnUpdate(pending, bound)
		if woke := triggered(l); woke != tc.wake {
			t.Fatalf("pod %s bound to %s: woke %v, want %v", tc.pod, tc.node, woke, tc.wake)
		}
	}
}
