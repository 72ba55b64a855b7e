package core

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
)

// aheadLoop is a node loop with only what provision-ahead and headroom
// read: listers over plain indexers, a fake clock and a fake recorder.
type aheadLoop struct {
	*NodeLoop
	pods, deployments, statefulSets cache.Indexer
	clock                           *clocktesting.FakeClock
	recorder                        *record.FakeRecorder
}

func newAheadLoop(ahead bool) *aheadLoop {
	idx := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	a := &aheadLoop{pods: idx(), deployments: idx(), statefulSets: idx(),
		clock: clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0)), recorder: record.NewFakeRecorder(100)}
	opts := Options{ProvisionAhead: ahead, ExpendablePodsPriorityCutoff: -10}
	d := &Decider{ahead: newExpectations(), events: newEventDeduper(a.recorder, a.clock, false)}
	a.NodeLoop = &NodeLoop{opts: opts, clock: a.clock, urgent: make(chan struct{}, 1), d: d}
	d.observer = &observer{clock: a.clock, opts: opts, ahead: d.ahead, events: d.events, pods: corelisters.NewPodLister(a.pods),
		deployments: appslisters.NewDeploymentLister(a.deployments), statefulSets: appslisters.NewStatefulSetLister(a.statefulSets)}
	return a
}

func webWorkload() Workload {
	tmpl := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
	return Workload{Kind: "Deployment", Namespace: "ns", Name: "web", UID: "u1", Template: tmpl,
		Selector: labels.SelectorFromSet(labels.Set{"app": "web"})}
}

func (a *aheadLoop) addPods(n int, mutate func(*corev1.Pod)) {
	for i := range n {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("web-%d-%d", len(a.pods.List()), i),
			Labels: map[string]string{"app": "web"}, UID: types.UID(fmt.Sprintf("p%d-%d", len(a.pods.List()), i))}}
		if mutate != nil {
			mutate(p)
		}
		_ = a.pods.Add(p)
	}
}

var autoscalerRef = &corev1.ObjectReference{Kind: "PodAutoscaler", Namespace: "ns", Name: "web"}

func TestProvisionAheadPicturesOnlyMissingPods(t *testing.T) {
	a := newAheadLoop(true)
	a.addPods(2, nil)
	a.ProvisionAhead(context.Background(), webWorkload(), 8, autoscalerRef)
	select {
	case <-a.urgent:
	default:
		t.Fatal("ProvisionAhead did not ask for an iteration at once")
	}
	got := a.d.observer.aheadPods(a.clock.Now())
	if len(got) != 6 {
		t.Fatalf("8 replicas wanted, 2 exist: pictured %d pods, want 6", len(got))
	}
	for _, p := range got {
		if !pictured(p) || p.Labels["app"] != "web" || p.Namespace != "ns" || p.Annotations[AheadOfAnnotation] != "PodAutoscaler ns/web" {
			t.Fatalf("pictured pod %s: labels %v annotations %v", p.Name, p.Labels, p.Annotations)
		}
		if a.d.ahead.source(p) != autoscalerRef {
			t.Fatalf("events about %s would not reach the autoscaler", p.Name)
		}
	}
	// Four of the six appear: only two are still pictured, never counted twice.
	a.addPods(4, nil)
	if got := a.d.observer.aheadPods(a.clock.Now()); len(got) != 2 {
		t.Fatalf("6 of 8 exist: pictured %d, want 2", len(got))
	}
	// Pods going away do not count as existing.
	a.addPods(1, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })
	if got := a.d.observer.aheadPods(a.clock.Now()); len(got) != 2 {
		t.Fatalf("a failed pod counted as a replica: pictured %d, want 2", len(got))
	}
	a.addPods(2, nil)
	if got := a.d.observer.aheadPods(a.clock.Now()); len(got) != 0 {
		t.Fatalf("every replica exists: pictured %d, want none", len(got))
	}
	// Satisfied once, an expectation pictures nothing even if pods go.
	_ = a.pods.Delete(a.pods.List()[0])
	if got := a.d.observer.aheadPods(a.clock.Now()); len(got) != 0 {
		t.Fatalf("a satisfied expectation pictured %d pods again", len(got))
	}
	// Real pods of the workload still lead events to the autoscaler until
	// the expectation expires.
	real := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Labels: map[string]string{"app": "web"}}}
	if a.d.ahead.source(real) != autoscalerRef {
		t.Fatal("a real pod of the workload does not lead to the autoscaler")
	}
	a.clock.Step(aheadTTL + time.Second)
	a.d.observer.aheadPods(a.clock.Now())
	if a.d.ahead.source(real) != nil {
		t.Fatal("an expired expectation still claims the workload's pods")
	}
}

// TestProvisionAheadKeepsYoungPodsPictured: a real pod younger than
// --new-pod-scale-up-delay is left out of the decision, so its pictured
// replica keeps counting; otherwise the capacity asked for it lapses until
// the pod is old enough and a second scale-up follows the first.
func TestProvisionAheadKeepsYoungPodsPictured(t *testing.T) {
	a := newAheadLoop(true)
	a.d.observer.opts.NewPodScaleUpDelay = 10 * time.Second
	a.ProvisionAhead(context.Background(), webWorkload(), 6, autoscalerRef)
	a.addPods(5, nil)
	a.addPods(1, func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(a.clock.Now().Add(-2 * time.Second)) })
	if got := a.d.observer.aheadPods(a.clock.Now()); len(got) != 1 {
		t.Fatalf("5 old pods and 1 younger than the delay: pictured %d, want 1 (the young pod's replica)", len(got))
	}
	a.clock.Step(10 * time.Second)
	if got := a.d.observer.aheadPods(a.clock.Now()); len(got) != 0 {
		t.Fatalf("every pod is old enough: pictured %d, want none", len(got))
	}
}

func TestProvisionAheadExpiresAndForgets(t *testing.T) {
	a := newAheadLoop(true)
	a.ProvisionAhead(context.Background(), webWorkload(), 3, autoscalerRef)
	a.clock.Step(aheadTTL + time.Second)
	if got := a.d.observer.aheadPods(a.clock.Now()); len(got) != 0 {
		t.Fatalf("pods that never appeared within %v are still pictured: %d", aheadTTL, len(got))
	}
	a.ProvisionAhead(context.Background(), webWorkload(), 3, autoscalerRef)
	a.ForgetAhead(webWorkload())
	if got := a.d.observer.aheadPods(a.clock.Now()); len(got) != 0 {
		t.Fatalf("after a scale-down the expectation pictured %d pods", len(got))
	}
}

func TestProvisionAheadDisabled(t *testing.T) {
	a := newAheadLoop(false)
	a.ProvisionAhead(context.Background(), webWorkload(), 8, autoscalerRef)
	if got := a.d.observer.aheadPods(a.clock.Now()); len(got) != 0 {
		t.Fatalf("--provision-ahead=false pictured %d pods", len(got))
	}
	select {
	case <-a.urgent:
		t.Fatal("--provision-ahead=false still hurried an iteration")
	default:
	}
}

func TestHeadroomPods(t *testing.T) {
	a := newAheadLoop(true)
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}
	dep := func(name, value string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name),
			Annotations: map[string]string{HeadroomAnnotation: value}}, Spec: appsv1.DeploymentSpec{Selector: sel, Template: tmpl}}
	}
	_ = a.deployments.Add(dep("web", "3"))
	_ = a.deployments.Add(dep("bad", "many"))
	_ = a.deployments.Add(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "plain"}})
	_ = a.statefulSets.Add(&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db",
		Annotations: map[string]string{HeadroomAnnotation: "1"}}, Spec: appsv1.StatefulSetSpec{Selector: sel, Template: tmpl}})
	got := a.d.observer.headroomPods()
	per := map[string]int{}
	for _, p := range got {
		per[p.Annotations[HeadroomOfAnnotation]]++
		if *p.Spec.Priority != -10 || p.Annotations["cluster-autoscaler.kubernetes.io/safe-to-evict"] != "true" {
			t.Fatalf("headroom pod %s: priority %d, annotations %v", p.Name, *p.Spec.Priority, p.Annotations)
		}
	}
	if per["Deployment ns/web"] != 3 || per["StatefulSet ns/db"] != 1 || len(got) != 4 {
		t.Fatalf("headroom pods per workload %v, want 3 for web and 1 for db", per)
	}
	select {
	case e := <-a.recorder.Events:
		if !strings.Contains(e, "InvalidHeadroom") || !strings.Contains(e, `"many"`) {
			t.Fatalf("event %q, want InvalidHeadroom naming the bad value", e)
		}
	default:
		t.Fatal("no warning for headroom-replicas=many")
	}
}

func TestCapacityFor(t *testing.T) {
	l := &NodeLoop{publisher: &publisher{}}
	pod := func(uid string, mutate func(*corev1.Pod)) *corev1.Pod {
		p := unschedulablePod()
		p.UID = types.UID(uid)
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	bound := func(p *corev1.Pod) { p.Spec.NodeName = "n1"; p.Status.Conditions = nil }
	fresh := func(p *corev1.Pod) { p.Status.Conditions = nil }
	late := func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(time.Unix(2000, 0)) }
	pods := []*corev1.Pod{pod("a", nil), pod("b", nil), pod("c", fresh), pod("d", nil), pod("e", bound), pod("f", fresh), pod("g", late)}
	if n, msg := l.CapacityFor("ns", pods); n != 4 || !strings.Contains(msg, "4 the node loop is looking at") {
		t.Fatalf("before any iteration: %d waiting (%q), want the 4 unschedulable pods, not judged yet", n, msg)
	}
	l.publisher.capacity.Store(&capacityView{
		awaits: map[types.UID]awaited{"a": {"ns", "pool-a"}, "b": {"ns", "pool-a"}, "c": {"ns", "pool-b"}, "e": {"ns", "pool-a"}},
		adding: map[string]int{"pool-a": 2, "pool-b": 1}, at: time.Unix(1000, 0),
	})
	n, msg := l.CapacityFor("ns", pods)
	want := "5 replica(s) wait for nodes: 2 for node group pool-a (adding 2 node(s)), 1 for node group pool-b (adding 1 node(s)), " +
		"1 the node loop is looking at, 1 with no node coming (no node group can run them now, see the tidal-status ConfigMap)"
	if n != 5 || msg != want {
		t.Fatalf("CapacityFor = %d, %q\nwant 5, %q", n, msg, want)
	}
	if n, msg := l.CapacityFor("ns", []*corev1.Pod{pod("e", bound), pod("f", fresh)}); n != 0 || msg != "" {
		t.Fatalf("a bound pod and one the scheduler has not judged yet wait for nothing: got %d %q", n, msg)
	}
}

func TestChangedNamespaces(t *testing.T) {
	v := func(m map[types.UID]awaited) *capacityView { return &capacityView{awaits: m} }
	tests := []struct {
		name     string
		old, cur *capacityView
		want     string
	}{
		{"first view", nil, v(map[types.UID]awaited{"a": {"x", "g"}}), "[x]"},
		{"unchanged", v(map[types.UID]awaited{"a": {"x", "g"}}), v(map[types.UID]awaited{"a": {"x", "g"}}), "[]"},
		{"pod placed", v(map[types.UID]awaited{"a": {"x", "g"}, "b": {"y", "g"}}), v(map[types.UID]awaited{"b": {"y", "g"}}), "[x]"},
		{"other group", v(map[types.UID]awaited{"a": {"x", "g"}}), v(map[types.UID]awaited{"a": {"x", "h"}, "c": {"z", "h"}}), "[x z]"},
	}
	for _, tt := range tests {
		if got := fmt.Sprint(changedNamespaces(tt.old, tt.cur)); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}
